package scan

import (
	"context"
	"errors"
	"fmt"
	"os"
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

// RunBYO runs BYO scanner name (image class byo:<name>) over the plan's
// snapshot, the one the scanners job gets, in a job of the same shape:
// signed, no network, the scanners job's limits with a built-in tool's
// timeout as its wall clock. The image runs sast.BYORunCommand and returns
// sast.BYOArtefact. How the job ended is the tool's status: an image class
// the runner's lockfile lacks, or an image without the command (exit 127),
// is missing; the wall clock is timed_out; anything else that is not exit
// 0 with a log (a job that could not be sent or got no answer included),
// or a log the parser refuses, is failed. Only a cancelled context is an
// error.
func RunBYO(ctx context.Context, client *valkeyq.Client, plan *Plan, name string, opt BYOOptions) (*BYOOutcome, error) {
	if !sast.ValidBYOName(name) {
		return nil, fmt.Errorf("scan.RunBYO: %q is not a byo image name", name)
	}
	if opt.TenantID == "" {
		opt.TenantID = "local"
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 5 * time.Minute
	}
	class := sast.BYOPrefix + name
	if len(plan.Files) == 0 {
		return plan.byoOutcome(ctx, name, sast.BYORun{Status: sast.StatusNoFiles}, opt.Normalise), nil
	}
	dir, err := os.MkdirTemp("", "quavon-byo-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := plan.Tree(ctx, dir, sast.Request{TimeoutSeconds: int(opt.Timeout / time.Second)}); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	limits := DefaultJobLimits
	limits.WallClockSeconds = min(limits.WallClockSeconds, max(int64(opt.Timeout/time.Second), 1))
	res, err := client.Run(ctx, valkeyq.JobSpec{
		TenantID: opt.TenantID, Purpose: sandbox.PurposeSAST, ImageClass: class,
		RunCommand: sast.BYORunCommand, Egress: sandbox.Egress{Mode: sandbox.EgressNone},
		Env:    map[sandbox.SandboxEnvKey]string{sandbox.EnvCI: "true", sandbox.EnvNoColor: "1"},
		Limits: limits, Artefacts: []string{sast.BYOArtefact}, TTL: 2 * time.Minute,
	}, dir, "")
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		why := "the sandbox job did not run: " + err.Error()
		if errors.Is(err, valkeyq.ErrResultTimeout) {
			why = "no sandbox runner answered before the job's deadline"
		}
		return plan.byoOutcome(ctx, name, sast.BYORun{Status: sast.StatusFailed, Error: why}, opt.Normalise), nil
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
	out := plan.byoOutcome(ctx, name, run, opt.Normalise)
	out.ImageDigest, out.SandboxMillis = res.ImageDigest, res.DurationMillis
	return out, nil
}
