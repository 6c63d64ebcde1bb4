package scan

import (
	"github.com/quavon/quavon/internal/sandbox/valkeyq"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sast"
)

// RunCommand is the scanners image's driver (internal/sast/driver).
const RunCommand = "/opt/quavon/bin/quavon-scan"

// SandboxSourceRoot is where the source tree is in the sandbox.
const SandboxSourceRoot = "/work/" + sast.SourceDir

// ImageClass is the image every scan runs in.
const ImageClass = "scanners"

// DefaultJobLimits bound one scan job (the runner clamps them to its
// ceiling). gosec type-checks whole packages and ESLint loads TypeScript,
// hence the memory.
var DefaultJobLimits = sandbox.Limits{
	CPUMillis: 2000, MemoryBytes: 4 << 30, Pids: 512, WallClockSeconds: 900, SetupSeconds: 1,
	WorkBytes: 2 << 30, TmpBytes: 256 << 20, OutputBytes: 8 << 20, NoFile: 4096, FileSizeBytes: 512 << 20,
}

// Options of one scan.
type Options struct {
	TenantID string
	// ImageClass is the image the job runs in; "" is ImageClass
	// ("scanners"). An instance admin's scanner image is a byo: class.
	ImageClass string
	// ExtraArtefacts are more files of /out to return (diagnostics).
	ExtraArtefacts []string
	Tools          []sast.Tool
	// ToolTimeout bounds each tool in the sandbox.
	ToolTimeout time.Duration
	Limits      sandbox.Limits
	Normalise   sast.Options
}

// Outcome is a finished scan.
type Outcome struct {
	Plan   *Plan        `json:"plan"`
	Report *sast.Report `json:"report"`
	// ImageDigest is the scanners image the runner resolved.
	ImageDigest string `json:"imageDigest"`
	// SandboxMillis is the job's time in the runner.
	SandboxMillis int64 `json:"sandboxMillis"`
	// RunMillis is the driver's time inside the sandbox (the run step);
	// SandboxMillis less RunMillis is container start, snapshot in and
	// output out.
	RunMillis int64 `json:"runMillis"`
	// Artefacts holds the Options.ExtraArtefacts the job produced.
	Artefacts map[string]string `json:"-"`
	// input is what Report was normalised from, for Normalise.
	input sast.Input
}

// Normalise normalises the same scan again with other options (another
// profile, context or cap): one sandbox job serves both the review
// profile's findings and the audit profile's SARIF. The source is read
// through the plan, with the context Run was given.
func (o *Outcome) Normalise(opt sast.Options) sast.Report { return sast.Normalise(o.input, opt) }

// Incomplete reports whether anything of the change was not fully
// scanned (sast.Report.Incomplete): a changed file left out, or not fully
// scanned by a tool that covers it, or a tool that did not finish.
func (o *Outcome) Incomplete() bool { return o.Report.Incomplete() }

// Sandbox sends the scan job: *valkeyq.Client, or the worker's
// *sandboxrun.Recorder, which also records the job as a sandbox run.
type Sandbox interface {
	Run(ctx context.Context, spec valkeyq.JobSpec, baseDir, overlayDir string) (*sandbox.SandboxResult, error)
}

