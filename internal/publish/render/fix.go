package render

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/quavon/quavon/internal/publish/sanitise"
	"github.com/quavon/quavon/internal/sast"
)

// PullRequest is a rendered pull request: a plain-text title and a body.
type PullRequest struct {
	Title string
	Body  string
}

// FixPR is what the draft pull request of an issue fix is rendered from
// (spec §7 item 8, FX9). Text fields marked untrusted pass the sanitiser.
type FixPR struct {
	Issue int
	// IssueTitle is the issue's title (untrusted: its author wrote it); it
	// is reduced to plain words in the pull request title.
	IssueTitle string
	Marker     Marker
	// Model is the model that wrote the patch.
	Model string
	// Plan is the agent's finish(summary) text: untrusted Markdown.
	Plan     string
	Change   Change
	Runs     []CommandRun
	Verified Verified
}

// ReviewFixPR is what a stacked review-fix pull request (delivery
// stacked_pr) is rendered from. Its body has the plain line "Fixes review
// findings of #<pr>" and no closing keyword at all (FX9).
type ReviewFixPR struct {
	PullRequest int
	Marker      Marker
	Model       string
	Plan        string
	// Findings are the review findings the fix addresses.
	Findings []FindingRef
	Change   Change
	Runs     []CommandRun
	Verified Verified
}

// Change sizes the patch.
type Change struct {
	Files, Added, Deleted int
}

// Verified is what the publisher checked before it opened the pull request.
type Verified struct {
	// Against is the commit the patch was validated against at publish
	// time (the base for issue fixes, the reviewed head for review fixes);
	// "" leaves the statement out.
	Against string
	// ApprovedBy is the login of the maintainer who approved the patch in
	// the dashboard; "" means the policy's auto mode published it.
	ApprovedBy string
}

// Step is which policy command a sandbox run ran.
type Step string

// Steps.
const (
	StepSetup Step = "setup"
	StepTest  Step = "test"
	StepLint  Step = "lint"
)

// Outcome is how a command run ended.
type Outcome string

// Outcomes.
const (
	OutcomePassed   Outcome = "passed"
	OutcomeFailed   Outcome = "failed"
	OutcomeTimedOut Outcome = "timed_out"
	OutcomeError    Outcome = "error" // the sandbox could not run it
)

// CommandRun is one run of a policy command in the sandbox.
type CommandRun struct {
	Step Step
	// Command is the repository policy's command (a maintainer set it).
	Command  string
	Outcome  Outcome
	ExitCode int
	Duration time.Duration
	// Output is the tail of stdout and stderr, already secret-redacted by
	// the caller (spec DT5); untrusted: it is shown only inside a code
	// block, cut to its last 4 KiB.
	Output string
	// OutputTruncated says the output was cut before it got here.
	OutputTruncated bool
}

// FindingRef names a finding in a list: addressed by a fix, or resolved.
type FindingRef struct {
	Severity sast.Severity
	Title    string // untrusted
	Path     string
	Line     int
}

func (c CommandRun) validate() error {
	switch c.Step {
	case StepSetup, StepTest, StepLint:
	default:
		return fmt.Errorf("unknown step %q", c.Step)
	}
	switch c.Outcome {
	case OutcomePassed, OutcomeFailed, OutcomeTimedOut, OutcomeError:
	default:
		return fmt.Errorf("unknown outcome %q", c.Outcome)
	}
	if c.Duration < 0 {
		return fmt.Errorf("negative duration")
	}
	return nil
}

func (v Verified) validate() error {
	if v.Against != "" && !validSHA(v.Against) {
		return fmt.Errorf("verified against %q: not a commit SHA", v.Against)
	}
	if v.ApprovedBy != "" && !loginRe.MatchString(v.ApprovedBy) {
		return fmt.Errorf("approver %q is not a GitHub login", v.ApprovedBy)
	}
	return nil
}

