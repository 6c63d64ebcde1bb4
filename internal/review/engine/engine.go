// Package engine is the pull-request review itself, the one code path of
// the worker's review runs and of `quavon review`: the change of a head
// commit against its merge base (read from git objects through
// internal/scan's plan), the LLM review (internal/agent's loop with the
// read-only tools over the head tree, report_finding and finish, one loop
// per file group under a token budget), the scanners (one sandbox job,
// exactly as `quavon scan`), and the join (internal/review): every model
// finding verified on changed lines with its quote, deterministic findings
// badged and grouped across tools.
//
// The model sees the pull request's title and body, the diff and every file
// only inside llm.Untrusted; the maintainers' instructions (policy) are
// the only trusted text besides Quavon's own. The model has no tool that
// writes anything, approves, or reaches the network: what it can do is
// report findings, which are kept only when they verify.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/quavon/quavon/internal/agent"
	"github.com/quavon/quavon/internal/gitrepo"
	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/publish/render"
	"github.com/quavon/quavon/internal/review"
	"github.com/quavon/quavon/internal/sast"
	"github.com/quavon/quavon/internal/scan"
)

// Limits bound the LLM review of one run.
type Limits struct {
	// MaxStepsPerGroup caps the agent's turns per file group.
	MaxStepsPerGroup int
	// GroupTokens is the estimated diff tokens of one file group.
	GroupTokens int
	// MaxGroups caps the groups; files beyond are skipped (file_limit).
	MaxGroups int
	// MaxCandidates caps report_finding calls kept per run.
	MaxCandidates int
	// MaxOutputTokens per model call.
	MaxOutputTokens int
}

// DefaultLimits suit a pull request of a few dozen files.
var DefaultLimits = Limits{MaxStepsPerGroup: 30, GroupTokens: 24_000, MaxGroups: 8, MaxCandidates: 200, MaxOutputTokens: 4096}

// Input is one review.
type Input struct {
	Repo      *gitrepo.Repo
	MergeBase string // commit ids
	Head      string
	// Since is the last reviewed head for an incremental review (an
	// ancestor of Head); "" reviews everything.
	Since string
	// Title and Body are the pull request's (untrusted).
	Title, Body string
	Review      policy.Review
	// SAST is the scanners' policy; SASTOff skips them.
	SAST    policy.SAST
	SASTOff bool
	// Model is the run's model, already inside its llm.Budget; nil skips
	// the LLM review (scanners only).
	Model llm.Model
	// Sandbox runs the scanner job; nil reports the scanners as not run.
	Sandbox  scan.Sandbox
	TenantID string
	Limits   Limits
	// Progress, when set, hears what the review is doing.
	Progress func(string)
	Log      *slog.Logger
}

// Output is a finished review.
type Output struct {
	Plan *scan.Plan
	// Findings are the joined findings at or above minSeverity, most
	// severe first.
	Findings []review.Finding
	// Reviewed are the changed lines the model was given (all of the
	// change, or what changed since Since).
	Reviewed sast.ChangedLines
	Dropped  review.Dropped
	Skipped  []review.SkippedFile
	// ModelStop is how the LLM review ended ("" when it did not run);
	// ModelFailed explains a stop other than finished, in Quavon's words.
	ModelStop   agent.Stop
	ModelFailed string
	Summary     string
	// Scan is the scanners' outcome (nil when they did not run); SASTFailed
	// says why they did not run or return.
	Scan       *scan.Outcome
	SASTFailed string
	// SASTMillis and ModelMillis are the time spent in the sandbox job and
	// in model calls (the rest is Quavon's own).
	SASTMillis, ModelMillis int64
}

// ToolStatuses are the scanners' statuses by tool name, for the run row.
func (o *Output) ToolStatuses() map[string]string {
	out := map[string]string{}
	if o.Scan != nil {
		for _, t := range o.Scan.Report.Tools {
			out[string(t.Tool)] = string(t.Status)
		}
	}
	return out
}