// Run scans plan in the sandbox through client (nil only when the plan has
// no files: nothing is sent).
func Run(ctx context.Context, client Sandbox, plan *Plan, opt Options) (*Outcome, error) {
	if opt.TenantID == "" {
		opt.TenantID = "local"
	}
	if opt.Limits == (sandbox.Limits{}) {
		opt.Limits = DefaultJobLimits
	}
	if opt.ToolTimeout <= 0 {
		opt.ToolTimeout = 5 * time.Minute
	}
	out := &Outcome{Plan: plan, Artefacts: map[string]string{}}
	if len(plan.Files) == 0 {
		out.input = sast.Input{Files: []string{}, NotScanned: plan.NotScanned, Changed: plan.Changed,
			Manifest: sast.Manifest{Tools: noFiles(toolsOf(opt))}}
		rep := sast.Normalise(out.input, opt.Normalise)
		out.Report = &rep
		return out, nil
	}
	dir, err := os.MkdirTemp("", "quavon-scan-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := plan.Tree(ctx, dir, sast.Request{Tools: opt.Tools, TimeoutSeconds: int(opt.ToolTimeout / time.Second)}); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	if opt.ImageClass == "" {
		opt.ImageClass = ImageClass
	}
	artefacts := []string{sast.ManifestArtefact}
	for _, t := range toolsOf(opt) {
		artefacts = append(artefacts, sast.OutputArtefact(t))
	}
	artefacts = append(artefacts, opt.ExtraArtefacts...)
	res, err := client.Run(ctx, valkeyq.JobSpec{
		TenantID: opt.TenantID, Purpose: sandbox.PurposeSAST, ImageClass: opt.ImageClass,
		RunCommand: RunCommand, Egress: sandbox.Egress{Mode: sandbox.EgressNone},
		Env:    map[sandbox.SandboxEnvKey]string{sandbox.EnvCI: "true", sandbox.EnvNoColor: "1"},
		Limits: opt.Limits, Artefacts: artefacts, TTL: 2 * time.Minute,
	}, dir, "")
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	out.ImageDigest, out.SandboxMillis = res.ImageDigest, res.DurationMillis
	for _, st := range res.Steps {
		if st.Name == "run" { // frame.StepRun
			out.RunMillis = st.DurationMillis
		}
	}
	for _, a := range opt.ExtraArtefacts {
		if v, ok := res.Artefacts[a]; ok {
			out.Artefacts[a] = v
		}
	}
	switch {
	case res.Status == sandbox.StatusTimedOut:
		return nil, fmt.Errorf("sandbox: the scan job hit its wall clock (%ds)", opt.Limits.WallClockSeconds)
	case res.Status != sandbox.StatusCompleted:
		return nil, fmt.Errorf("sandbox: job %s: %s %s", res.Status, res.RejectReason, res.Error)
	case res.ExitCode != 0:
		return nil, fmt.Errorf("sandbox: the scan driver exited %d: %s", res.ExitCode, tail(res.Artefacts["stderr.log"]))
	}
	var m sast.Manifest
	raw, ok := res.Artefacts[sast.ManifestArtefact]
	if !ok {
		return nil, errors.New("sandbox: the scan driver wrote no manifest")
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("sandbox: manifest: %w", err)
	}
	outputs := map[sast.Tool][]byte{}
	for _, t := range toolsOf(opt) {
		if o, ok := res.Artefacts[sast.OutputArtefact(t)]; ok {
			outputs[t] = []byte(o)
		}
	}
	// The manifest's Root is sandbox output: the host uses its own.
	out.input = sast.Input{
		Manifest: m, Outputs: outputs, Root: SandboxSourceRoot, Changed: plan.Changed, Expected: toolsOf(opt),
		Files: plan.Files, Exts: plan.exts, NotScanned: plan.NotScanned,
		Source: func(p string) ([]byte, bool) { return plan.ReadFile(ctx, p) },
	}
	rep := sast.Normalise(out.input, opt.Normalise)
	out.Report = &rep
	return out, nil
}

// noFiles is a manifest's runs for a change with nothing to scan.
func noFiles(tools []sast.Tool) []sast.ToolRun {
	var out []sast.ToolRun
	for _, t := range tools {
		out = append(out, sast.ToolRun{Tool: t, Status: sast.StatusNoFiles})
	}
	return out
}

func toolsOf(opt Options) []sast.Tool {
	if len(opt.Tools) > 0 {
		return opt.Tools
	}
	return sast.Tools
}

func tail(s string) string {
	if len(s) > 2000 {
		s = s[len(s)-2000:]
	}
	return s
}

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
