package scan

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/valkeyq"
	"github.com/quavon/quavon/internal/sast"
)

// BYOOptions of one bring-your-own scanner's job.
type BYOOptions struct {
	TenantID string
	// Timeout is the job's wall clock: a built-in tool's timeout (the
	// scanners job's ToolTimeout), never more.
	Timeout   time.Duration
	Normalise sast.Options
}

// BYOOutcome is one BYO scanner's finished job.
type BYOOutcome struct {
	Name        string      `json:"name"`
	Report      sast.Report `json:"report"`
	ImageDigest string      `json:"imageDigest,omitempty"`
	// SandboxMillis is the job's time in the runner.
	SandboxMillis int64 `json:"sandboxMillis"`
}

// BYOFiles maps the snapshot's paths (changed/<i>/…, src/…) back to the
// plan's files, for a BYO scanner's SARIF.
func (p *Plan) BYOFiles() sast.BYOFiles {
	out := sast.BYOFiles{Files: p.Files, Src: map[string]string{}}
	for _, f := range p.Files {
		if name, ok := p.src[f]; ok && (sast.ScannerOf(sast.ToolGosec).Covers(name) || p.inSrc[f]) {
			out.Src[name] = f
		}
	}
	for _, c := range p.Context {
		out.Src[p.src[c]] = c
	}
	return out
}

// Refused is the outcome of a BYO scanner that is not run: reported
// missing with the reason, on every changed file.
func (p *Plan) Refused(name, why string, opt sast.Options) *BYOOutcome {
	return p.byoOutcome(context.Background(), name, sast.BYORun{Status: sast.StatusMissing, Error: why}, opt)
}

func (p *Plan) byoOutcome(ctx context.Context, name string, run sast.BYORun, opt sast.Options) *BYOOutcome {
	run.Tool, run.Files = sast.BYOTool(name), p.BYOFiles()
	rep := sast.NormaliseBYO(sast.Input{Files: p.Files, Changed: p.Changed, NotScanned: p.NotScanned,
		Source: func(f string) ([]byte, bool) { return p.ReadFile(ctx, f) }}, run, opt)
	return &BYOOutcome{Name: name, Report: rep}
}

// RunBYO runs BYO scanners names (image class byo:<name> each) over the
// plan's snapshot, the one the scanners job gets, each in a job of the
// same shape: signed, no network, the scanners job's limits with a
// built-in tool's timeout as its wall clock. The jobs go to the sandbox
// at once (the runner's concurrency decides how many run together), so
// the review waits for the slowest, not for their sum. Each image runs
// sast.BYORunCommand and returns sast.BYOArtefact. How its job ended is the
// tool's status: an image class the runner's lockfile lacks, or an image
// without the command (exit 127), is missing; the wall clock is timed_out;
// anything else that is not exit 0 with a log (a job that could not be
// sent or got no answer included), or a log the parser refuses, is failed.
// Outcomes are in the order of names. Only a cancelled context is an
// error.
func RunBYO(ctx context.Context, client Sandbox, plan *Plan, names []string, opt BYOOptions) ([]*BYOOutcome, error) {
	for _, name := range names {
		if !sast.ValidBYOName(name) {
			return nil, fmt.Errorf("scan.RunBYO: %q is not a byo image name", name)
		}
	}
	if opt.TenantID == "" {
		opt.TenantID = "local"
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 5 * time.Minute
	}
	outs := make([]*BYOOutcome, len(names))
	if len(plan.Files) == 0 {
		for i, name := range names {
			outs[i] = plan.byoOutcome(ctx, name, sast.BYORun{Status: sast.StatusNoFiles}, opt.Normalise)
		}
		return outs, nil
	}
	if len(names) == 0 {
		return outs, nil
	}
	dir, err := os.MkdirTemp("", "quavon-byo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	// One snapshot directory for every job; the plan is read only here
	// and below, never from the goroutines.
	if err := plan.Tree(ctx, dir, sast.Request{TimeoutSeconds: int(opt.Timeout / time.Second)}); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	limits := DefaultJobLimits
	limits.WallClockSeconds = min(limits.WallClockSeconds, max(int64(opt.Timeout/time.Second), 1))
	type answer struct {
		res *sandbox.SandboxResult
		err error
	}
	answers := make([]answer, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := client.Run(ctx, valkeyq.JobSpec{
				TenantID: opt.TenantID, Purpose: sandbox.PurposeSAST, ImageClass: sast.BYOPrefix + name,
				RunCommand: sast.BYORunCommand, Egress: sandbox.Egress{Mode: sandbox.EgressNone},
				Env:    map[sandbox.SandboxEnvKey]string{sandbox.EnvCI: "true", sandbox.EnvNoColor: "1"},
				Limits: limits, Artefacts: []string{sast.BYOArtefact}, TTL: 2 * time.Minute,
			}, dir, "")
			answers[i] = answer{res, err}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	for i, name := range names {
		outs[i] = plan.byoResult(ctx, name, answers[i].res, answers[i].err, limits, opt.Normalise)
	}
	return outs, nil
}

// byoResult is the outcome of BYO scanner name's job.
func (p *Plan) byoResult(ctx context.Context, name string, res *sandbox.SandboxResult, err error, limits sandbox.Limits, opt sast.Options) *BYOOutcome {
	class := sast.BYOPrefix + name
	if err != nil {
		why := "the sandbox job did not run: " + err.Error()
		if errors.Is(err, valkeyq.ErrResultTimeout) {
			why = "no sandbox runner answered before the job's deadline"
		}
		return p.byoOutcome(ctx, name, sast.BYORun{Status: sast.StatusFailed, Error: why}, opt)
	}
	run := sast.BYORun{Status: sast.StatusOK}
	sarif, hasLog := res.Artefacts[sast.BYOArtefact]
	switch {
	case res.Status == sandbox.StatusFailed && res.Error == sandbox.UnknownImageClass(class):
		run = sast.BYORun{Status: sast.StatusMissing, Error: "the image " + class + " is not in the sandbox runner's image lockfile"}
	case res.Status == sandbox.StatusTimedOut:
		run = sast.BYORun{Status: sast.StatusTimedOut, Error: fmt.Sprintf("the scanner hit its wall clock (%ds)", limits.WallClockSeconds)}
	case res.Status != sandbox.StatusCompleted:
		run = sast.BYORun{Status: sast.StatusFailed, Error: fmt.Sprintf("sandbox job %s: %s", res.Status, res.Error)}
	case res.ExitCode == 127:
		run = sast.BYORun{Status: sast.StatusMissing, Error: "the image has no " + sast.BYORunCommand}
	case res.ExitCode != 0:
		run = sast.BYORun{Status: sast.StatusFailed, Error: fmt.Sprintf("the scanner exited %d: %s", res.ExitCode, tail(res.Artefacts["stderr.log"]))}
	case !hasLog && res.OutputTruncated:
		run = sast.BYORun{Status: sast.StatusFailed, Error: fmt.Sprintf("%s was over the output cap (%d bytes), or not UTF-8 text", sast.BYOArtefact, limits.OutputBytes)}
	case !hasLog:
		run = sast.BYORun{Status: sast.StatusFailed, Error: "the scanner wrote no /out/" + sast.BYOArtefact}
	default:
		run.SARIF = []byte(sarif)
	}
	out := p.byoOutcome(ctx, name, run, opt)
	out.ImageDigest, out.SandboxMillis = res.ImageDigest, res.DurationMillis
	return out
}
