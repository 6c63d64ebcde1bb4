package main

import (
	scanapp "github.com/quavon/quavon/internal/app/scan"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/gitrepo"
	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/llm/provider"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/review"
	"github.com/quavon/quavon/internal/review/engine"
	"github.com/quavon/quavon/internal/sandbox/valkeyq"
	"github.com/quavon/quavon/internal/sast"
	"github.com/quavon/quavon/internal/scan"
)

const reviewLong = `Reviews the current branch as Quavon reviews a pull request, on the same
code path: the head commit against its merge base with --base, the
configured review model (QUAVON_LLM_*) with read-only tools over the head
commit, every model finding verified on a changed line with its quote, and
the deterministic scanners in the sandbox, joined (findings of several tools
on the same lines and weakness become one; the model's duplicates merge into
them). Without a model configured, only the scanners run, and it says so.

Nothing is posted anywhere: the findings are printed as text, JSON, SARIF or
GitHub-flavoured Markdown for a CI step summary (--format github).

Exit status: 0 no finding at or above --fail-on and the review complete; 1
findings at or above --fail-on; 3 the review is incomplete (a scanner that did
not finish, a file not scanned, the model stopped early) and no finding failed
it; 2 any other error.`

type reviewOptions struct {
	env          *env
	Base         string
	Format       string
	FailOn       string
	Dir          string
	MaxFindings  int
	NoScanners   bool
	Instructions string
	// model replaces the configured model (tests).
	model llm.Model
	// sandbox replaces the local sandbox (tests).
	sandbox *valkeyq.Client
}

func newReviewCmd(e *env, runF func(context.Context, *reviewOptions) error) *cobra.Command {
	if runF == nil {
		runF = runReview
	}
	o := &reviewOptions{env: e}
	cmd := &cobra.Command{
		Use:   "review [flags]",
		Short: "Review the current branch's changes with the model and the scanners, locally",
		Long:  reviewLong,
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Base, "base", "", "compare with the merge base of `REF` and HEAD (default: the upstream, origin/HEAD, main or master)")
	f.StringVar(&o.Format, "format", "text", "output `format`: text, json, sarif or github")
	f.StringVar(&o.FailOn, "fail-on", "high", "exit 1 on findings of this `severity` or above (critical, high, medium, low, info, none)")
	f.StringVarP(&o.Dir, "dir", "C", ".", "run in `DIR` (a git work tree)")
	f.IntVar(&o.MaxFindings, "max-findings", 50, "scanner findings kept, the most severe first (`N`)")
	f.BoolVar(&o.NoScanners, "no-scanners", false, "skip the scanners (the model only)")
	f.StringVar(&o.Instructions, "instructions", "", "your own guidance to the reviewer (`TEXT`, at most 4096 bytes)")
	return cmd
}

