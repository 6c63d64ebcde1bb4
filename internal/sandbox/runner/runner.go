// Package runner is the sandbox runner's job loop: read one job from the
// pool's stream, verify it completely, and only then hand it to a container
// runtime; report every outcome, refusals included, as a signed result.
//
// The loop holds the pool key ring and a Valkey client for the sandbox ACL
// user; it has no database, no tokens and listens on no port.
package runner

import (
	"github.com/quavon/quavon/internal/sandbox/valkeyq"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"time"

	"github.com/quavon/quavon/internal/sandbox"
)

// Runtime runs one verified job. Backends (gVisor, Firecracker, dev runc)
// implement it; nothing reaches a Runtime that failed verification.
type Runtime interface {
	Run(ctx context.Context, job *sandbox.SandboxJob) (*sandbox.SandboxResult, error)
}

// Source is where jobs come from and results go to.
type Source interface {
	Next(ctx context.Context) (valkeyq.Delivery, error)
	Publish(ctx context.Context, jobID string, envelope []byte) error
}

// JobVerifier checks a job envelope.
type JobVerifier interface {
	Verify(ctx context.Context, envelope []byte) (*sandbox.SandboxJob, error)
}

var _ Source = (*valkeyq.Consumer)(nil)
var _ JobVerifier = (*sandbox.Verifier)(nil)

// Config wires a Runner.
type Config struct {
	ID       string // runner id, carried in every result
	Source   Source
	Verifier JobVerifier
	Keys     *sandbox.KeyRing // signs results
	Runtime  Runtime
	Log      *slog.Logger
	Now      func() time.Time
	// Concurrency is how many jobs run at once; 0 means 1.
	Concurrency int
	// Metrics, when not nil, is told of every job and every refusal.
	Metrics JobObserver
}

// JobObserver records jobs for /metrics. It gets the job's purpose, image
// class and status and the refusal reasons: never ids, digests or output.
type JobObserver interface {
	JobDone(purpose, imageClass, status string, d time.Duration)
	JobRejected(reason string)
}

// Runner is the job loop.
type Runner struct {
	cfg Config
}

// New validates cfg.
func New(cfg Config) (*Runner, error) {
	if cfg.ID == "" || cfg.Source == nil || cfg.Verifier == nil || cfg.Keys == nil || cfg.Runtime == nil || cfg.Log == nil {
		return nil, errors.New("runner.New: id, source, verifier, keys, runtime and log are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 1
	}
	return &Runner{cfg: cfg}, nil
}

// Serve handles jobs until ctx ends, at most Concurrency at a time: each
// slot takes a new job only when its previous one is done.
func (r *Runner) Serve(ctx context.Context) error {
	var wg sync.WaitGroup
	for range r.cfg.Concurrency {
		wg.Go(func() {
			for ctx.Err() == nil {
				if err := r.HandleOne(ctx); err != nil && !errors.Is(err, valkeyq.ErrNoJob) && ctx.Err() == nil {
					r.cfg.Log.Error("sandbox job loop", slog.String("error", err.Error()))
				}
			}
		})
	}
	wg.Wait()
	return ctx.Err()
}

var jobIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{8,64}$`)

// claimedID digs the job id out of an envelope that failed verification, so
// the waiting worker learns of the refusal instead of timing out. The id is
// only an address for the result: nothing else of the job is used.
func claimedID(envelope []byte) string {
	var env struct {
		Payload struct {
			ID string `json:"id"`
		} `json:"payload"`
	}
	if len(envelope) > sandbox.MaxJobEnvelopeBytes || json.Unmarshal(envelope, &env) != nil {
		return ""
	}
	if !jobIDRE.MatchString(env.Payload.ID) {
		return ""
	}
	return env.Payload.ID
}

// HandleOne reads, verifies, runs and reports one job. It returns
// valkeyq.ErrNoJob when none arrived within the source's block time.
func (r *Runner) HandleOne(ctx context.Context) error {
	d, err := r.cfg.Source.Next(ctx)
	if err != nil {
		return err
	}
	start := r.cfg.Now()
	job, err := r.cfg.Verifier.Verify(ctx, d.Envelope)
	if err != nil {
		reason := sandbox.Reason(err)
		if reason != "" && r.cfg.Metrics != nil {
			r.cfg.Metrics.JobRejected(string(reason))
		}
		id := claimedID(d.Envelope)
		r.cfg.Log.Warn("sandbox job rejected",
			slog.String("stream_id", d.StreamID), slog.String("job_id", id),
			slog.String("reason", string(reason)), slog.Int("envelope_bytes", len(d.Envelope)))
		switch {
		case reason == "" || id == "":
			// Not a verification outcome (e.g. Valkey down) or no address to
			// report to: the worker times out.
			return fmt.Errorf("runner: job %q not verified: %w", id, err)
		case reason == sandbox.RejectReplayed:
			// The id belongs to a job that was already taken and may still
			// be running; a refusal under it would cut its worker short.
			return fmt.Errorf("runner: %w", err)
		}
		return r.publish(ctx, &sandbox.SandboxResult{
			JobID: id, RunnerID: r.cfg.ID, Status: sandbox.StatusRejected, RejectReason: reason,
			Error: reason.Message(), FinishedAt: r.cfg.Now().UTC(),
		})
	}
	res, err := r.cfg.Runtime.Run(ctx, job)
	if err != nil {
		// Runtime errors can quote repository output; report a fixed text.
		r.cfg.Log.Error("sandbox job failed", slog.String("job_id", job.ID), slog.String("error", err.Error()))
		res = &sandbox.SandboxResult{Status: sandbox.StatusFailed, Error: "the runner could not run the job"}
	}
	res.JobID, res.RunnerID = job.ID, r.cfg.ID
	res.DurationMillis = r.cfg.Now().Sub(start).Milliseconds()
	res.FinishedAt = r.cfg.Now().UTC()
	r.cfg.Log.Info("sandbox job done",
		slog.String("job_id", job.ID), slog.String("purpose", string(job.Purpose)),
		slog.String("image_class", job.ImageClass), slog.String("image_digest", res.ImageDigest),
		slog.String("status", string(res.Status)), slog.Int64("duration_ms", res.DurationMillis))
	if r.cfg.Metrics != nil {
		r.cfg.Metrics.JobDone(string(job.Purpose), job.ImageClass, string(res.Status), r.cfg.Now().Sub(start))
	}
	return r.publish(ctx, res)
}

func (r *Runner) publish(ctx context.Context, res *sandbox.SandboxResult) error {
	env, err := sandbox.SignResult(r.cfg.Keys, res)
	if err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	return r.cfg.Source.Publish(ctx, res.JobID, env)
}
