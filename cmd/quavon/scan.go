package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/sast"
	"github.com/quavon/quavon/internal/scan"
)

const scanUsage = `usage: quavon scan [flags]

Runs the deterministic scanners (ast-grep with Quavon's rules, gitleaks,
bandit, gosec, ESLint with eslint-plugin-security, Ruff) in the sandbox over
the files the current branch changed: the head commit against its merge base
with --base. Only findings on changed lines (± --context) are reported.
Repository configuration and inline suppressions are ignored.

Every changed file goes through every scanner of its language, or is listed
with the reason it was not (a cap, a link, a file or package a scanner could
not read, a scanner that failed): the scan is then incomplete, in every
output format.

Exit status: 0 no finding at or above --fail-on and the scan complete; 1
findings at or above --fail-on; 3 the scan is incomplete (and no finding
failed it); 2 any other error.

flags:
`

// Exit codes of quavon scan beyond 0 and 1.
const (
	exitFindings   = 1
	exitError      = 2
	exitIncomplete = 3
)

type scanExit struct {
	code int
	err  error
}

func (e *scanExit) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func runScan(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("scan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, scanUsage)
		fs.PrintDefaults()
	}
	base := fs.String("base", "", "compare with the merge base of `REF` and HEAD (default: the upstream, origin/HEAD, main or master)")
	format := fs.String("format", "text", "output `format`: text, json or sarif")
	ctxLines := fs.Int("context", 3, "report findings within `N` lines of a changed line")
	failOn := fs.String("fail-on", "high", "exit 1 on findings of this `severity` or above (critical, high, medium, low, info, none)")
	maxFindings := fs.Int("max-findings", 50, "report at most `N` findings (the most severe)")
	tools := fs.String("tools", "", "comma-separated `list` of scanners to run (default all: "+toolList()+")")
	dir := fs.String("C", ".", "run in `DIR` (a git work tree)")
	timeout := fs.Duration("tool-timeout", 5*time.Minute, "time limit of each scanner")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &scanExit{code: exitError, err: errUsage}
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return &scanExit{code: exitError, err: fmt.Errorf("scan takes no arguments, got %q", fs.Args())}
	}
	rank, err := scan.ParseFailOn(*failOn)
	if err != nil {
		return &scanExit{code: exitError, err: err}
	}
	switch *format {
	case "text", "json", "sarif":
	default:
		return &scanExit{code: exitError, err: fmt.Errorf("--format %q: want text, json or sarif", *format)}
	}
	if *ctxLines < 0 || *ctxLines > 1000 || *maxFindings < 1 || *maxFindings > 25000 {
		return &scanExit{code: exitError, err: errors.New("--context wants 0..1000, --max-findings 1..25000")}
	}
	opt := scan.Options{ToolTimeout: *timeout, Normalise: sast.Options{ContextLines: *ctxLines, MaxFindings: *maxFindings}}
	if *tools != "" {
		for _, t := range strings.Split(*tools, ",") {
			tool := sast.Tool(strings.TrimSpace(t))
			if !tool.Valid() {
				return &scanExit{code: exitError, err: fmt.Errorf("--tools: unknown scanner %q (known: %s)", tool, toolList())}
			}
			opt.Tools = append(opt.Tools, tool)
		}
	}
	cfg, err := config.Load(scan.ScanEnviron(environ))
	if err != nil {
		return &scanExit{code: exitError, err: err}
	}

	start := time.Now()
	plan, err := scan.NewPlan(ctx, *dir, *base, scan.DefaultLimits)
	if err != nil {
		return &scanExit{code: exitError, err: err}
	}
	fmt.Fprintf(stderr, "quavon scan: %s...%s (merge base %.12s): %d changed file(s) to scan, %d for context, %d left out\n",
		plan.Base, "HEAD", plan.MergeBase, len(plan.Files), len(plan.Context), len(plan.NotScanned))
	var out *scan.Outcome
	if len(plan.Files) == 0 {
		out, err = scan.Run(ctx, nil, plan, opt)
	} else {
		local, warning, lerr := scan.StartLocal(ctx, cfg, stderr)
		if lerr != nil {
			return &scanExit{code: exitError, err: lerr}
		}
		defer local.Close()
		if warning != "" {
			fmt.Fprintln(stderr, "quavon scan: WARNING:", warning)
		}
		fmt.Fprintf(stderr, "quavon scan: running the scanners image in the sandbox (%s, runtime %s)\n", local.Backend, local.Runtime)
		stop := progress(stderr, start)
		out, err = scan.Run(ctx, local.Client, plan, opt)
		stop()
	}
	if err != nil {
		return &scanExit{code: exitError, err: err}
	}
	fmt.Fprintf(stderr, "quavon scan: done in %.1fs\n", time.Since(start).Seconds())
	switch *format {
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
		return &scanExit{code: exitError, err: err}
	}
	if n := out.Failing(rank); n > 0 {
		return &scanExit{code: exitFindings, err: fmt.Errorf("%d finding(s) at or above %s", n, *failOn)}
	}
	if out.Incomplete() {
		return &scanExit{code: exitIncomplete, err: errors.New("the scan is " + out.Report.Summary() + " (listed in the output)")}
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