func runReview(ctx context.Context, o *reviewOptions) error {
	stdout, stderr := o.env.stdout, o.env.stderr
	fail := func(err error) error { return &exitStatus{code: exitError, err: err} }
	rank, err := scan.ParseFailOn(o.FailOn)
	if err != nil {
		return fail(err)
	}
	switch o.Format {
	case "text", "json", "sarif", "github":
	default:
		return fail(fmt.Errorf("--format %q: want text, json, sarif or github", o.Format))
	}
	if len(o.Instructions) > policy.MaxInstructionsBytes || o.MaxFindings < 1 || o.MaxFindings > 25000 {
		return fail(errors.New("--instructions wants at most 4096 bytes, --max-findings 1..25000"))
	}
	cfg, err := config.LoadReview(scanapp.Environ(o.env.environ))
	if err != nil {
		return fail(err)
	}
	start := time.Now()
	r, err := gitrepo.OpenLocal(ctx, o.Dir, gitrepo.DefaultLimits)
	if err != nil {
		return fail(fmt.Errorf("%s is not in a git work tree", o.Dir))
	}
	head, err := r.ResolveCommit(ctx, "HEAD")
	if err != nil {
		return fail(errors.New("the repository has no commit yet"))
	}
	plan, err := scan.NewPlan(ctx, o.Dir, o.Base, scan.DefaultLimits) // resolves --base as quavon scan does
	if err != nil {
		return fail(err)
	}

	model := o.model
	var budget *llm.Budget
	if model == nil {
		log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		m, err := provider.FromConfig(cfg.LLM, llm.FeatureReview, log)
		switch {
		case errors.Is(err, provider.ErrNotConfigured):
			fmt.Fprintln(stderr, "quavon review: no model is configured (QUAVON_LLM_PROVIDER, QUAVON_LLM_MODEL): running the scanners only")
		case err != nil:
			return fail(err)
		default:
			if budget, err = provider.RunBudget(cfg.LLM, llm.FeatureReview, nil, "", log); err != nil {
				return fail(err)
			}
			model = budget.Model(m)
		}
	}
	sandbox := o.sandbox
	if sandbox == nil && !o.NoScanners && len(plan.Files) > 0 {
		local, err := scanapp.StartLocal(ctx, cfg.Scan, stderr)
		if err != nil {
			return fail(err)
		}
		defer local.Close()
		sandbox = local.Client
		fmt.Fprintf(stderr, "quavon review: scanners in the sandbox (%s, runtime %s)\n", local.Backend, local.Runtime)
	}
	rp := policy.Default().Features.Review
	rp.Instructions = o.Instructions
	sp := policy.Default().Features.SAST
	sp.MaxFindings = o.MaxFindings
	in := engine.Input{Repo: r, MergeBase: plan.MergeBase, Head: head, Review: rp, SAST: sp, SASTOff: o.NoScanners,
		Model: model, TenantID: "local",
		Progress: func(s string) { fmt.Fprintf(stderr, "quavon review: %s (%.1fs)\n", s, time.Since(start).Seconds()) }}
	if sandbox != nil {
		in.Sandbox = sandbox
	}
	if sandbox == nil && !o.NoScanners && len(plan.Files) == 0 {
		in.SASTOff = true
	}
	out, err := engine.Run(ctx, in)
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(stderr, "quavon review: done in %.1fs\n", time.Since(start).Seconds())
	res := reviewResult{Base: plan.Base, MergeBase: plan.MergeBase, Head: head, Findings: out.Findings, Dropped: out.Dropped.Total(),
		Skipped: out.Skipped, ModelFailed: out.ModelFailed, Summary: out.Summary, SASTFailed: out.SASTFailed}
	if model != nil {
		res.Model = model.Info().Model
	}
	if out.Scan != nil {
		res.Scanners = out.Scan.Report.Tools
		res.NotScanned = out.Scan.Report.NotScanned
	}
	switch o.Format {
	case "text":
		err = res.text(stdout, model != nil, o.NoScanners)
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(res)
	case "github":
		err = res.github(stdout)
	case "sarif":
		err = res.sarif(stdout, out, func(p string) ([]byte, bool) { return plan.ReadFile(ctx, p) })
	}
	if err != nil {
		return fail(err)
	}
	n := 0
	for _, f := range out.Findings {
		if scan.SeverityRank(sast.Severity(f.Severity)) >= rank {
			n++
		}
	}
	if n > 0 {
		return &exitStatus{code: exitFindings, err: fmt.Errorf("%d finding(s) at or above %s", n, o.FailOn)}
	}
	if res.incomplete(o.NoScanners, out) {
		return &exitStatus{code: exitIncomplete, err: errors.New("the review is incomplete (listed in the output)")}
	}
	return nil
}

// reviewResult is what `quavon review` prints.
type reviewResult struct {
	Base        string               `json:"base"`
	MergeBase   string               `json:"mergeBase"`
	Head        string               `json:"head"`
	Model       string               `json:"model,omitempty"`
	ModelFailed string               `json:"modelFailed,omitempty"`
	Summary     string               `json:"summary,omitempty"`
	Findings    []review.Finding     `json:"findings"`
	Dropped     int                  `json:"droppedUnverified"`
	Skipped     []review.SkippedFile `json:"skipped"`
	Scanners    []sast.ToolRun       `json:"scanners"`
	NotScanned  []sast.NotScanned    `json:"notScanned,omitempty"`
	SASTFailed  string               `json:"scannersFailed,omitempty"`
}

func (r *reviewResult) incomplete(noScanners bool, out *engine.Output) bool {
	if r.ModelFailed != "" || (!noScanners && r.SASTFailed != "") {
		return true
	}
	return out.Scan != nil && out.Scan.Incomplete()
}

