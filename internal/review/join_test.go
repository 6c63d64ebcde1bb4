package review

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/sast"
)

var headFiles = map[string]string{
	"app.py": "import os\n\ndef run(cmd):\n    return os.system(cmd)\n\ndef ok():\n    return 1\n",
}

func readHead(p string) ([]byte, bool) {
	s, ok := headFiles[p]
	return []byte(s), ok
}

func TestVerify(t *testing.T) {
	t.Parallel()
	changed := sast.ChangedLines{"app.py": {{Start: 3, End: 4}}}
	good := Candidate{Path: "app.py", StartLine: 4, EndLine: 4, Severity: "high", Category: "security",
		Title: "Shell injection", Body: "cmd reaches a shell", Quote: "return   os.system(cmd)"}
	f, err := Verify(good, changed, readHead)
	if err != nil {
		t.Fatalf("good finding dropped: %v", err)
	}
	if f.Source != SourceLLM || len(f.Fingerprint) != 32 {
		t.Errorf("finding %+v", f)
	}
	tests := []struct {
		name string
		edit func(*Candidate)
		want DropReason
	}{
		{"severity outside the enum", func(c *Candidate) { c.Severity = "blocker" }, DropSeverity},
		{"category outside the enum", func(c *Candidate) { c.Category = "approve" }, DropCategory},
		{"empty title", func(c *Candidate) { c.Title = "  " }, DropTitle},
		{"file not in the diff", func(c *Candidate) { c.Path = "other.py" }, DropNotInDiff},
		{"unchanged line", func(c *Candidate) { c.StartLine, c.EndLine, c.Quote = 7, 7, "return 1" }, DropUnchanged},
		{"wrong quote", func(c *Candidate) { c.Quote = "subprocess.call(cmd, shell=True)" }, DropQuote},
		{"quote from another line", func(c *Candidate) { c.Quote = "def run(cmd):" }, DropQuote},
		{"empty quote", func(c *Candidate) { c.Quote = " \n " }, DropQuote},
		{"past the end", func(c *Candidate) { c.StartLine, c.EndLine = 4, 99 }, DropLines},
		{"reversed", func(c *Candidate) { c.StartLine, c.EndLine = 4, 3 }, DropLines},
		{"zero", func(c *Candidate) { c.StartLine, c.EndLine = 0, 0 }, DropLines},
	}
	for _, tt := range tests {
		c := good
		tt.edit(&c)
		_, err := Verify(c, changed, readHead)
		var ve *VerifyError
		if !errors.As(err, &ve) || ve.Reason != tt.want {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.want)
		}
	}
	// The fingerprint does not depend on lines, wording or severity.
	moved := good
	moved.StartLine, moved.EndLine, moved.Title, moved.Severity = 3, 4, "other words", "low"
	g, err := Verify(moved, changed, readHead)
	if err != nil || g.Fingerprint != f.Fingerprint {
		t.Errorf("moved finding: %v, fingerprint %s vs %s", err, g.Fingerprint, f.Fingerprint)
	}
}

func det(tool sast.Tool, rule, cwe string, line int, sev sast.Severity, fp string) sast.Finding {
	return sast.Finding{Tool: tool, RuleID: rule, CWE: cwe, Path: "app.py", StartLine: line, EndLine: line, Severity: sev,
		Message: string(tool) + " says", Fingerprint: fp}
}

func TestJoin(t *testing.T) {
	t.Parallel()
	scanners := []sast.Finding{
		det(sast.ToolBandit, "B605", "CWE-78", 4, sast.SeverityHigh, strings.Repeat("b", 32)),
		det(sast.ToolRuff, "S605", "", 4, sast.SeverityMedium, strings.Repeat("a", 32)),
		det(sast.ToolASTGrep, "py-style", "", 4, sast.SeverityLow, strings.Repeat("c", 32)),   // no weakness: alone
		det(sast.ToolBandit, "B605", "CWE-78", 9, sast.SeverityHigh, strings.Repeat("d", 32)), // other line: alone
	}
	model := []Finding{
		{Fingerprint: strings.Repeat("e", 32), Source: SourceLLM, Path: "app.py", StartLine: 4, EndLine: 4, Severity: "critical",
			Category: "security", Title: "Shell injection", Body: "model says", Quote: "os.system(cmd)"},
		{Fingerprint: strings.Repeat("f", 32), Source: SourceLLM, Path: "app.py", StartLine: 4, EndLine: 4, Severity: "medium",
			Category: "bug", Title: "Return value", Quote: "os.system(cmd)"},
	}
	got := Join(model, scanners)
	if len(got) != 4 {
		t.Fatalf("%d findings, want 4: %+v", len(got), got)
	}
	top := got[0]
	if top.Source != SourceSAST || !slices.Equal(top.Tools, []string{"bandit", "ruff", ToolLLM}) || top.Weakness != "CWE-78" ||
		top.Severity != "critical" || top.Fingerprint != strings.Repeat("a", 32) || !strings.Contains(top.Body, "model says") {
		t.Errorf("grouped finding %+v", top)
	}
	var bug int
	for _, f := range got {
		if f.Source == SourceLLM {
			bug++
			if f.Category != "bug" || f.Title != "Return value" {
				t.Errorf("model finding altered: %+v", f)
			}
		}
	}
	if bug != 1 {
		t.Errorf("%d model findings kept alone, want 1", bug)
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	f := func(fp, quote string, src Source) Finding {
		return Finding{Fingerprint: strings.Repeat(fp, 32), Source: src, Path: "app.py", StartLine: 4, EndLine: 4, Severity: "high",
			Quote: quote, Tools: []string{"bandit"}}
	}
	current := []Finding{f("1", "os.system(cmd)", SourceLLM), f("2", "os.system(cmd)", SourceLLM), f("3", "x", SourceLLM)}
	shown := map[string]FindingStatus{strings.Repeat("1", 32): FindingPosted, strings.Repeat("2", 32): FindingDismissed}
	prev := []StoredFinding{
		{Finding: withStatus(f("1", "os.system(cmd)", SourceLLM), FindingPosted)},
		{Finding: withStatus(f("4", "return 1", SourceLLM), FindingPosted)},           // still there: carried over
		{Finding: withStatus(f("5", "subprocess.call(x)", SourceLLM), FindingPosted)}, // code gone: resolved
		{Finding: withStatus(f("6", "", SourceSAST), FindingPosted)},                  // bandit ran clean: resolved
		{Finding: withStatus(gosec(f("7", "", SourceSAST)), FindingPosted)},           // gosec failed: stays
		{Finding: withStatus(f("8", "return 1", SourceLLM), FindingNew)},              // never published: new
	}
	c := Classify(current, shown, prev, Head{Read: readHead, ScannedClean: func(tool, p string) bool { return tool == "bandit" }})
	fps := func(fs []Finding) string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Fingerprint[:1])
		}
		return strings.Join(out, ",")
	}
	for name, got := range map[string][2]string{
		"new":       {fps(c.New), "3,8"},
		"repeated":  {fps(c.Repeated), "1,4,7"},
		"dismissed": {fps(c.Dismissed), "2"},
		"resolved":  {fps(c.Resolved), "5,6"},
	} {
		if got[0] != got[1] {
			t.Errorf("%s: %s, want %s", name, got[0], got[1])
		}
	}
	if n := len(c.All()); n != 8 {
		t.Errorf("All: %d", n)
	}
}

func gosec(f Finding) Finding { f.Tools = []string{"gosec"}; return f }

func withStatus(f Finding, s FindingStatus) Finding { f.Status = s; return f }
