package main

import (
	scanapp "github.com/quavon/quavon/internal/app/scan"

	"context"
	"errors"

	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/sast"
	"github.com/quavon/quavon/internal/scan"
)

const scanLong = `Runs the deterministic scanners (ast-grep with Quavon's rules, gitleaks,
bandit, gosec, ESLint with eslint-plugin-security, Ruff) in the sandbox over
the files the current branch changed: the head commit against its merge base
with --base. Only findings on changed lines (± --context) are reported.
Repository configuration and inline suppressions are ignored.

Every changed file goes through every scanner of its language, or is listed
with the reason it was not (a cap, a link, a file or package a scanner could
not read, a scanner that failed): the scan is then incomplete, in every
output format.

Findings are chosen by --profile: "review" (the default, what a review
posts: audit hints and test-file noise left out, see rules/README.md) or
"audit" (everything). Each finding has the severity of its weakness,
whichever tool reported it; a weakness reported on one line by several
tools is one finding listing every tool.

Exit status: 0 no finding at or above --fail-on and the scan complete; 1
findings at or above --fail-on; 3 the scan is incomplete (and no finding
failed it); 2 any other error.`

// Exit codes of quavon scan beyond 0 and 1.
const (
	exitFindings   = 1
	exitError      = 2
	exitIncomplete = 3
)

type scanOptions struct {
	env         *env
	Base        string
	Format      string
	Context     int
	FailOn      string
	MaxFindings int
	Tools       string
	Profile     string
	Disable     string
	Dir         string
	ToolTimeout time.Duration
}

func newScanCmd(e *env, runF func(context.Context, *scanOptions) error) *cobra.Command {
	if runF == nil {
		runF = runScan
	}
	o := &scanOptions{env: e}
	cmd := &cobra.Command{
		Use:   "scan [flags]",
		Short: "Run the deterministic scanners in the sandbox over the current branch's changes",
		Long:  scanLong,
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Base, "base", "", "compare with the merge base of `REF` and HEAD (default: the upstream, origin/HEAD, main or master)")
	f.StringVar(&o.Format, "format", "text", "output `format`: text, json or sarif")
	f.IntVar(&o.Context, "context", 3, "report findings within `N` lines of a changed line")
	f.StringVar(&o.FailOn, "fail-on", "high", "exit 1 on findings of this `severity` or above (critical, high, medium, low, info, none)")
	f.IntVar(&o.MaxFindings, "max-findings", 50, "report at most `N` findings (the most severe)")
	f.StringVar(&o.Tools, "tools", "", "comma-separated `list` of scanners to run (default all: "+toolList()+")")
	f.StringVar(&o.Profile, "profile", string(sast.ProfileReview), "findings `profile`: review (what a review posts) or audit (everything)")
	f.StringVar(&o.Disable, "disable", "", "comma-separated `list` of rules to leave out, as tool:rule (e.g. bandit:B608)")
	f.StringVarP(&o.Dir, "dir", "C", ".", "run in `DIR` (a git work tree)")
	f.DurationVar(&o.ToolTimeout, "tool-timeout", 5*time.Minute, "time limit of each scanner")
	return cmd
}

