package render

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/quavon/quavon/internal/publish/sanitise"
	"github.com/quavon/quavon/internal/sast"
)

// Finding is one finding as the publisher shows it. Title, Body, the rule
// ids and Suggestion are untrusted (model output, or scanner output derived
// from the pull request's files); Path is repository content.
type Finding struct {
	Severity sast.Severity
	Title    string
	// Body is Markdown; it passes the sanitiser.
	Body string
	Path string
	// Line and EndLine are 1-based and inclusive; 0 means the whole file.
	Line, EndLine int
	// Sources say who found it: the model, scanners, or both (cross-tool
	// duplicates are grouped into one finding).
	Sources []Source
	// Suggestion, when set, is the replacement of line Line: rendered as
	// a GitHub suggested change. GitHub applies a suggestion to the lines
	// the comment is attached to, and the writer attaches comments to one
	// line, so a suggestion for a range (EndLine > Line) is left out with
	// a note rather than applied to the wrong lines. Only this typed field
	// can produce a suggestion; one in Body becomes plain code.
	Suggestion *string
	// Fingerprint is the finding's lowercase hex fingerprint; written as
	// a hidden marker in its comment, so the publisher recognises its own
	// comments.
	Fingerprint string
}

// SourceKind says whether the model or a scanner reported a finding.
type SourceKind uint8

// Source kinds.
const (
	SourceModel   SourceKind = iota + 1 // the LLM review
	SourceScanner                       // a deterministic scanner (SAST)
)

// Source is one reporter of a finding.
type Source struct {
	Kind SourceKind
	// Tool is the scanner (sast.Tool, or a BYO image's name).
	Tool   string
	RuleID string
	// CWE is "CWE-<n>", when the tool names one.
	CWE string
}

func (f Finding) validate() error {
	switch {
	case !f.Severity.Valid():
		return fmt.Errorf("unknown severity %q", f.Severity)
	case f.Line < 0 || f.EndLine < 0 || f.EndLine != 0 && f.EndLine < f.Line:
		return fmt.Errorf("bad lines %d-%d", f.Line, f.EndLine)
	case len(f.Sources) == 0:
		return fmt.Errorf("no source")
	case f.Fingerprint != "" && !fpRe.MatchString(f.Fingerprint):
		return fmt.Errorf("fingerprint %q is not lowercase hex", f.Fingerprint)
	}
	for _, s := range f.Sources {
		if s.Kind != SourceModel && s.Kind != SourceScanner {
			return fmt.Errorf("unknown source kind %d", s.Kind)
		}
		if s.CWE != "" && !cweRe.MatchString(s.CWE) {
			return fmt.Errorf("CWE %q", s.CWE)
		}
	}
	return nil
}

// Comment renders the body of one inline review comment: severity and
// title, the source badges (tool and rule, "deterministic" for scanners),
// the sanitised body, a suggested change when the finding has one, and the
// hidden fingerprint marker.
func (r *Renderer) Comment(f Finding) (string, error) {
	if err := f.validate(); err != nil {
		return "", fmt.Errorf("render.Comment: %w", err)
	}
	var b body
	b.add("**" + severityLabel(f.Severity) + "** · " + r.title(f.Title))
	b.add(badges(f.Sources))
	if strings.TrimSpace(f.Body) != "" {
		b.add(r.san.Markdown(f.Body, maxFindingBytes))
	}
	if f.Suggestion != nil && f.Line > 0 {
		if f.EndLine > f.Line {
			b.add(fmt.Sprintf("*A suggested change for lines %d to %d was left out: it would apply to one line only.*", f.Line, f.EndLine))
		} else if s, ok := sanitise.Suggestion(*f.Suggestion, maxSuggestion); ok {
			b.add("Suggested change:")
			b.add(s)
		} else {
			b.add("*A suggested change was left out: it is too long to show.*")
		}
	}
	if f.Fingerprint != "" {
		b.add("<!-- quavon:finding " + f.Fingerprint + " -->")
	}
	s := b.String()
	if len(s) > MaxBodyBytes {
		return "", fmt.Errorf("render.Comment: %d bytes", len(s))
	}
	return s, nil
}

func (r *Renderer) title(t string) string {
	if s := r.san.Inline(t, maxTitleBytes); s != "" {
		return s
	}
	return "(untitled)"
}

