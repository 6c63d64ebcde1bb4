package valkeyq_test

import (
	"github.com/quavon/quavon/internal/sandbox/valkeyq"

	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/testenv"
)

// job returns a valid job for pool with fresh times.
func job(pool, id string) *sandbox.SandboxJob {
	now := time.Now().UTC().Truncate(time.Millisecond)
	base := sandbox.SnapshotRef{TenantID: "tenant-a", BlobID: "0123456789abcdef0123456789abcdef", KeyID: "0123456789abcdef",
		SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Bytes: 10}
	return &sandbox.SandboxJob{
		ID: id, Pool: pool, TenantID: "tenant-a", Purpose: sandbox.PurposeSAST, ImageClass: "scanners",
		Base: base, RunCommand: "quavon-scan", Egress: sandbox.Egress{Mode: sandbox.EgressNone},
		Limits: sandbox.Limits{CPUMillis: 1000, MemoryBytes: 256 << 20, Pids: 128, WallClockSeconds: 2, SetupSeconds: 1,
			WorkBytes: 64 << 20, TmpBytes: 16 << 20, OutputBytes: 1 << 20, NoFile: 256, FileSizeBytes: 64 << 20},
		IssuedAt: now, NotAfter: now.Add(5 * time.Minute),
	}
}

func result(id string) *sandbox.SandboxResult {
	return &sandbox.SandboxResult{JobID: id, RunnerID: "runner-1", Status: sandbox.StatusCompleted,
		Artefacts: map[string]string{"stdout.log": "ok\n"}, FinishedAt: time.Now().UTC()}
}

type queueFixture struct {
	admin    valkey.Client
	pool     string
	names    valkeyq.Names
	keys     *sandbox.KeyRing
	queue    *valkeyq.Queue
	consumer *valkeyq.Consumer
}