func runScan(ctx context.Context, o *scanOptions) error {
	stdout, stderr, environ := o.env.stdout, o.env.stderr, o.env.environ
	rank, err := scan.ParseFailOn(o.FailOn)
	if err != nil {
		return &exitStatus{code: exitError, err: err}
	}
	switch o.Format {
	case "text", "json", "sarif":
	default:
		return &exitStatus{code: exitError, err: fmt.Errorf("--format %q: want text, json or sarif", o.Format)}
	}
	if o.Context < 0 || o.Context > 1000 || o.MaxFindings < 1 || o.MaxFindings > 25000 {
		return &exitStatus{code: exitError, err: errors.New("--context wants 0..1000, --max-findings 1..25000")}
	}
	if !sast.Profile(o.Profile).Valid() {
		return &exitStatus{code: exitError, err: fmt.Errorf("--profile %q: want review or audit", o.Profile)}
	}
	opt := scan.Options{ToolTimeout: o.ToolTimeout, Normalise: sast.Options{ContextLines: o.Context, MaxFindings: o.MaxFindings,
		Profile: sast.Profile(o.Profile)}}
	if o.Disable != "" {
		for _, r := range strings.Split(o.Disable, ",") {
			r = strings.TrimSpace(r)
			if !sast.KnownRuleName(r) {
				return &exitStatus{code: exitError, err: fmt.Errorf("--disable: %q is not tool:rule of a rule the scanners emit (rules/README.md)", r)}
			}
			opt.Normalise.DisabledRules = append(opt.Normalise.DisabledRules, r)
		}
	}
	if o.Tools != "" {
		for _, t := range strings.Split(o.Tools, ",") {
			tool := sast.Tool(strings.TrimSpace(t))
			if !tool.Valid() {
				return &exitStatus{code: exitError, err: fmt.Errorf("--tools: unknown scanner %q (known: %s)", tool, toolList())}
			}
			opt.Tools = append(opt.Tools, tool)
		}
	}
	cfg, err := config.LoadScan(scanapp.Environ(environ))
	if err != nil {
		return &exitStatus{code: exitError, err: err}
	}

	start := time.Now()
	plan, err := scan.NewPlan(ctx, o.Dir, o.Base, scan.DefaultLimits)
	if err != nil {
		return &exitStatus{code: exitError, err: err}
	}
	fmt.Fprintf(stderr, "quavon scan: %s...%s (merge base %.12s): %d changed file(s) to scan, %d for context, %d left out\n",
		plan.Base, "HEAD", plan.MergeBase, len(plan.Files), len(plan.Context), len(plan.NotScanned))
	var out *scan.Outcome
	if len(plan.Files) == 0 {
		out, err = scan.Run(ctx, nil, plan, opt)
	} else {
		local, lerr := scanapp.StartLocal(ctx, cfg, stderr)
		if lerr != nil {
			return &exitStatus{code: exitError, err: lerr}
		}
		defer local.Close()
		fmt.Fprintf(stderr, "quavon scan: running the scanners image in the sandbox (%s, runtime %s)\n", local.Backend, local.Runtime)
		stop := progress(stderr, start)
		out, err = scan.Run(ctx, local.Client, plan, opt)
		stop()
	}
	if err != nil {
		return &exitStatus{code: exitError, err: err}
	}
	fmt.Fprintf(stderr, "quavon scan: done in %.1fs\n", time.Since(start).Seconds())
	switch o.Format {
	case "text":
		err = scan.Text(stdout, out)
	case "json":
		err = scan.JSON(stdout, out)
	case "sarif":
		var data []byte
		if data, err = sast.SARIF(*out.Report, sast.SARIFOptions{
			Source: func(p string) ([]byte, bool) { return out.Plan.ReadFile(ctx, p) },
		}); err == nil {
			_, err = stdout.Write(append(data, '\n'))
		}
	}
	if err != nil {
		return &exitStatus{code: exitError, err: err}
	}
	if n := out.Failing(rank); n > 0 {
		return &exitStatus{code: exitFindings, err: fmt.Errorf("%d finding(s) at or above %s", n, o.FailOn)}
	}
	if out.Incomplete() {
		return &exitStatus{code: exitIncomplete, err: errors.New("the scan is " + out.Report.Summary() + " (listed in the output)")}
	}
	return nil
}

// progress prints the elapsed time to w every 5 s until stop is called.
func progress(w io.Writer, start time.Time) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(w, "quavon scan: … %.0fs\n", time.Since(start).Seconds())
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

func toolList() string {
	names := make([]string, len(sast.Tools))
	for i, t := range sast.Tools {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}
