package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/frame"
	"github.com/quavon/quavon/internal/sandbox/valkeyq"
	"github.com/quavon/quavon/internal/snapshot"
)

// Executor turns a verified job into one container run: it resolves the
// image by digest, clamps the limits, fetches the snapshots (and deletes
// their chunks), streams them into the container, parses the hostile output
// and assembles the result. It implements Runtime.
type Executor struct {
	egress   *EgressConfig
	backend  Backend
	images   *Lockfile
	blobs    *valkeyq.BlobStore
	ceiling  sandbox.Limits
	snapshot snapshot.Limits
	log      *slog.Logger
}

var _ Runtime = (*Executor)(nil)

// ExecutorConfig wires an Executor.
type ExecutorConfig struct {
	Backend  Backend
	Images   *Lockfile
	Blobs    *valkeyq.BlobStore
	Ceiling  sandbox.Limits  // SANDBOX_LIMIT_CEILING
	Snapshot snapshot.Limits // entry and unpacked caps passed to the entry program
	Log      *slog.Logger
	// Egress, when not nil, lets setup steps of jobs with egress
	// registries reach the allowlisted registries through the proxy.
	Egress *EgressConfig
}

// EgressConfig is the runner's side of setup-step egress.
type EgressConfig struct {
	Registries []string       // instance allowlist (QUAVON_SANDBOX_REGISTRIES)
	Network    string         // internal Docker network shared with the proxy
	Proxy      netip.AddrPort // the proxy's address on it
	// HostProxy: the proxy runs on the host at the network's gateway
	// (development only: the host is then reachable from setup steps).
	HostProxy bool
	Grants    GrantStore // per-job credentials (valkeyq.EgressGrants)
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
	if eg := cfg.Egress; eg != nil && (len(eg.Registries) == 0 || eg.Network == "" || !eg.Proxy.IsValid() || eg.Grants == nil) {
		return nil, errors.New("runner.NewExecutor: egress needs registries, a network, the proxy address and a grant store")
	}
	return &Executor{egress: cfg.Egress, backend: cfg.Backend, images: cfg.Images, blobs: cfg.Blobs, ceiling: cfg.Ceiling, snapshot: cfg.Snapshot, log: cfg.Log}, nil
}