func newQueueFixture(t *testing.T) queueFixture {
	t.Helper()
	admin := testenv.Valkey(t, testenv.UserControlPlane)
	pool := testenv.Pool(t, admin)
	names, _ := valkeyq.NamesFor(pool)
	keys := ring(t, 5)
	c, err := valkeyq.NewConsumer(admin, names, "runner-1", 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureGroup(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureGroup(context.Background()); err != nil {
		t.Fatalf("EnsureGroup is not idempotent: %v", err)
	}
	return queueFixture{admin: admin, pool: pool, names: names, keys: keys, queue: valkeyq.NewQueue(admin, names, keys), consumer: c}
}

func TestQueueRoundTrip(t *testing.T) {
	t.Parallel()
	f := newQueueFixture(t)
	ctx := context.Background()
	j := job(f.pool, "job-roundtrip-1")
	if err := f.queue.Enqueue(ctx, j); err != nil {
		t.Fatal(err)
	}
	d, err := f.consumer.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sandbox.OpenJob(f.keys, d.Envelope)
	if err != nil || got.ID != j.ID {
		t.Fatalf("OpenJob = %v, %v", got, err)
	}
	// Acknowledged on read: nothing pending.
	pending, err := f.admin.Do(ctx, f.admin.B().Xpending().Key(f.names.Jobs()).Group(valkeyq.ConsumerGroup).Build()).ToArray()
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := pending[0].AsInt64(); n != 0 {
		t.Fatalf("%d entries pending after Next", n)
	}
	env, err := sandbox.SignResult(f.keys, result(j.ID))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.consumer.Publish(ctx, j.ID, env); err != nil {
		t.Fatal(err)
	}
	ttl, _ := f.admin.Do(ctx, f.admin.B().Pttl().Key(f.names.Result(j.ID)).Build()).AsInt64()
	if ttl <= 0 {
		t.Fatalf("result key has no TTL (%d)", ttl)
	}
	res, err := f.queue.AwaitResult(ctx, j.ID, time.Now().Add(5*time.Second))
	if err != nil || res.Artefacts["stdout.log"] != "ok\n" {
		t.Fatalf("AwaitResult = %+v, %v", res, err)
	}
	if _, err := f.consumer.Next(ctx); !errors.Is(err, valkeyq.ErrNoJob) {
		t.Fatalf("second Next = %v, want ErrNoJob", err)
	}
}

// TestDeadRunnerJobIsNeverRunTwice: a runner that read a job and died
// leaves it pending under its own name; no other runner gets it, and the
// worker fails the job at its deadline.
func TestDeadRunnerJobIsNeverRunTwice(t *testing.T) {
	t.Parallel()
	f := newQueueFixture(t)
	ctx := context.Background()
	j := job(f.pool, "job-deadrunner-1")
	if err := f.queue.Enqueue(ctx, j); err != nil {
		t.Fatal(err)
	}
	// The dying runner reads without acknowledging.
	read := f.admin.B().Xreadgroup().Group(valkeyq.ConsumerGroup, "runner-dead").Count(1).Streams().Key(f.names.Jobs()).Id(">").Build()
	if streams, err := f.admin.Do(ctx, read).AsXRead(); err != nil || len(streams[f.names.Jobs()]) != 1 {
		t.Fatalf("dead runner read: %v %v", streams, err)
	}
	if _, err := f.consumer.Next(ctx); !errors.Is(err, valkeyq.ErrNoJob) {
		t.Fatalf("live runner Next = %v, want ErrNoJob", err)
	}
	start := time.Now()
	_, err := f.queue.AwaitResult(ctx, j.ID, start.Add(1500*time.Millisecond))
	if !errors.Is(err, valkeyq.ErrResultTimeout) {
		t.Fatalf("AwaitResult = %v, want timeout", err)
	}
	if time.Since(start) < 1400*time.Millisecond {
		t.Fatal("AwaitResult returned before its deadline")
	}
}

func TestAwaitResultRefusesForgedOrForeignResults(t *testing.T) {
	t.Parallel()
	f := newQueueFixture(t)
	ctx := context.Background()
	push := func(id string, env []byte) {
		if err := f.consumer.Publish(ctx, id, env); err != nil {
			t.Fatal(err)
		}
	}
	forged, _ := sandbox.SignResult(ring(t, 6), result("job-forged-1"))
	push("job-forged-1", forged)
	if _, err := f.queue.AwaitResult(ctx, "job-forged-1", time.Now().Add(5*time.Second)); !errors.Is(err, sandbox.ErrUnknownKey) {
		t.Fatalf("result under another key: %v", err)
	}
	other, _ := sandbox.SignResult(f.keys, result("job-other-1"))
	push("job-mine-1", other)
	if _, err := f.queue.AwaitResult(ctx, "job-mine-1", time.Now().Add(5*time.Second)); !errors.Is(err, valkeyq.ErrResultMismatch) {
		t.Fatalf("result of another job: %v", err)
	}
	jobEnv, _ := sandbox.SignJob(f.keys, job(f.pool, "job-asresult-1"))
	push("job-asresult-1", jobEnv)
	if _, err := f.queue.AwaitResult(ctx, "job-asresult-1", time.Now().Add(5*time.Second)); !errors.Is(err, sandbox.ErrBadSignature) {
		t.Fatalf("job envelope as result: %v", err)
	}
	tampered, _ := sandbox.SignResult(f.keys, result("job-tampered-1"))
	push("job-tampered-1", bytes.Replace(tampered, []byte(`ok\n`), []byte(`OK\n`), 1))
	if _, err := f.queue.AwaitResult(ctx, "job-tampered-1", time.Now().Add(5*time.Second)); !errors.Is(err, sandbox.ErrBadSignature) {
		t.Fatalf("tampered result: %v", err)
	}
}

func TestValkeyReplayGuard(t *testing.T) {
	t.Parallel()
	admin := testenv.Valkey(t, testenv.UserControlPlane)
	names, _ := valkeyq.NamesFor(testenv.Pool(t, admin))
	g := valkeyq.NewReplayGuard(admin, names)
	ctx := context.Background()
	until := time.Now().Add(time.Minute)
	if fresh, err := g.Remember(ctx, "job-replay-1", until); err != nil || !fresh {
		t.Fatalf("first: %v %v", fresh, err)
	}
	if fresh, err := g.Remember(ctx, "job-replay-1", until); err != nil || fresh {
		t.Fatalf("second: %v %v, want not fresh", fresh, err)
	}
	ttl, _ := admin.Do(ctx, admin.B().Pttl().Key(names.Seen("job-replay-1")).Build()).AsInt64()
	if ttl <= 0 || ttl > time.Minute.Milliseconds() {
		t.Fatalf("seen key TTL %d ms, want until expiry", ttl)
	}
}