func (c Change) validate() error {
	if c.Files < 0 || c.Added < 0 || c.Deleted < 0 {
		return fmt.Errorf("negative change size")
	}
	return nil
}

func validateFix(number int, what string, m Marker, ch Change, runs []CommandRun, v Verified) error {
	if number <= 0 {
		return fmt.Errorf("%s number %d", what, number)
	}
	if err := m.Validate(); err != nil {
		return err
	}
	if err := ch.validate(); err != nil {
		return err
	}
	for i, r := range runs {
		if err := r.validate(); err != nil {
			return fmt.Errorf("run %d: %w", i, err)
		}
	}
	return v.validate()
}

// FixPullRequest renders the draft pull request of an issue fix: the
// transparency label first, then exactly one "Fixes #<issue>" line (the
// only closing keyword in the body, written here and nowhere else), the
// sanitised plan, how it was verified, the test results as capped code
// blocks, and the hidden marker.
func (r *Renderer) FixPullRequest(in FixPR) (PullRequest, error) {
	if err := validateFix(in.Issue, "issue", in.Marker, in.Change, in.Runs, in.Verified); err != nil {
		return PullRequest{}, fmt.Errorf("render.FixPullRequest: %w", err)
	}
	issue := "#" + strconv.Itoa(in.Issue)
	var b body
	b.add(label(in.Model, "drafted this change for issue "+issue, in.Verified))
	b.add("Fixes " + issue)
	r.fixSections(&b, in.Plan, in.Change, in.Runs, in.Verified)
	b.add(in.Marker.Comment())
	title := "Quavon: draft for issue " + issue
	if t := plainWords(in.IssueTitle, 120); t != "" {
		title += ": " + t
	}
	return b.pullRequest("render.FixPullRequest", title)
}

// ReviewFixPullRequest renders a stacked review-fix pull request. It never
// carries a closing keyword: its base is the reviewed pull request's
// branch, and merging it must not close anything.
func (r *Renderer) ReviewFixPullRequest(in ReviewFixPR) (PullRequest, error) {
	if err := validateFix(in.PullRequest, "pull request", in.Marker, in.Change, in.Runs, in.Verified); err != nil {
		return PullRequest{}, fmt.Errorf("render.ReviewFixPullRequest: %w", err)
	}
	for i, f := range in.Findings {
		if !f.Severity.Valid() {
			return PullRequest{}, fmt.Errorf("render.ReviewFixPullRequest: finding %d: unknown severity %q", i, f.Severity)
		}
	}
	pr := "#" + strconv.Itoa(in.PullRequest)
	var b body
	b.add(label(in.Model, "drafted changes for the review findings on pull request "+pr, in.Verified))
	b.add("Fixes review findings of " + pr)
	if len(in.Findings) > 0 {
		b.add("### Findings addressed")
		b.add(r.findingRefs(in.Findings, false))
	}
	r.fixSections(&b, in.Plan, in.Change, in.Runs, in.Verified)
	b.add(in.Marker.Comment())
	return b.pullRequest("render.ReviewFixPullRequest", "Quavon: review fixes for "+pr)
}

// label is the transparency label, the first thing in a fix body.
func label(model, did string, v Verified) string {
	how := "A maintainer approved exactly this patch"
	if v.ApprovedBy != "" {
		how += " (" + code(v.ApprovedBy, 50) + ")"
	}
	how += " before it was pushed."
	if v.ApprovedBy == "" {
		how = "It was published without a maintainer's approval, as the repository's policy allows."
	}
	agent := "an AI agent"
	if model != "" {
		agent += " (model " + code(model, maxModelBytes) + ")"
	}
	return "> [!NOTE]\n> 🤖 **Generated by " + Product + "**: " + agent + " " + did + ". " + how +
		" It is a draft: review it like any contribution; " + Product + " never merges."
}

