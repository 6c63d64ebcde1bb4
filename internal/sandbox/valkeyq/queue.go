package valkeyq

import (
	"github.com/quavon/quavon/internal/sandbox"

	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/valkey-io/valkey-go"
)

// Queue defaults.
const (
	// DefaultStreamMaxLen bounds the job stream; entries are acknowledged on
	// read, so only the most recent ones matter.
	DefaultStreamMaxLen = 10_000
	// ResultTTL is how long an unclaimed result stays in Valkey.
	ResultTTL = sandbox.MaxJobTTL
	// resultGrace is added to a job's own time budget when the worker waits.
	resultGrace = 30 * time.Second
)

// Queue errors.
var (
	ErrResultTimeout  = errors.New("no result before the deadline")
	ErrResultMismatch = errors.New("result is for another job")
	ErrNoJob          = errors.New("no job within the block time")
)

// Queue is the worker's side: it enqueues signed jobs and waits for signed
// results.
type Queue struct {
	client valkey.Client
	names  Names
	keys   *sandbox.KeyRing
	now    func() time.Time
}

// NewQueue returns the worker side of pool names.
func NewQueue(client valkey.Client, names Names, keys *sandbox.KeyRing) *Queue {
	return &Queue{client: client, names: names, keys: keys, now: time.Now}
}

// Enqueue signs job and appends it to the pool's stream.
func (q *Queue) Enqueue(ctx context.Context, job *sandbox.SandboxJob) error {
	env, err := sandbox.SignJob(q.keys, job)
	if err != nil {
		return err
	}
	return q.EnqueueSigned(ctx, env)
}

// EnqueueSigned appends an already signed envelope. Tests use it to send
// what a forger would.
func (q *Queue) EnqueueSigned(ctx context.Context, envelope []byte) error {
	cmd := q.client.B().Xadd().Key(q.names.Jobs()).Maxlen().Almost().Threshold(fmt.Sprint(DefaultStreamMaxLen)).
		Id("*").FieldValue().FieldValue("job", valkey.BinaryString(envelope)).Build()
	if err := q.client.Do(ctx, cmd).Error(); err != nil {
		return fmt.Errorf("Queue.Enqueue: %w", err)
	}
	return nil
}

// AwaitResult blocks until the signed result of jobID arrives or deadline
// passes, then verifies it. A job whose runner died ends here with
// ErrResultTimeout; it is never run again.
func (q *Queue) AwaitResult(ctx context.Context, jobID string, deadline time.Time) (*sandbox.SandboxResult, error) {
	key := q.names.Result(jobID)
	for {
		left := deadline.Sub(q.now())
		if left <= 0 {
			return nil, fmt.Errorf("Queue.AwaitResult %s: %w", jobID, ErrResultTimeout)
		}
		// BLPOP takes seconds; wake at least every 5 s to honour ctx.
		wait := min(left, 5*time.Second)
		arr, err := q.client.Do(ctx, q.client.B().Blpop().Key(key).Timeout(wait.Seconds()).Build()).AsStrSlice()
		if valkey.IsValkeyNil(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("Queue.AwaitResult %s: %w", jobID, err)
		}
		if len(arr) != 2 {
			return nil, fmt.Errorf("Queue.AwaitResult %s: unexpected BLPOP reply", jobID)
		}
		res, err := sandbox.OpenResult(q.keys, []byte(arr[1]))
		if err != nil {
			return nil, fmt.Errorf("Queue.AwaitResult %s: %w", jobID, err)
		}
		if res.JobID != jobID {
			return nil, fmt.Errorf("Queue.AwaitResult %s: %w (%s)", jobID, ErrResultMismatch, res.JobID)
		}
		return res, nil
	}
}

// Run enqueues job and waits for its result until the job's notAfter plus
// its wall clock and a grace period.
func (q *Queue) Run(ctx context.Context, job *sandbox.SandboxJob) (*sandbox.SandboxResult, error) {
	if err := q.Enqueue(ctx, job); err != nil {
		return nil, err
	}
	deadline := job.NotAfter.Add(time.Duration(job.Limits.WallClockSeconds)*time.Second + resultGrace)
	return q.AwaitResult(ctx, job.ID, deadline)
}

// Delivery is one job entry as read from the stream, not yet verified.
type Delivery struct {
	StreamID string
	Envelope []byte
}

// Consumer is the runner's side of the stream.
type Consumer struct {
	client   valkey.Client
	names    Names
	consumer string
	block    time.Duration
}

// NewConsumer returns a consumer named consumer (the runner id) that blocks
// up to block for each read.
func NewConsumer(client valkey.Client, names Names, consumer string, block time.Duration) (*Consumer, error) {
	if !sandbox.ValidRunnerID(consumer) {
		return nil, fmt.Errorf("NewConsumer: runner id %q: want 1-64 of [A-Za-z0-9._-]", consumer)
	}
	if block <= 0 {
		block = 5 * time.Second
	}
	return &Consumer{client: client, names: names, consumer: consumer, block: block}, nil
}

// EnsureGroup creates the stream and the runners' consumer group if missing.
// A new group starts at the beginning of the stream, so jobs enqueued before
// the first runner started are still delivered.
func (c *Consumer) EnsureGroup(ctx context.Context) error {
	err := c.client.Do(ctx, c.client.B().XgroupCreate().Key(c.names.Jobs()).Group(ConsumerGroup).Id("0").Mkstream().Build()).Error()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("Consumer.EnsureGroup: %w", err)
	}
	return nil
}

// Next reads one new job and acknowledges it at once, before anything
// else: a job is delivered at most once, and a runner never claims another
// runner's pending entries. It returns ErrNoJob when none arrived within the
// block time.
func (c *Consumer) Next(ctx context.Context) (Delivery, error) {
	cmd := c.client.B().Xreadgroup().Group(ConsumerGroup, c.consumer).Count(1).
		Block(c.block.Milliseconds()).Streams().Key(c.names.Jobs()).Id(">").Build()
	streams, err := c.client.Do(ctx, cmd).AsXRead()
	if valkey.IsValkeyNil(err) {
		return Delivery{}, ErrNoJob
	}
	if err != nil {
		return Delivery{}, fmt.Errorf("Consumer.Next: %w", err)
	}
	entries := streams[c.names.Jobs()]
	if len(entries) == 0 {
		return Delivery{}, ErrNoJob
	}
	e := entries[0]
	ack := c.client.B().Xack().Key(c.names.Jobs()).Group(ConsumerGroup).Id(e.ID).Build()
	if err := c.client.Do(ctx, ack).Error(); err != nil {
		return Delivery{}, fmt.Errorf("Consumer.Next: ack %s: %w", e.ID, err)
	}
	return Delivery{StreamID: e.ID, Envelope: []byte(e.FieldValues["job"])}, nil
}

// Publish pushes a signed result for jobID and sets its TTL in one
// transaction.
func (c *Consumer) Publish(ctx context.Context, jobID string, envelope []byte) error {
	if !sandbox.ValidJobID(jobID) {
		return fmt.Errorf("Consumer.Publish: invalid job id")
	}
	key := c.names.Result(jobID)
	for _, r := range c.client.DoMulti(ctx,
		c.client.B().Multi().Build(),
		c.client.B().Rpush().Key(key).Element(valkey.BinaryString(envelope)).Build(),
		c.client.B().Pexpire().Key(key).Milliseconds(ResultTTL.Milliseconds()).Build(),
		c.client.B().Exec().Build(),
	) {
		if err := r.Error(); err != nil {
			return fmt.Errorf("Consumer.Publish %s: %w", jobID, err)
		}
	}
	return nil
}