// failed is a result for a job that could not run; msg is a fixed text.
func failed(msg, digest string) *sandbox.SandboxResult {
	return &sandbox.SandboxResult{Status: sandbox.StatusFailed, Error: msg, ImageDigest: digest, ExitCode: sandbox.NoExitCode}
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

// discard deletes the chunks of the job's snapshots that fetch has not
// (deleting what is gone already is nothing).
func (e *Executor) discard(ctx context.Context, job *sandbox.SandboxJob) {
	refs := []sandbox.SnapshotRef{job.Base}
	if job.Overlay != nil {
		refs = append(refs, *job.Overlay)
	}
	for _, ref := range refs {
		if err := e.blobs.Delete(context.WithoutCancel(ctx), ref); err != nil {
			e.log.Warn("sandbox snapshot not deleted", slog.String("blob_id", ref.BlobID), slog.String("error", err.Error()))
		}
	}
}

// Run executes job. Errors are reserved for the runner's own failures; a
// job that cannot run for a reason of its own gets a failed result.
func (e *Executor) Run(ctx context.Context, job *sandbox.SandboxJob) (*sandbox.SandboxResult, error) {
	// A snapshot is used once, and also when the job is refused before it
	// is fetched (an unknown image class, egress refused, the base not
	// verifying): its chunks go now, not at their TTL.
	defer e.discard(ctx, job)
	ref, err := e.images.Resolve(job.ImageClass)
	if err != nil {
		return failed(sandbox.UnknownImageClass(job.ImageClass), ""), nil
	}
	limits := job.Limits.Clamp(e.ceiling)
	var pass *egressPass
	if job.Egress.Mode == sandbox.EgressRegistries {
		var msg string
		if pass, msg = e.openEgress(ctx, job, limits); pass == nil {
			return failed(msg, ref), nil
		}
		defer pass.revoke(context.WithoutCancel(ctx))
	}
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
	// The channel's key: fresh per job, sent only in the hello and held by
	// no one but this function and the job's PID 1.
	key, err := frame.NewKey()
	if err != nil {
		return nil, err
	}
	req := &frame.Request{
		SetupCommand:     job.SetupCommand,
		RunCommand:       job.RunCommand,
		Artefacts:        job.Artefacts,
		OutputBytes:      limits.OutputBytes,
		SetupSeconds:     limits.SetupSeconds,
		MaxEntries:       e.snapshot.MaxEntries,
		MaxUnpackedBytes: min(e.snapshot.MaxUnpackedBytes, limits.WorkBytes),
		BaseBytes:        int64(len(base)),
		OverlayBytes:     int64(len(overlay)),
	}
	setupDone := make(chan struct{})
	var setupOnce sync.Once
	outputDone := make(chan struct{})
	inR, inW := io.Pipe()
	go func() {
		inW.CloseWithError(e.feed(ctx, inW, key, req, base, overlay, pass, limits, setupDone, outputDone))
	}()
	defer inR.Close()

	outR, outW := io.Pipe()
	type parsed struct {
		out *Output
		err error
	}
	parsedC := make(chan parsed, 1)
	go func() {
		out, err := ReadOutput(outR, key, req, OutputLimits{Total: limits.OutputBytes, Raw: rawCap(limits)},
			func(frame.StepResult) { setupOnce.Do(func() { close(setupDone) }) })
		// Anything after the exit frame (or past the cap, or after a frame
		// that does not verify) is refused: the next write fails and the
		// backend stops the container.
		outR.CloseWithError(errors.Join(errors.New("output closed"), err))
		close(outputDone)
		parsedC <- parsed{out, err}
	}()
	spec := ContainerSpec{JobID: job.ID, ImageRef: ref, Env: ContainerEnv(job), Limits: limits}
	if pass != nil {
		spec.Env = append(spec.Env, pass.env...)
		spec.Network = e.egress.Network
	}
	res, execErr := e.backend.Exec(ctx, spec, inR, &outputSink{PipeWriter: outW, refused: outputDone})
	outW.Close()
	p := <-parsedC
	out := p.out
	e.log.Info("sandbox container done",
		slog.String("job_id", job.ID), slog.String("backend", e.backend.Name()),
		slog.Int("base_bytes", len(base)), slog.Int("overlay_bytes", len(overlay)),
		slog.Int64("output_bytes", out.RawBytes), slog.Bool("timed_out", res.TimedOut), slog.Bool("oom_killed", res.OOMKilled))
	result := verdict(out, p.err, res, limits)
	result.ImageDigest = ref
	if rt, ok := e.backend.(interface{ Runtime() string }); ok {
		result.Runtime = rt.Runtime()
	}
	switch {
	case errors.Is(p.err, frame.ErrTampered):
		e.log.Warn("sandbox output refused: a frame did not verify", slog.String("job_id", job.ID))
	case execErr != nil && !res.TimedOut && p.err == nil:
		if ctx.Err() != nil {
			return nil, execErr
		}
		e.log.Error("sandbox container failed", slog.String("job_id", job.ID), slog.String("error", execErr.Error()))
		return failed("the sandbox container failed", ref), nil
	}
	return result, nil
}

// Fixed texts of the results a job can end with besides its own verdict.
const (
	msgOutputTampered = "the sandbox output was tampered with: a step wrote into or read from the entry program's output"
	msgInputTampered  = "the sandbox input was tampered with: a step wrote into or read from the entry program's input"
	msgOverflow       = "the sandbox output went past its cap"
	msgPID1Killed     = "the entry program (PID 1) was killed before it reported: a step may have killed it"
	msgNoExit         = "the sandbox ended without an exit status"
)

// verdict turns what the container reported and how it ended into the
// result. Only authenticated frames count: the steps that started and
// ended, their exit codes, their output. A job cut short (wall clock,
// memory limit, PID 1 killed, output refused) keeps what had arrived: the
// steps so far, the one cut off marked as killed, and the logs' head and
// tail up to the last flush.
func verdict(out *Output, perr error, res ExecResult, limits sandbox.Limits) *sandbox.SandboxResult {
	result := &sandbox.SandboxResult{Status: sandbox.StatusCompleted, Artefacts: out.Files, OutputTruncated: out.Truncated}
	for _, name := range out.Started {
		if r := out.Result(name); r != nil {
			result.Steps = append(result.Steps, step(*r))
			continue
		}
		// Cut off: killed with the container.
		result.Steps = append(result.Steps, sandbox.Step{Name: name, Ran: true, ExitCode: killedExit, TimedOut: res.TimedOut})
	}
	if run := out.Result(frame.StepRun); run != nil {
		result.ExitCode = run.ExitCode
	} else if setup := out.Result(frame.StepSetup); setup != nil {
		result.ExitCode = setup.ExitCode
	}
	fail := func(status sandbox.ResultStatus, msg string) *sandbox.SandboxResult {
		result.Status, result.Error = status, msg
		if status == sandbox.StatusFailed {
			result.ExitCode = sandbox.NoExitCode // a failed job has no verdict
		}
		return result
	}
	switch {
	case errors.Is(perr, frame.ErrTampered):
		return fail(sandbox.StatusFailed, msgOutputTampered)
	case errors.Is(perr, ErrOutputOverflow):
		return fail(sandbox.StatusFailed, msgOverflow)
	case res.TimedOut:
		result.ExitCode = res.ExitCode
		return fail(sandbox.StatusTimedOut, fmt.Sprintf("killed at the wall clock of %d s", limits.WallClockSeconds))
	case out.Exit == nil && res.OOMKilled:
		result.ExitCode = res.ExitCode
		return fail(sandbox.StatusFailed, fmt.Sprintf("the sandbox was killed at its memory limit of %d bytes", limits.MemoryBytes))
	case out.Exit == nil && res.ExitCode == killedExit:
		result.ExitCode = res.ExitCode
		return fail(sandbox.StatusFailed, msgPID1Killed)
	case out.Exit == nil:
		result.ExitCode = res.ExitCode
		return fail(sandbox.StatusFailed, msgNoExit)
	case out.Exit.InputTampered:
		return fail(sandbox.StatusFailed, msgInputTampered)
	case out.Exit.Error != "":
		return fail(sandbox.StatusFailed, "the entry program refused the input: "+out.Exit.Error)
	}
	return result
}

// killedExit is the exit status of a process killed by SIGKILL, as the
// shell reports it.
const killedExit = 128 + 9

// rawCap bounds the bytes read from a container: the logs' heads and tails
// and the artefacts (twice the output budget, for frames and tar headers
// with room to spare), plus what the periodic flushes of a running step can
// add: per flush at most the tails of both streams (a quarter of the
// budget), for every flush the wall clock allows.
func rawCap(l sandbox.Limits) int64 {
	flushes := (l.WallClockSeconds+1)*int64(time.Second/frame.FlushInterval) + 2
	return 2*l.OutputBytes + 1<<20 + flushes*(l.OutputBytes/4+1024)
}

// feed writes the container's input: the hello with the job's key, the
// request and the base. With a setup step it then waits until the setup
// step has reported its end (or its budget has run out), revokes the
// step's egress, and only then sends the go-ahead and the overlay: nothing
// of the run step can start while the egress credential still exists. A
// failed revocation sends nothing more, so the entry program refuses to go
// on.
func (e *Executor) feed(ctx context.Context, w io.Writer, key []byte, req *frame.Request, base, overlay []byte, pass *egressPass,
	limits sandbox.Limits, setupDone, outputDone <-chan struct{}) error {
	if err := frame.WriteHello(w, key); err != nil {
		return err
	}
	fw := frame.NewWriter(w, key, frame.In)
	if err := frame.WriteHead(fw, req, base, int64(len(overlay))); err != nil {
		return err
	}
	if req.SetupCommand != "" {
		budget := time.NewTimer(time.Duration(limits.SetupSeconds)*time.Second + setupGrace)
		defer budget.Stop()
		select {
		case <-setupDone:
		case <-budget.C:
		case <-outputDone:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
		if pass != nil {
			if err := pass.revoke(context.WithoutCancel(ctx)); err != nil {
				e.log.Error("sandbox egress not revoked; run step refused", slog.String("job_id", pass.jobID), slog.String("error", err.Error()))
				return err
			}
		}
		select {
		case <-setupDone: // setup reported (the budget may have run out first)
		case <-outputDone:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
		if err := frame.WriteGoAhead(fw); err != nil {
			return err
		}
	}
	return frame.WriteOverlay(fw, overlay)
}

// setupGrace is how long past its own budget the runner waits for the
// entry program to report the setup step's end before revoking egress.
const setupGrace = 10 * time.Second

func step(s frame.StepResult) sandbox.Step {
	return sandbox.Step{Name: s.Step, Ran: s.Ran, ExitCode: s.ExitCode, TimedOut: s.TimedOut, DurationMillis: s.DurationMillis}
}