func (r *reviewResult) text(w io.Writer, withModel, noScanners bool) error {
	for _, f := range r.Findings {
		who := "model"
		if f.Source == review.SourceSAST {
			who = strings.Join(f.Tools, "+") + " " + strings.Join(f.RuleIDs, ",")
		}
		if _, err := fmt.Fprintf(w, "%s:%d: %s [%s] %s\n", cleanLine(f.Path), f.StartLine, f.Severity, cleanLine(who), cleanLine(f.Title)); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\n%d finding(s) on changed lines", len(r.Findings))
	if r.Dropped > 0 {
		fmt.Fprintf(w, "; %d model finding(s) dropped as unverified", r.Dropped)
	}
	fmt.Fprintln(w)
	switch {
	case !withModel:
		fmt.Fprintln(w, "model: none configured (scanners only)")
	case r.ModelFailed != "":
		fmt.Fprintf(w, "model %s: incomplete: %s\n", cleanLine(r.Model), r.ModelFailed)
	default:
		fmt.Fprintf(w, "model %s: done\n", cleanLine(r.Model))
	}
	switch {
	case noScanners:
		fmt.Fprintln(w, "scanners: skipped (--no-scanners)")
	case r.SASTFailed != "":
		fmt.Fprintf(w, "scanners: did not run: %s\n", cleanLine(r.SASTFailed))
	}
	for _, t := range r.Scanners {
		fmt.Fprintf(w, "  %-9s %s\n", t.Tool, t.Status)
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "  not reviewed: %s (%s)\n", cleanLine(s.Path), s.Reason)
	}
	for _, n := range r.NotScanned {
		fmt.Fprintf(w, "  not scanned: %s: %s\n", cleanLine(n.Path), cleanLine(n.Reason))
	}
	return nil
}

// github writes Markdown for $GITHUB_STEP_SUMMARY.
func (r *reviewResult) github(w io.Writer) error {
	fmt.Fprintf(w, "### Quavon review of `%.12s`\n\n", r.Head)
	if len(r.Findings) == 0 {
		fmt.Fprintln(w, "No findings on changed lines.")
	} else {
		fmt.Fprintln(w, "| Severity | Location | Finding | Found by |")
		fmt.Fprintln(w, "| --- | --- | --- | --- |")
		for _, f := range r.Findings {
			who := "AI review"
			if f.Source == review.SourceSAST {
				who = "deterministic: " + strings.Join(f.Tools, ", ")
			}
			fmt.Fprintf(w, "| %s | `%s:%d` | %s | %s |\n", f.Severity, mdCell(f.Path), f.StartLine, mdCell(f.Title), mdCell(who))
		}
	}
	if r.ModelFailed != "" {
		fmt.Fprintf(w, "\n⚠ The AI review is incomplete: %s.\n", mdCell(r.ModelFailed))
	}
	if r.SASTFailed != "" {
		fmt.Fprintf(w, "\n⚠ The scanners did not run: %s.\n", mdCell(r.SASTFailed))
	}
	for _, t := range r.Scanners {
		if t.Status != sast.StatusOK && t.Status != sast.StatusNoFiles {
			fmt.Fprintf(w, "\n⚠ %s: %s.\n", t.Tool, t.Status)
		}
	}
	return nil
}

// sarif writes the scanners' SARIF (sast.SARIF) with the model's findings
// as one more run of the driver quavon-review.
func (r *reviewResult) sarif(w io.Writer, out *engine.Output, source func(string) ([]byte, bool)) error {
	rep := sast.Report{Tools: []sast.ToolRun{}, Findings: []sast.Finding{}, NotScanned: []sast.NotScanned{}}
	if out.Scan != nil {
		rep = *out.Scan.Report
	}
	data, err := sast.SARIF(rep, sast.SARIFOptions{Source: source})
	if err != nil {
		return err
	}
	var log map[string]any
	if err := json.Unmarshal(data, &log); err != nil {
		return err
	}
	results := []any{}
	for _, f := range r.Findings {
		if f.Source != review.SourceLLM {
			continue
		}
		results = append(results, map[string]any{
			"ruleId": f.Category, "level": sarifLevel(f.Severity), "message": map[string]any{"text": f.Title + "\n\n" + f.Body},
			"locations": []any{map[string]any{"physicalLocation": map[string]any{
				"artifactLocation": map[string]any{"uri": f.Path},
				"region":           map[string]any{"startLine": f.StartLine, "endLine": f.EndLine}}}},
			"partialFingerprints": map[string]any{"quavon/v1": f.Fingerprint},
		})
	}
	runs, _ := log["runs"].([]any)
	log["runs"] = append(runs, map[string]any{
		"tool":    map[string]any{"driver": map[string]any{"name": "quavon-review", "informationUri": "https://github.com/quavon/quavon"}},
		"results": results,
	})
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(log)
}

func sarifLevel(sev string) string {
	switch sev {
	case "critical", "high":
		return "error"
	case "medium":
		return "warning"
	}
	return "note"
}

// cleanLine makes untrusted text one safe terminal line.
func cleanLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) {
			return ' '
		}
		return r
	}, s)
}

// mdCell keeps untrusted text inside one Markdown table cell, inert.
func mdCell(s string) string {
	s = cleanLine(s)
	for _, c := range []string{"\\", "|", "`", "*", "_", "[", "]", "<", ">", "@", "#", "!"} {
		s = strings.ReplaceAll(s, c, "\\"+c)
	}
	if len(s) > 300 {
		s = strings.ToValidUTF8(s[:300], "") + "…"
	}
	return s
}
