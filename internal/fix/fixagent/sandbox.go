package fixagent

import (
	"context"
	"fmt"
	"time"

	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/valkeyq"
	"github.com/quavon/quavon/internal/snapshot"
)

// Runner is the worker's sandbox client (*valkeyq.Client).
type Runner interface {
	RunSources(ctx context.Context, spec valkeyq.JobSpec, base, overlay snapshot.Source) (*sandbox.SandboxResult, error)
}

var _ Runner = (*valkeyq.Client)(nil)

// RecordingRunner is a Runner that records each job as a sandbox run and
// returns the run's id (the worker's *sandboxrun.Recorder); JobSandbox
// then links the result to it. quavon fix and the eval harness use a
// plain Runner: they have no database.
type RecordingRunner interface {
	Runner
	RunRecorded(ctx context.Context, spec valkeyq.JobSpec, base, overlay snapshot.Source) (string, *sandbox.SandboxResult, error)
}

// JobSandbox runs run_tests and run_linter as sandbox jobs: the base
// snapshot (the base commit's tree), the setup command on it unmodified
// (the only step that may have egress), then the overlay of the agent's
// changes (deletions as whiteouts) and the test or lint command without
// egress. Every command is the policy's; the model chooses none.
type JobSandbox struct {
	Runner   Runner
	TenantID string
	// Base is the base commit's tree (gitrepo.TreeFiles) or, for quavon
	// fix, the work tree's HEAD.
	Base       snapshot.Source
	ImageClass string
	// SetupCommand (optional) and its egress; TestCommand and
	// LintCommand back the two tools.
	SetupCommand             string
	SetupEgress              sandbox.Egress
	TestCommand, LintCommand string
	Limits                   sandbox.Limits
	Env                      map[sandbox.SandboxEnvKey]string
}

var _ Sandbox = (*JobSandbox)(nil)

// Overlay turns changes into the overlay snapshot: created and modified
// files with their new content, deleted ones as deletions.
func Overlay(changes []patch.FixFileChange) snapshot.Overlay {
	var o snapshot.Overlay
	for _, c := range changes {
		if c.Operation == patch.OpDelete {
			o.Deletions = append(o.Deletions, c.Path)
			continue
		}
		content := []byte(c.NewContent)
		o.Files = append(o.Files, snapshot.File{Name: c.Path, Read: func() ([]byte, error) { return content, nil }})
	}
	return o
}

// Run implements Sandbox.
func (s *JobSandbox) Run(ctx context.Context, kind fix.TestKind, changes []patch.FixFileChange) (*SandboxResult, error) {
	spec := valkeyq.JobSpec{TenantID: s.TenantID, ImageClass: s.ImageClass, SetupCommand: s.SetupCommand,
		Egress: sandbox.Egress{Mode: sandbox.EgressNone}, Limits: s.Limits, Env: s.Env}
	if s.SetupCommand != "" {
		spec.Egress = s.SetupEgress
	}
	switch kind {
	case fix.KindTest:
		spec.Purpose, spec.RunCommand = sandbox.PurposeFixTest, s.TestCommand
	case fix.KindLint:
		spec.Purpose, spec.RunCommand = sandbox.PurposeFixLint, s.LintCommand
	default:
		return nil, fmt.Errorf("fixagent.JobSandbox: kind %q", kind)
	}
	if spec.RunCommand == "" {
		return nil, fmt.Errorf("fixagent.JobSandbox: no %s command", kind)
	}
	var overlay snapshot.Source
	if len(changes) > 0 {
		overlay = Overlay(changes)
	}
	var (
		runID string
		res   *sandbox.SandboxResult
		err   error
	)
	if rr, ok := s.Runner.(RecordingRunner); ok {
		runID, res, err = rr.RunRecorded(ctx, spec, s.Base, overlay)
	} else {
		res, err = s.Runner.RunSources(ctx, spec, s.Base, overlay)
	}
	if err != nil {
		return nil, fmt.Errorf("fixagent.JobSandbox %s: %w", kind, err)
	}
	out := &SandboxResult{SandboxRunID: runID, ExitCode: res.ExitCode, Duration: time.Duration(res.DurationMillis) * time.Millisecond,
		Stdout: res.Artefacts["stdout.log"], Stderr: res.Artefacts["stderr.log"], Truncated: res.OutputTruncated}
	switch res.Status {
	case sandbox.StatusCompleted:
	case sandbox.StatusTimedOut:
		out.TimedOut = true
	default:
		return nil, fmt.Errorf("fixagent.JobSandbox %s: the job ended %s (%s)", kind, res.Status, clip(res.Error, 200))
	}
	for _, st := range res.Steps {
		if st.Name == "setup" && st.Ran && st.ExitCode != 0 {
			out.Stderr = fmt.Sprintf("[quavon] the setup command exited %d; the %s command did not run as intended\n", st.ExitCode, kind) + out.Stderr
		}
	}
	return out, nil
}

// JobLimits are the sandbox limits of one run_tests or run_linter job: the
// policy's CPU, memory, wall clock and setup time, and fixed bounds on the
// rest (the runner clamps all of them to its ceiling).
func JobLimits(l policy.FixLimits) sandbox.Limits {
	return sandbox.Limits{CPUMillis: l.CPUMillis, MemoryBytes: l.MemoryBytes, WallClockSeconds: l.WallClockSeconds,
		SetupSeconds: l.SetupSeconds, Pids: 512, WorkBytes: 2 << 30, TmpBytes: 512 << 20, OutputBytes: 4 << 20, NoFile: 1024,
		FileSizeBytes: 1 << 30}
}

// LimitsOf are the agent loop's limits of a policy.
func LimitsOf(l policy.FixLimits) Limits {
	return Limits{MaxSteps: l.MaxSteps, MaxSandboxRuns: l.MaxSandboxRuns, WallClock: time.Duration(l.RunWallClockSeconds) * time.Second,
		MaxFiles: l.MaxFiles, MaxChangedLines: l.MaxChangedLines}
}

// PathPolicyOf is the path policy of a fix policy.
func PathPolicyOf(f policy.Fix) patch.PathPolicy {
	return patch.PathPolicy{DeniedPaths: f.DeniedPaths, AllowedPaths: f.AllowedPaths, AllowLockfiles: f.AllowLockfiles}
}
