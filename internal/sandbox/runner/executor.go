package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/entry"
	"github.com/quavon/quavon/internal/snapshot"
)

// Executor turns a verified job into one container run: it resolves the
// image by digest, clamps the limits, fetches the snapshots (and deletes
// their chunks), streams them into the container, parses the hostile output
// and assembles the result. It implements Runtime.
type Executor struct {
	backend  Backend
	images   *Lockfile
	blobs    *sandbox.BlobStore
	ceiling  sandbox.Limits
	snapshot snapshot.Limits
	log      *slog.Logger
}

var _ Runtime = (*Executor)(nil)

// ExecutorConfig wires an Executor.
type ExecutorConfig struct {
	Backend  Backend
	Images   *Lockfile
	Blobs    *sandbox.BlobStore
	Ceiling  sandbox.Limits  // SANDBOX_LIMIT_CEILING
	Snapshot snapshot.Limits // entry and unpacked caps passed to the entry program
	Log      *slog.Logger
}

// NewExecutor validates cfg.
func NewExecutor(cfg ExecutorConfig) (*Executor, error) {
	if cfg.Backend == nil || cfg.Images == nil || cfg.Blobs == nil || cfg.Log == nil {
		return nil, errors.New("runner.NewExecutor: backend, images, blobs and log are required")
	}
	if err := cfg.Ceiling.Validate(); err != nil {
		return nil, fmt.Errorf("runner.NewExecutor: ceiling: %w", err)
	}
	if cfg.Snapshot.MaxEntries <= 0 {
		cfg.Snapshot.MaxEntries = snapshot.DefaultMaxEntries
	}
	if cfg.Snapshot.MaxUnpackedBytes <= 0 {
		cfg.Snapshot.MaxUnpackedBytes = snapshot.DefaultMaxUnpackedBytes
	}
	return &Executor{backend: cfg.Backend, images: cfg.Images, blobs: cfg.Blobs, ceiling: cfg.Ceiling, snapshot: cfg.Snapshot, log: cfg.Log}, nil
}

// failed is a result for a job that could not run; msg is a fixed text.
func failed(msg, digest string) *sandbox.SandboxResult {
	return &sandbox.SandboxResult{Status: sandbox.StatusFailed, Error: msg, ImageDigest: digest}
}

// fetch returns a snapshot's plaintext and deletes its chunks, whatever
// the outcome: a snapshot is used once.
func (e *Executor) fetch(ctx context.Context, ref sandbox.SnapshotRef, tenant string) ([]byte, error) {
	data, err := e.blobs.Fetch(ctx, ref, tenant)
	if derr := e.blobs.Delete(context.WithoutCancel(ctx), ref); derr != nil {
		e.log.Warn("sandbox snapshot not deleted", slog.String("blob_id", ref.BlobID), slog.String("error", derr.Error()))
	}
	return data, err
}

// Run executes job. Errors are reserved for the runner's own failures; a
// job that cannot run for a reason of its own gets a failed result.
func (e *Executor) Run(ctx context.Context, job *sandbox.SandboxJob) (*sandbox.SandboxResult, error) {
	ref, err := e.images.Resolve(job.ImageClass)
	if err != nil {
		return failed(fmt.Sprintf("image class %q is not in this runner's lockfile", job.ImageClass), ""), nil
	}
	if job.Egress.Mode != sandbox.EgressNone {
		// The egress proxy is not part of this runner yet: refuse rather
		// than run a setup step that silently has no network.
		return failed("egress mode registries is not supported by this runner", ref), nil
	}
	limits := job.Limits.Clamp(e.ceiling)
	base, err := e.fetch(ctx, job.Base, job.TenantID)
	if err != nil {
		e.log.Warn("sandbox snapshot refused", slog.String("job_id", job.ID), slog.String("error", err.Error()))
		return failed("the base snapshot could not be fetched or did not verify", ref), nil
	}
	var overlay []byte
	if job.Overlay != nil {
		if overlay, err = e.fetch(ctx, *job.Overlay, job.TenantID); err != nil {
			e.log.Warn("sandbox snapshot refused", slog.String("job_id", job.ID), slog.String("error", err.Error()))
			return failed("the overlay snapshot could not be fetched or did not verify", ref), nil
		}
	}
	req := &entry.Request{
		SetupCommand:     job.SetupCommand,
		RunCommand:       job.RunCommand,
		Artefacts:        job.Artefacts,
		OutputBytes:      limits.OutputBytes,
		SetupSeconds:     limits.SetupSeconds,
		MaxEntries:       e.snapshot.MaxEntries,
		MaxUnpackedBytes: min(e.snapshot.MaxUnpackedBytes, limits.WorkBytes),
	}
	inR, inW := io.Pipe()
	go func() { inW.CloseWithError(entry.WriteInput(inW, req, base, overlay)) }()
	defer inR.Close()

	outR, outW := io.Pipe()
	parsed := make(chan *Output, 1)
	go func() {
		out, err := ReadOutput(outR, job.Artefacts, OutputLimits{Total: limits.OutputBytes, Raw: 2*limits.OutputBytes + 1<<20}, nil)
		// Anything after the tar (or past the cap) is refused: the next
		// write fails and the backend stops the container.
		outR.CloseWithError(errors.Join(errors.New("output closed"), err))
		parsed <- out
	}()
	spec := ContainerSpec{JobID: job.ID, ImageRef: ref, Env: ContainerEnv(job), Limits: limits}
	res, execErr := e.backend.Exec(ctx, spec, inR, outW)
	outW.Close()
	out := <-parsed
	e.log.Info("sandbox container done",
		slog.String("job_id", job.ID), slog.String("backend", e.backend.Name()),
		slog.Int("base_bytes", len(base)), slog.Int("overlay_bytes", len(overlay)),
		slog.Int64("output_bytes", out.RawBytes), slog.Bool("timed_out", res.TimedOut))
	if execErr != nil && !res.TimedOut {
		if ctx.Err() != nil {
			return nil, execErr
		}
		e.log.Error("sandbox container failed", slog.String("job_id", job.ID), slog.String("error", execErr.Error()))
		return failed("the sandbox container failed", ref), nil
	}
	result := &sandbox.SandboxResult{
		Status:          sandbox.StatusCompleted,
		ImageDigest:     ref,
		Artefacts:       out.Files,
		OutputTruncated: out.Truncated,
	}
	if ex := out.Exit; ex != nil {
		result.OutputTruncated = result.OutputTruncated || ex.OutputTruncated
		if ex.Setup != nil {
			result.Steps = append(result.Steps, step(*ex.Setup))
		}
		result.Steps = append(result.Steps, step(ex.Run))
		result.ExitCode = ex.Run.ExitCode
		if ex.Setup != nil && !ex.Run.Ran {
			result.ExitCode = ex.Setup.ExitCode
		}
		if ex.Error != "" {
			result.Status, result.Error = sandbox.StatusFailed, "the entry program refused the input: "+ex.Error
		}
	}
	switch {
	case res.TimedOut:
		result.Status, result.Error = sandbox.StatusTimedOut, fmt.Sprintf("killed at the wall clock of %d s", limits.WallClockSeconds)
		result.ExitCode = res.ExitCode
	case out.Exit == nil:
		result.Status, result.Error = sandbox.StatusFailed, "the sandbox ended without an exit status"
		result.ExitCode = res.ExitCode
	}
	return result, nil
}

func step(s entry.StepResult) sandbox.Step {
	return sandbox.Step{Name: s.Step, Ran: s.Ran, ExitCode: s.ExitCode, TimedOut: s.TimedOut, DurationMillis: s.DurationMillis}
}