// badges names who found a finding: "🤖 AI review" for the model,
// "🔍 `gosec` `G201` `CWE-89`" for a scanner, and "· deterministic" when a
// scanner is among them (spec: findings from the scanners carry a
// deterministic badge).
func badges(srcs []Source) string {
	var parts []string
	det := false
	for i, s := range srcs {
		if i == maxSources {
			parts = append(parts, fmt.Sprintf("and %d more", len(srcs)-i))
			break
		}
		if s.Kind == SourceModel {
			parts = append(parts, "🤖 AI review")
			continue
		}
		det = true
		p := "🔍 " + code(s.Tool, 60)
		if s.RuleID != "" {
			p += " " + code(s.RuleID, 100)
		}
		if s.CWE != "" {
			p += " " + code(s.CWE, 12)
		}
		parts = append(parts, p)
	}
	out := strings.Join(parts, " · ")
	if det {
		out += " · deterministic"
	}
	return out
}

func badgesCell(srcs []Source) string {
	var parts []string
	for i, s := range srcs {
		if i == maxSources {
			parts = append(parts, "…")
			break
		}
		if s.Kind == SourceModel {
			parts = append(parts, "AI review")
			continue
		}
		p := codeCell(s.Tool, 60)
		if s.RuleID != "" {
			p += " " + codeCell(s.RuleID, 100)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// Review is what one review run publishes: the review (its summary body
// and inline comments) and the check run.
type Review struct {
	Marker  Marker
	HeadSHA string
	// Model is the model of the LLM review; "" when it did not run.
	Model string
	// ModelFailed says why the LLM review did not complete (Quavon's own
	// words, e.g. "budget exceeded"); "" when it completed or did not run.
	ModelFailed string
	// Inline are the new findings posted as inline comments.
	Inline []Finding
	// Outside are new findings on no line a comment can go to (outside
	// the diff's hunks): the summary lists them.
	Outside []Finding
	// Repeated counts findings still present that this pull request
	// already showed; they are not posted again.
	Repeated int
	// Resolved are findings shown before that this head no longer has.
	Resolved []FindingRef
	// SAST is the deterministic scanners' part; nil when it is off.
	SAST *SAST
	// Skipped are changed files the review did not look at.
	Skipped []Skipped
	// AC is the acceptance-criteria check; nil when there is none.
	AC *AC
	// Usage is the model's usage and cost: shown only in the check run.
	Usage Usage
}

// SAST is the scanner part of a review.
type SAST struct {
	// Failed says why the scanner job as a whole did not run or return
	// (Quavon's words); then Tools may be empty.
	Failed string
	Tools  []ToolRun
	// NotScanned are changed files a scanner that covers them did not
	// fully scan (Tool is empty when no scanner was given the file), with
	// the reason; NotScannedDropped counts those past the scan's own cap.
	// Any of them makes the scan incomplete: never "no findings" alone.
	NotScanned        []NotScanned
	NotScannedDropped int
}

// NotScanned is a changed file that was not fully scanned, and why
// (Quavon's words or the tool's: untrusted).
type NotScanned struct {
	Path   string
	Tool   string
	Reason string
}

// ToolRun is one scanner's outcome.
type ToolRun struct {
	Tool   string
	Status sast.Status
	// Findings counts its findings on changed lines.
	Findings int
	// Incomplete says its results are partial (findings capped, output
	// cut); the reason is in Detail.
	Incomplete bool
	// Detail is the reason for a failure or an incomplete run (untrusted:
	// it may quote the tool).
	Detail string
}

// Skipped is a changed file the review did not read.
type Skipped struct {
	Path   string
	Reason SkipReason
}

// SkipReason says why a file was not reviewed.
type SkipReason string

// Skip reasons.
const (
	SkipBinary    SkipReason = "binary"
	SkipTooLarge  SkipReason = "too_large"
	SkipGenerated SkipReason = "generated"
	SkipVendored  SkipReason = "vendored"
	SkipLockfile  SkipReason = "lockfile"
	SkipFileLimit SkipReason = "file_limit"  // beyond the review's file cap
	SkipNotText   SkipReason = "not_text"    // not UTF-8
	SkipFiltered  SkipReason = "path_filter" // excluded by the policy's review.pathFilters
)

var skipText = map[SkipReason]string{
	SkipBinary: "binary file", SkipTooLarge: "too large to review", SkipGenerated: "generated file",
	SkipVendored: "vendored code", SkipLockfile: "lockfile", SkipFileLimit: "over the review's file limit",
	SkipNotText: "not UTF-8 text", SkipFiltered: "excluded by the review's path filters",
}

// Usage is what the model calls of a run used.
type Usage struct {
	Calls                     int
	InputTokens, OutputTokens int64
	// CostMicroUSD is the cost in millionths of a US dollar; < 0 unknown.
	CostMicroUSD int64
}

// AC is the acceptance-criteria check of the pull request's linked issue.
type AC struct {
	Issue int
	Items []Criterion
}

// ACStatus is a criterion's verdict.
type ACStatus string

// Verdicts (the check never fails on them).
const (
	ACMet     ACStatus = "met"
	ACUnmet   ACStatus = "unmet"
	ACUnclear ACStatus = "unclear"
)

// Criterion is one acceptance criterion and its verdict.
type Criterion struct {
	// Text is the criterion (untrusted: the issue's author wrote it).
	Text   string
	Status ACStatus
	// Inferred marks criteria the model extracted (no checklist, section
	// or Gherkin named them).
	Inferred bool
	// Evidence are changed files or lines of the pull request.
	Evidence []Location
	// Note is the judge's explanation (untrusted), optional.
	Note string
}

// Location is a file, or a line in it.
type Location struct {
	Path string
	Line int
}

func (rv Review) validate() error {
	if err := rv.Marker.Validate(); err != nil {
		return err
	}
	if !validSHA(rv.HeadSHA) {
		return fmt.Errorf("head %q is not a commit SHA", rv.HeadSHA)
	}
	if rv.Repeated < 0 {
		return fmt.Errorf("negative repeated count")
	}
	for i, f := range append(append([]Finding(nil), rv.Inline...), rv.Outside...) {
		if err := f.validate(); err != nil {
			return fmt.Errorf("finding %d: %w", i, err)
		}
	}
	for i, f := range rv.Resolved {
		if !f.Severity.Valid() {
			return fmt.Errorf("resolved %d: unknown severity %q", i, f.Severity)
		}
	}
	if rv.SAST != nil {
		for _, t := range rv.SAST.Tools {
			if _, ok := toolStatusText[t.Status]; !ok {
				return fmt.Errorf("tool %q: unknown status %q", t.Tool, t.Status)
			}
			if t.Findings < 0 {
				return fmt.Errorf("tool %q: negative findings", t.Tool)
			}
		}
	}
	for _, s := range rv.Skipped {
		if _, ok := skipText[s.Reason]; !ok {
			return fmt.Errorf("skipped %q: unknown reason %q", s.Path, s.Reason)
		}
	}
	if rv.AC != nil {
		if rv.AC.Issue <= 0 {
			return fmt.Errorf("acceptance check without an issue")
		}
		for i, c := range rv.AC.Items {
			if _, ok := acLabel[c.Status]; !ok {
				return fmt.Errorf("criterion %d: unknown status %q", i, c.Status)
			}
		}
	}
	return nil
}

// ReviewBody renders the summary body of the review: the transparency
// label, counts, findings outside the diff, resolved findings, the
// scanners' status (failed, missing and incomplete tools included),
// skipped files, a line on the acceptance criteria, the model, and the
// hidden marker. Cost is left to the check run.
func (r *Renderer) ReviewBody(rv Review) (string, error) {
	if err := rv.validate(); err != nil {
		return "", fmt.Errorf("render.ReviewBody: %w", err)
	}
	var b body
	b.add(reviewLabel(rv))
	b.add(r.counts(rv))
	if len(rv.Outside) > 0 {
		b.add("### Not on a line of the diff")
		b.add(r.findingList(rv.Outside))
	}
	if len(rv.Resolved) > 0 {
		b.add("### Resolved since the last review")
		b.add(r.findingRefs(rv.Resolved, true))
	}
	if rv.SAST != nil {
		b.add("### Deterministic scanners")
		b.add(r.sastTable(rv.SAST))
	}
	if len(rv.Skipped) > 0 {
		b.add("### Not reviewed")
		b.add(skippedList(rv.Skipped))
	}
	if rv.AC != nil {
		met, unmet, unclear := acCounts(rv.AC)
		b.add(fmt.Sprintf("**Acceptance criteria** of issue #%d: %d met, %d unmet, %d unclear. The %s check run has the details.",
			rv.AC.Issue, met, unmet, unclear, Product))
	}
	if rv.Model != "" {
		b.add("*Model: " + code(rv.Model, maxModelBytes) + ".*")
	}
	b.add(rv.Marker.Comment())
	s := b.String()
	if len(s) > MaxBodyBytes {
		return "", fmt.Errorf("render.ReviewBody: %d bytes", len(s))
	}
	return s, nil
}

func reviewLabel(rv Review) string {
	var who []string
	if rv.Model != "" || rv.ModelFailed != "" {
		who = append(who, "an AI model")
	}
	if rv.SAST != nil {
		who = append(who, "deterministic scanners")
	}
	by := strings.Join(who, " and ")
	if by == "" {
		by = "no reviewer (both parts were off)"
	}
	return "🤖 **" + Product + " review** of " + code(short(rv.HeadSHA), 10) + " by " + by +
		". Findings are suggestions to check; this review never approves or blocks the pull request."
}

func (r *Renderer) counts(rv Review) string {
	all := append(append([]Finding(nil), rv.Inline...), rv.Outside...)
	var sb strings.Builder
	if len(all) == 0 {
		sb.WriteString("No new findings.")
	} else {
		var per []string
		for _, s := range severities {
			n := 0
			for _, f := range all {
				if f.Severity == s {
					n++
				}
			}
			if n > 0 {
				per = append(per, fmt.Sprintf("%d %s", n, severityWord(s)))
			}
		}
		sb.WriteString(fmt.Sprintf("**%s**: %s", plural(len(all), "new finding", "new findings"), strings.Join(per, ", ")))
		sb.WriteString(fmt.Sprintf(" (%d inline, %d below).", len(rv.Inline), len(rv.Outside)))
	}
	if rv.Repeated > 0 {
		sb.WriteString(" " + plural(rv.Repeated, "finding this pull request already showed is", "findings this pull request already showed are") + " not repeated.")
	}
	if len(rv.Resolved) > 0 {
		sb.WriteString(" " + plural(len(rv.Resolved), "earlier finding is", "earlier findings are") + " resolved.")
	}
	if rv.ModelFailed != "" {
		sb.WriteString("\n\n⚠ The AI review did not complete: " + r.san.Inline(rv.ModelFailed, maxDetailBytes) + ". Only what it found before that is shown.")
	}
	return sb.String()
}

// findingList lists findings with their location and badges (no bodies).
func (r *Renderer) findingList(fs []Finding) string {
	return capRows(len(fs), maxListed, func(i int) string {
		f := fs[i]
		l := "- " + severityLabel(f.Severity) + " · " + r.title(f.Title)
		if f.Path != "" {
			l += " — " + path(f.Path, f.Line, false)
		}
		return l + " · " + badges(f.Sources)
	}, budgetFindings, func(n int) string { return more(n, "findings") })
}

var toolStatusText = map[sast.Status]string{
	sast.StatusOK:       "✅ ran",
	sast.StatusPartial:  "⚠ partial",
	sast.StatusFailed:   "⚠ failed",
	sast.StatusMissing:  "⚠ missing from the scanner image",
	sast.StatusTimedOut: "⚠ timed out",
	sast.StatusNoFiles:  "no files it scans",
}

func (r *Renderer) sastTable(s *SAST) string {
	var b strings.Builder
	if s.Failed != "" {
		b.WriteString("⚠ The scanners did not complete: " + r.san.Inline(s.Failed, maxDetailBytes) + ". Their results are missing, not clean.\n\n")
	}
	if len(s.Tools) == 0 {
		return strings.TrimSpace(b.String())
	}
	b.WriteString("| Tool | Status | Findings |\n| --- | --- | ---: |\n")
	b.WriteString(capRows(len(s.Tools), maxListed, func(i int) string {
		t := s.Tools[i]
		st := toolStatusText[t.Status]
		if t.Incomplete && t.Status == sast.StatusOK {
			st = "⚠ incomplete"
		}
		if t.Detail != "" && (t.Status != sast.StatusOK || t.Incomplete) {
			st += ": " + r.san.Cell(t.Detail, maxDetailBytes)
		}
		n := "—"
		if t.Status == sast.StatusOK || t.Status == sast.StatusPartial {
			n = strconv.Itoa(t.Findings)
		}
		return "| " + codeCell(t.Tool, 60) + " | " + st + " | " + n + " |"
	}, budgetSAST, func(n int) string { return fmt.Sprintf("| … | %d more tools | |", n) }))
	if len(s.NotScanned) > 0 || s.NotScannedDropped > 0 {
		b.WriteString("\n\n**Not fully scanned** (the results above do not cover these lines):\n\n")
		cut := false
		b.WriteString(capRows(len(s.NotScanned), maxListed, func(i int) string {
			n := s.NotScanned[i]
			l := "- " + path(n.Path, 0, false)
			if n.Tool != "" {
				l += " (" + codeCell(n.Tool, 60) + ")"
			}
			return l + ": " + r.san.Inline(n.Reason, maxDetailBytes)
		}, budgetSkipped, func(n int) string { cut = true; return more(n+s.NotScannedDropped, "files") }))
		if !cut && s.NotScannedDropped > 0 {
			if len(s.NotScanned) > 0 {
				b.WriteString("\n")
			}
			b.WriteString(more(s.NotScannedDropped, "files"))
		}
	}
	return b.String()
}

func skippedList(ss []Skipped) string {
	return capRows(len(ss), maxListed, func(i int) string {
		return "- " + path(ss[i].Path, 0, false) + ": " + skipText[ss[i].Reason]
	}, budgetSkipped, func(n int) string { return more(n, "files") })
}
