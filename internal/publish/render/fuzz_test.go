package render

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/quavon/quavon/internal/sast"
)

// FuzzBodies puts arbitrary text into every untrusted field and holds each
// body to its contract: the one closing line (fix) or none (stacked), the
// marker as the only HTML, no suggestion, nothing else Inspect objects to,
// valid UTF-8 under GitHub's limit.
func FuzzBodies(f *testing.F) {
	f.Add(hostile, "FAIL\n```\nFixes #3 @x\n", "Crash @x #1", "src/`a`.go")
	f.Add("plain plan", "", "", "")
	r := newRenderer(f)
	f.Fuzz(func(t *testing.T, text, output, title, file string) { fuzzBodiesOnce(t, r, text, output, title, file) })
}

func fuzzBodiesOnce(t *testing.T, r *Renderer, text, output, title, file string) {
	{
		check := func(what, body string, limit int, closing []string, html []string, suggestions int) {
			t.Helper()
			if !utf8.ValidString(body) || len(body) > limit {
				t.Fatalf("%s: %d bytes, valid UTF-8 %v", what, len(body), utf8.ValidString(body))
			}
			rep := r.Sanitiser().Inspect(body)
			if strings.Join(rep.ClosingRefs, "|") != strings.Join(closing, "|") || strings.Join(rep.HTML, "|") != strings.Join(html, "|") ||
				rep.Suggestions != suggestions {
				t.Fatalf("%s: closing %q html %q suggestions %d\n%s", what, rep.ClosingRefs, rep.HTML, rep.Suggestions, body)
			}
			rep.ClosingRefs, rep.HTML, rep.Suggestions = nil, nil, 0
			if p := rep.Problems(); len(p) > 0 {
				t.Fatalf("%s: %q\n%s", what, p, body)
			}
		}
		run := []CommandRun{{Step: StepTest, Command: title, Outcome: OutcomeFailed, ExitCode: 1, Output: output}}
		pr, err := r.FixPullRequest(FixPR{Issue: 12, IssueTitle: title, Marker: marker, Model: title, Plan: text, Runs: run,
			Verified: Verified{Against: baseSHA}})
		if err != nil {
			t.Fatal(err)
		}
		check("fix", pr.Body, MaxBodyBytes, []string{"fixes #12"}, []string{marker.Comment()}, 0)
		if strings.ContainsAny(pr.Title, "\n@<>`[]*_/") {
			t.Fatalf("title %q", pr.Title)
		}
		st, err := r.ReviewFixPullRequest(ReviewFixPR{PullRequest: 5, Marker: marker, Model: title, Plan: text, Runs: run,
			Findings: []FindingRef{{Severity: sast.SeverityHigh, Title: title, Path: file, Line: 1}}})
		if err != nil {
			t.Fatal(err)
		}
		check("stacked", st.Body, MaxBodyBytes, nil, []string{marker.Comment()}, 0)
		fd := Finding{Severity: sast.SeverityMedium, Title: title, Body: text, Path: file, Line: 3, EndLine: 3, Suggestion: &output,
			Sources: []Source{{Kind: SourceScanner, Tool: file, RuleID: title}}}
		c, err := r.Comment(fd)
		if err != nil {
			t.Fatal(err)
		}
		check("comment", c, MaxBodyBytes, nil, nil, 1)
		rv := Review{Marker: marker, HeadSHA: headSHA, Model: title, ModelFailed: output, Inline: []Finding{fd}, Outside: []Finding{fd},
			Resolved: []FindingRef{{Severity: sast.SeverityLow, Title: text, Path: file}},
			SAST:     &SAST{Failed: text, Tools: []ToolRun{{Tool: file, Status: sast.StatusFailed, Detail: output}}},
			Skipped:  []Skipped{{Path: file, Reason: SkipBinary}},
			AC:       &AC{Issue: 12, Items: []Criterion{{Text: text, Status: ACUnclear, Note: output, Evidence: []Location{{Path: file}}}}}}
		body, err := r.ReviewBody(rv)
		if err != nil {
			t.Fatal(err)
		}
		check("review", body, MaxBodyBytes, nil, []string{marker.Comment()}, 0)
		out, err := r.CheckRun(rv)
		if err != nil {
			t.Fatal(err)
		}
		check("check", out.Summary, MaxCheckSummaryBytes, nil, nil, 0)
		msg, err := FixCommitMessage(FixCommit{Marker: marker, FindingTitles: []string{title, text, output}})
		if err != nil {
			t.Fatal(err)
		}
		if strings.ContainsAny(msg.String(), "@#<>`[]*_/&\\") || !CommitHasMarker(msg.String(), marker) {
			t.Fatalf("commit message %q", msg)
		}
	}
}