func (r *Renderer) fixSections(b *body, plan string, ch Change, runs []CommandRun, v Verified) {
	if strings.TrimSpace(plan) != "" {
		b.add("### Plan")
		b.add(r.san.Markdown(plan, maxPlanBytes))
	}
	b.add("### How this was verified")
	var items []string
	if v.Against != "" {
		items = append(items, fmt.Sprintf("- The patch (%s, +%s −%s) was validated again against %s when this pull request was opened: "+
			"path policy, size and line limits, text-only files, base blob checks and a secret scan.",
			plural(ch.Files, "file", "files"), thousandsInt(ch.Added), thousandsInt(ch.Deleted), code(short(v.Against), 10)))
	}
	if len(runs) == 0 {
		items = append(items, "- No test or lint command ran: the repository's policy names none.")
	}
	shown := runs
	if len(shown) > maxRuns {
		shown = shown[len(shown)-maxRuns:] // the last runs are the ones that count
	}
	for _, run := range shown {
		items = append(items, "- "+runLine(run))
	}
	if len(runs) > len(shown) {
		items = append(items, more(len(runs)-len(shown), "earlier runs"))
	}
	b.add(strings.Join(items, "\n"))
	if len(shown) == 0 {
		return
	}
	b.add("### Test results")
	for _, run := range shown {
		b.add("**" + stepName(run.Step) + "** " + code(run.Command, maxCommandBytes) + ": " + outcomeText(run))
		block, cut := sanitise.CodeBlock(sanitise.Terminal(run.Output), "text", maxOutputBytes, sanitise.KeepTail)
		if strings.TrimSpace(sanitise.Clean(sanitise.Terminal(run.Output))) == "" {
			b.add("*No output.*")
			continue
		}
		b.add(block)
		if cut || run.OutputTruncated {
			b.add("*Output shortened: the last part is shown.*")
		}
	}
}

func stepName(s Step) string {
	switch s {
	case StepSetup:
		return "Setup"
	case StepLint:
		return "Linter"
	}
	return "Tests"
}

func outcomeText(c CommandRun) string {
	d := duration(c.Duration)
	switch c.Outcome {
	case OutcomePassed:
		return fmt.Sprintf("✅ passed (exit %d, %s)", c.ExitCode, d)
	case OutcomeFailed:
		return fmt.Sprintf("❌ failed (exit %d, %s)", c.ExitCode, d)
	case OutcomeTimedOut:
		return fmt.Sprintf("⏱ timed out after %s", d)
	}
	return "⚠ could not be run in the sandbox"
}

func runLine(c CommandRun) string {
	return stepName(c.Step) + " " + code(c.Command, maxCommandBytes) + ": " + outcomeText(c)
}

// findingRefs lists findings, capped; strike marks resolved ones.
func (r *Renderer) findingRefs(fs []FindingRef, strike bool) string {
	return capRows(len(fs), maxListed, func(i int) string {
		f := fs[i]
		t := r.san.Inline(f.Title, maxTitleBytes)
		if t == "" {
			t = "(untitled)"
		}
		if strike {
			t = "~~" + t + "~~"
		}
		l := "- " + severityLabel(f.Severity) + " · " + t
		if f.Path != "" {
			l += " — " + path(f.Path, f.Line, false)
		}
		return l
	}, budgetResolved, func(n int) string { return more(n, "findings") })
}

// body collects the blocks of a body, separated by blank lines.
type body struct{ parts []string }

func (b *body) add(s string) {
	if s != "" {
		b.parts = append(b.parts, s)
	}
}

func (b *body) String() string { return strings.Join(b.parts, "\n\n") + "\n" }

func (b *body) pullRequest(op, title string) (PullRequest, error) {
	s := b.String()
	if len(s) > MaxBodyBytes {
		return PullRequest{}, fmt.Errorf("%s: body of %d bytes is over GitHub's limit", op, len(s))
	}
	return PullRequest{Title: cut(title, MaxPRTitleBytes), Body: s}, nil
}