// ScannedClean reports whether tool finished over path without leaving it
// unscanned.
func (o *Output) ScannedClean(tool, p string) bool {
	if o.Scan == nil {
		return false
	}
	ok := false
	for _, t := range o.Scan.Report.Tools {
		if string(t.Tool) == tool {
			ok = t.Status == sast.StatusOK || t.Status == sast.StatusPartial
		}
	}
	for _, n := range o.Scan.Report.NotScanned {
		if n.Path == p && (n.Tool == "" || string(n.Tool) == tool) {
			return false
		}
	}
	return ok
}

// PayloadSAST is the scanners' part of the outputs (nil when off).
func (o *Output) PayloadSAST(off bool) *review.PayloadSAST {
	if off {
		return nil
	}
	ps := &review.PayloadSAST{Failed: o.SASTFailed, Tools: []review.PayloadToolRun{}}
	if o.Scan == nil {
		return ps
	}
	count := map[string]int{}
	for _, f := range o.Scan.Report.Findings {
		count[string(f.Tool)]++
	}
	for _, t := range o.Scan.Report.Tools {
		detail := t.Error
		if detail == "" && len(t.Errors) > 0 {
			detail = t.Errors[0]
		}
		ps.Tools = append(ps.Tools, review.PayloadToolRun{Tool: string(t.Tool), Status: t.Status, Findings: count[string(t.Tool)],
			Detail: detail})
	}
	ps.NotScannedDropped = o.Scan.Report.NotScannedDropped
	for _, n := range o.Scan.Report.NotScanned {
		if len(ps.NotScanned) == review.MaxNotScanned {
			ps.NotScannedDropped++
			continue
		}
		ps.NotScanned = append(ps.NotScanned, review.PayloadNotScanned{Path: n.Path, Tool: string(n.Tool),
			Reason: review.SafeText(n.Reason, 300)})
	}
	return ps
}

// Run reviews in.Head against in.MergeBase.
func Run(ctx context.Context, in Input) (*Output, error) {
	if in.Limits == (Limits{}) {
		in.Limits = DefaultLimits
	}
	if in.Log == nil {
		in.Log = slog.New(slog.DiscardHandler)
	}
	progress := in.Progress
	if progress == nil {
		progress = func(string) {}
	}
	progress("listing the change")
	plan, err := scan.NewPlanOf(ctx, in.Repo, in.MergeBase, in.Head, scan.DefaultLimits)
	if err != nil {
		return nil, fmt.Errorf("engine: the change: %w", err)
	}
	out := &Output{Plan: plan, Dropped: review.Dropped{}}
	read := func(p string) ([]byte, bool) { return plan.ReadFile(ctx, p) }

	out.Reviewed = plan.Changed
	if in.Since != "" && in.Since != in.MergeBase {
		since, err := sinceReader(ctx, in.Repo, in.Since)
		if err != nil {
			return nil, err
		}
		out.Reviewed = review.ChangedSince(plan.Changed, since, read)
	}

	var model []review.Finding
	if in.Model != nil {
		progress("AI review")
		t0 := time.Now()
		model, err = out.llmReview(ctx, in, plan)
		out.ModelMillis = time.Since(t0).Milliseconds()
		if err != nil {
			return nil, err
		}
	}

	var det []sast.Finding
	switch {
	case in.SASTOff:
	case in.Sandbox == nil:
		out.SASTFailed = "no sandbox is configured for the scanners"
	default:
		progress(fmt.Sprintf("scanners over %d changed file(s) in the sandbox", len(plan.Files)))
		tools := in.SAST.Scanners
		if len(tools) == 0 {
			tools = sast.Tools
		}
		t0 := time.Now()
		o, err := scan.Run(ctx, in.Sandbox, plan, scan.Options{TenantID: in.TenantID, Tools: tools,
			Normalise: sast.Options{ContextLines: in.SAST.ContextLines, MaxFindings: max(in.SAST.MaxFindings, 1)}})
		out.SASTMillis = time.Since(t0).Milliseconds()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			out.SASTFailed = err.Error()
		} else {
			out.Scan = o
			det = o.Report.Findings
		}
	}

	minSev := string(in.Review.MinSeverity)
	if minSev == "" {
		minSev = string(sast.SeverityInfo)
	}
	for _, f := range review.Join(model, det) {
		if review.AtLeast(f.Severity, minSev) {
			out.Findings = append(out.Findings, f)
		}
	}
	return out, nil
}

