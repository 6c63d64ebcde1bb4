package sast

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/sast/sariftest"
)

// fuzzParse fuzzes one tool's parser, seeded with its real reports: it
// must not panic, whatever it returns must be within the caps, and the
// tool's compaction (compact.go) must not change what it returns.
func fuzzParse(f *testing.F, tool Tool, seeds ...string) {
	for _, s := range seeds {
		raw, err := os.ReadFile(filepath.Join("testdata", "reports", s))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
		f.Add(raw[:len(raw)/2])
	}
	f.Add([]byte(""))
	f.Add([]byte("[]"))
	f.Add([]byte("{}"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		compactKeepsParse(t, tool, raw)
		for _, root := range []string{fixtureRoot, "/", ""} {
			p, err := Parse(tool, raw, root)
			if err != nil {
				if len(p.Findings) != 0 {
					t.Fatal("findings with an error")
				}
				continue
			}
			checkParsed(t, tool, p)
		}
	})
}

func checkParsed(t *testing.T, tool Tool, p Parsed) {
	t.Helper()
	if len(p.Findings) > MaxParsedFindings || len(p.ToolErrors) > MaxToolErrors+1 {
		t.Fatalf("%d findings, %d tool errors", len(p.Findings), len(p.ToolErrors))
	}
	for _, e := range p.ToolErrors {
		if len(e) > MaxToolErrorBytes {
			t.Fatalf("tool error of %d bytes", len(e))
		}
	}
	for _, f := range p.Findings {
		if f.Tool != tool {
			t.Fatalf("tool %q", f.Tool)
		}
		if err := f.Validate(); err != nil {
			t.Fatalf("invalid finding %+v: %v", f, err)
		}
	}
}

func FuzzParseASTGrep(f *testing.F) {
	fuzzParse(f, ToolASTGrep, "ast-grep.jsonl", "ast-grep-metadata.jsonl")
}

func FuzzParseGitleaks(f *testing.F) {
	fuzzParse(f, ToolGitleaks, "gitleaks.json", "gitleaks-unredacted.json", "gitleaks-absolute.json")
}

func FuzzParseBandit(f *testing.F) {
	fuzzParse(f, ToolBandit, "bandit.json", "bandit-1.6.2.json")
}

func FuzzParseGosec(f *testing.F) {
	f.Add([]byte(`{"Issues":[{"severity":"HIGH","rule_id":"G1","details":"d","file":"/work/src/a.go","line":"3-1","column":"x"}]}`))
	fuzzParse(f, ToolGosec, "gosec.json")
}

func FuzzParseESLint(f *testing.F) {
	fuzzParse(f, ToolESLint, "eslint.json")
}

func FuzzParseRuff(f *testing.F) {
	fuzzParse(f, ToolRuff, "ruff.json")
}

// FuzzSARIF: the SARIF of any parsed report is valid JSON and valid
// SARIF 2.1.0.
func FuzzSARIF(f *testing.F) {
	for _, s := range []string{"ruff.json"} {
		raw, err := os.ReadFile(filepath.Join("testdata", "reports", s))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw, "quavon/sast/")
	}
	f.Add([]byte(`[{"code":"S1","message":"\u0000<script>\"","filename":"a b/%c:d","location":{"row":1,"column":9},"end_location":{"row":1,"column":2}}]`), "")
	f.Fuzz(func(t *testing.T, raw []byte, automation string) {
		p, err := Parse(ToolRuff, raw, fixtureRoot)
		if err != nil {
			return
		}
		changed := ChangedLines{}
		for _, fd := range p.Findings {
			changed[fd.Path] = []LineRange{{1, maxLine}}
		}
		in := Input{Manifest: Manifest{Root: fixtureRoot, Tools: []ToolRun{{Tool: ToolRuff, Status: StatusOK, Version: automation}}},
			Outputs: map[Tool][]byte{ToolRuff: raw}, Changed: changed,
			Source: func(string) ([]byte, bool) { return raw, true }}
		rep := Normalise(in, Options{Profile: ProfileAudit, MaxFindings: 100})
		// The review profile keeps a subset, each finding at its own or a
		// lower severity, and counts the rest.
		review := Normalise(in, Options{MaxFindings: 100, TestPath: func(p string) bool { return len(p)%2 == 0 }})
		if len(rep.Findings) < 100 && len(review.Findings)+review.Muted != len(rep.Findings) {
			t.Fatalf("review %d + muted %d != audit %d", len(review.Findings), review.Muted, len(rep.Findings))
		}
		for _, g := range GroupFindings(review.Findings) {
			if len(g.Findings) == 0 || g.Path == "" || !g.Severity.Valid() {
				t.Fatalf("group %+v", g)
			}
		}
		out, err := SARIF(rep, SARIFOptions{AutomationID: automation, Source: in.Source})
		if err != nil {
			if strings.Contains(err.Error(), "automation id") {
				return
			}
			t.Fatal(err)
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON: %s", out)
		}
		sariftest.Validate(t, out)
	})
}

// FuzzGitleaksSkipped: the log is sandbox output; notes stay within the
// cap, name valid indexes and carry sanitised, bounded text.
func FuzzGitleaksSkipped(f *testing.F) {
	f.Add([]byte("9:20AM DBG skipping binary file mime_type=application/zip path=0/f\n"))
	f.Add([]byte("9:20AM ERR x path=99999999999/f\n\x1b[0m WRN skipping path=3/f.yml"))
	f.Fuzz(func(t *testing.T, log []byte) {
		notes := GitleaksSkipped(log, 5)
		if len(notes) > 5 {
			t.Fatalf("%d notes", len(notes))
		}
		for _, n := range notes {
			if n.File < 0 || len(n.Reason) > 220 || strings.ContainsFunc(n.Reason, isStripped) {
				t.Fatalf("%+v", n)
			}
		}
	})
}