func sinceReader(ctx context.Context, r *gitrepo.Repo, since string) (func(string) ([]byte, bool), error) {
	tree, err := r.Tree(ctx, since)
	if err != nil {
		return nil, fmt.Errorf("engine: the last reviewed head: %w", err)
	}
	return func(p string) ([]byte, bool) {
		e, ok := tree.Entries[p]
		if !ok || !e.Mode.Regular() {
			return nil, false
		}
		b, err := r.Blobs(ctx)
		if err != nil {
			return nil, false
		}
		defer b.Close()
		data, err := b.Read(e.BlobSHA, 64<<20)
		return data, err == nil
	}, nil
}

// lockfiles are never given to the model.
var lockfiles = []string{"package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lockb", "go.sum",
	"Cargo.lock", "poetry.lock", "Pipfile.lock", "uv.lock", "Gemfile.lock", "composer.lock", "mix.lock", "pubspec.lock",
	"packages.lock.json", "gradle.lockfile", "flake.lock"}

// skipReason says why a changed file is not given to the model ("" when it
// is).
func skipReason(p string, data []byte, filters []string) render.SkipReason {
	base := path.Base(p)
	lower := strings.ToLower(p)
	switch {
	case slices.Contains(lockfiles, base):
		return render.SkipLockfile
	case strings.HasPrefix(lower, "vendor/") || strings.Contains(lower, "/vendor/") || strings.Contains("/"+lower, "/node_modules/") ||
		strings.HasPrefix(lower, "third_party/"):
		return render.SkipVendored
	case strings.HasSuffix(base, ".min.js") || strings.HasSuffix(base, ".min.css") || strings.HasSuffix(base, ".map") ||
		strings.HasSuffix(base, ".pb.go") || strings.HasSuffix(base, "_generated.go") || strings.HasSuffix(base, ".gen.go") ||
		generatedHeader(data):
		return render.SkipGenerated
	}
	for _, f := range filters {
		if policy.MatchPath(f, p) {
			return render.SkipFiltered
		}
	}
	switch {
	case len(data) > agent.MaxFileBytes:
		return render.SkipTooLarge
	case strings.ContainsRune(string(data), 0):
		return render.SkipBinary
	case !utf8.Valid(data):
		return render.SkipNotText
	}
	return ""
}

// generatedHeader finds Go's "Code generated … DO NOT EDIT." convention
// (and its common cousins) in the first lines.
func generatedHeader(data []byte) bool {
	head := string(data[:min(len(data), 1024)])
	return strings.Contains(head, "DO NOT EDIT") || strings.Contains(head, "@generated")
}

// ErrNoChange: nothing of the change can be reviewed.
var ErrNoChange = errors.New("engine: no change")

// treeWorkspace is the read-only workspace of the head tree, and its
// blob reader (closed by the caller).
func treeWorkspace(ctx context.Context, r *gitrepo.Repo, head string) (*agent.Workspace, func(), error) {
	tree, err := r.Tree(ctx, head)
	if err != nil {
		return nil, nil, err
	}
	blobs, err := r.Blobs(ctx)
	if err != nil {
		return nil, nil, err
	}
	return agent.NewWorkspace(patch.FromTree(tree, blobs), nil), func() { blobs.Close() }, nil
}
