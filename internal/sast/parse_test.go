package sast

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixtureRoot is the source root the fixtures were produced in (the
// sandbox's layout; see testdata/README.md).
const fixtureRoot = "/work/src"

// fixture returns the raw report testdata/reports/name.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "reports", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// fixtureReports maps each tool to its fixture file.
var fixtureReports = map[Tool]string{
	ToolASTGrep:  "ast-grep.jsonl",
	ToolGitleaks: "gitleaks.json",
	ToolBandit:   "bandit.json",
	ToolGosec:    "gosec.json",
	ToolESLint:   "eslint.json",
	ToolRuff:     "ruff.json",
}

func mustParse(t testing.TB, tool Tool, name string) Parsed {
	t.Helper()
	p, err := Parse(tool, fixture(t, name), fixtureRoot)
	if err != nil {
		t.Fatalf("Parse(%s, %s): %v", tool, name, err)
	}
	for _, f := range p.Findings {
		if err := f.Validate(); err != nil {
			t.Errorf("invalid finding %+v: %v", f, err)
		}
	}
	return p
}

// find returns the one finding of rule at path:line.
func find(t testing.TB, fs []Finding, rule, path string, line int) Finding {
	t.Helper()
	var got []Finding
	for _, f := range fs {
		if f.RuleID == rule && f.Path == path && f.StartLine == line {
			got = append(got, f)
		}
	}
	if len(got) != 1 {
		t.Fatalf("want one %s at %s:%d, got %d in %+v", rule, path, line, len(got), fs)
	}
	return got[0]
}

func TestParseFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tool       Tool
		file       string
		findings   int
		toolErrors []string
		want       Finding // one finding, checked field by field (Tool filled in)
	}{
		{ToolASTGrep, "ast-grep.jsonl", 9, nil, Finding{
			RuleID: "quavon-python-pickle-load", Severity: SeverityHigh, Path: "app/we ird.py",
			StartLine: 5, EndLine: 5, StartColumn: 12, EndColumn: 27, CWE: "CWE-502", Weakness: "insecure-deserialization",
			Message: "Data is unpickled; unpickling untrusted data runs arbitrary code.",
		}},
		{ToolASTGrep, "ast-grep-metadata.jsonl", 1, nil, Finding{
			RuleID: "quavon-python-pickle-load", Severity: SeverityHigh, Path: "app/we ird.py",
			StartLine: 5, EndLine: 5, StartColumn: 12, EndColumn: 27, CWE: "CWE-502", Weakness: "insecure-deserialization",
			Message: "Data is unpickled; unpickling untrusted data runs arbitrary code.",
		}},
		{ToolGitleaks, "gitleaks.json", 2, nil, Finding{
			RuleID: "generic-api-key", Severity: SeverityHigh, Path: "conf/settings.env",
			StartLine: 2, EndLine: 2, StartColumn: 2, EndColumn: 45, CWE: "CWE-798", Weakness: "hardcoded-secret",
			Message: "Possible secret (gitleaks rule generic-api-key): Detected a Generic API Key, potentially exposing access to various services and sensitive operations.",
		}},
		{ToolGitleaks, "gitleaks-absolute.json", 2, nil, Finding{
			RuleID: "generic-api-key", Severity: SeverityHigh, Path: "app/keys.py",
			StartLine: 1, EndLine: 1, StartColumn: 1, EndColumn: 51, CWE: "CWE-798", Weakness: "hardcoded-secret",
			Message: "Possible secret (gitleaks rule generic-api-key): Detected a Generic API Key, potentially exposing access to various services and sensitive operations.",
		}},
		{ToolBandit, "bandit.json", 8, []string{"app/broken.py: syntax error while parsing AST from file"}, Finding{
			RuleID: "B602", RuleName: "subprocess_popen_with_shell_equals_true", Severity: SeverityHigh,
			Path: "app/run.py", StartLine: 7, EndLine: 7, StartColumn: 12, EndColumn: 44, CWE: "CWE-78", Weakness: "command-injection",
			Message: "subprocess call with shell=True identified, security issue.",
			HelpURI: "https://bandit.readthedocs.io/en/1.7.10/plugins/b602_subprocess_popen_with_shell_equals_true.html",
		}},
		{ToolBandit, "bandit-1.6.2.json", 6, []string{"app/broken.py: syntax error while parsing AST from file"}, Finding{
			RuleID: "B403", RuleName: "blacklist", Severity: SeverityInfo, Path: "app/we ird.py",
			StartLine: 1, EndLine: 3, Weakness: "risky-import",
			Message: "Consider possible security implications associated with pickle module.",
			HelpURI: "https://bandit.readthedocs.io/en/latest/blacklists/blacklist_imports.html#b403-import-pickle",
		}},
		{ToolGosec, "gosec.json", 10, []string{
			`svc/cmd/tool/tool.go:3:8: could not import missing.example/dep (invalid package name: "")`,
			"svc/cmd/tool/tool.go:6:10: undefined: undefinedThing",
		}, Finding{
			RuleID: "G402", Severity: SeverityHigh, Path: "svc/multi/multi.go",
			StartLine: 12, EndLine: 14, StartColumn: 10, CWE: "CWE-295", Weakness: "insecure-tls",
			Message: "TLS MinVersion too low.", HelpURI: "https://cwe.mitre.org/data/definitions/295.html",
		}},
		{ToolESLint, "eslint.json", 4, []string{"app/web/broken.js:1:10: Parsing error: Unexpected token ("}, Finding{
			RuleID: "no-eval", Severity: SeverityHigh, Path: "app/web/app.js",
			StartLine: 5, EndLine: 5, StartColumn: 10, EndColumn: 14, CWE: "CWE-95", Weakness: "code-injection",
			Message: "eval can be harmful.", HelpURI: "https://eslint.org/docs/latest/rules/no-eval",
		}},
		{ToolRuff, "ruff.json", 6, []string{
			"app/broken.py:1:7: Expected a parameter or the end of the parameter list",
			"app/broken.py:1:8: Expected `)`, found newline",
		}, Finding{
			RuleID: "S602", Severity: SeverityHigh, Path: "app/run.py",
			StartLine: 7, EndLine: 7, StartColumn: 12, EndColumn: 27, CWE: "CWE-78", Weakness: "command-injection",
			Message: "`subprocess` call with `shell=True` identified, security issue",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			p := mustParse(t, tt.tool, tt.file)
			if len(p.Findings) != tt.findings {
				t.Errorf("%d findings, want %d: %+v", len(p.Findings), tt.findings, p.Findings)
			}
			if fmt.Sprint(p.ToolErrors) != fmt.Sprint(tt.toolErrors) {
				t.Errorf("tool errors\n got %q\nwant %q", p.ToolErrors, tt.toolErrors)
			}
			got := find(t, p.Findings, tt.want.RuleID, tt.want.Path, tt.want.StartLine)
			want := tt.want
			want.Tool = tt.tool
			if got != want {
				t.Errorf("finding\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestParseGosecLineRanges: gosec writes line as "12" or "12-14".
func TestParseGosecLineRanges(t *testing.T) {
	t.Parallel()
	p := mustParse(t, ToolGosec, "gosec.json")
	for _, c := range []struct {
		rule       string
		start, end int
	}{{"G304", 20, 22}, {"G112", 27, 29}, {"G702", 13, 13}} {
		f := find(t, p.Findings, c.rule, map[bool]string{true: "svc/main.go", false: "svc/multi/multi.go"}[c.rule == "G702"], c.start)
		if f.EndLine != c.end {
			t.Errorf("%s: lines %d-%d, want %d-%d", c.rule, f.StartLine, f.EndLine, c.start, c.end)
		}
	}
	// Numbers instead of strings are read too.
	raw := `{"Golang errors":{},"Issues":[{"severity":"LOW","confidence":"HIGH","rule_id":"G104","details":"d","file":"/work/src/a.go","line":7,"column":3}]}`
	p2, err := Parse(ToolGosec, []byte(raw), fixtureRoot)
	if err != nil || len(p2.Findings) != 1 || p2.Findings[0].StartLine != 7 || p2.Findings[0].StartColumn != 3 {
		t.Fatalf("numeric line: %+v %v", p2, err)
	}
}

// TestParseGitleaksNeverLeaksSecret: the unredacted report's Secret and
// Match appear nowhere in the parsed output.
func TestParseGitleaksNeverLeaksSecret(t *testing.T) {
	t.Parallel()
	raw := fixture(t, "gitleaks-unredacted.json")
	var leaks []struct{ Secret, Match string }
	if err := json.Unmarshal(raw, &leaks); err != nil {
		t.Fatal(err)
	}
	p := mustParse(t, ToolGitleaks, "gitleaks-unredacted.json")
	out, _ := json.Marshal(p)
	if len(p.Findings) != 2 || len(leaks) != 2 {
		t.Fatalf("findings %d, leaks %d", len(p.Findings), len(leaks))
	}
	for _, l := range leaks {
		if l.Secret == "" || l.Secret == "REDACTED" {
			t.Fatal("fixture is redacted; the test needs real secrets")
		}
		for _, s := range []string{l.Secret, l.Match} {
			if strings.Contains(string(out), s) {
				t.Errorf("parsed output contains %q: %s", s, out)
			}
		}
	}
	// A description quoting the secret is redacted too.
	hostile := `[{"RuleID":"r","Description":"key is s3cr3tvalue!","StartLine":1,"EndLine":1,"File":"a","Secret":"s3cr3tvalue!","Match":"k=s3cr3tvalue!"}]`
	p, err := Parse(ToolGitleaks, []byte(hostile), fixtureRoot)
	if err != nil || len(p.Findings) != 1 || strings.Contains(p.Findings[0].Message, "s3cr3t") {
		t.Fatalf("hostile description: %+v %v", p, err)
	}
}

// TestParseMalformed: a crashed tool's truncated or empty report, or
// trailing garbage, is an error; ast-grep's empty stream is no finding.
func TestParseMalformed(t *testing.T) {
	t.Parallel()
	for tool, name := range fixtureReports {
		raw := fixture(t, name)
		for _, bad := range [][]byte{raw[:len(raw)*2/3], append(append([]byte{}, raw...), `{"x":`...), []byte("   ")} {
			if tool == ToolASTGrep && len(strings.TrimSpace(string(bad))) == 0 {
				continue
			}
			if _, err := Parse(tool, bad, fixtureRoot); err == nil {
				t.Errorf("%s: no error for %q…", tool, clip(string(bad), 30))
			}
		}
	}
	if p, err := Parse(ToolASTGrep, nil, fixtureRoot); err != nil || len(p.Findings) != 0 {
		t.Errorf("ast-grep empty stream: %+v %v", p, err)
	}
	big := make([]byte, MaxReportBytes+1)
	if _, err := Parse(ToolRuff, big, fixtureRoot); !errors.Is(err, ErrReportTooLarge) {
		t.Errorf("oversized report: %v", err)
	}
	if _, err := Parse("semgrep", []byte("[]"), fixtureRoot); err == nil {
		t.Error("unknown tool parsed")
	}
	if _, err := Parse(ToolBandit, []byte(`{"errors":[]}`), fixtureRoot); err == nil {
		t.Error("bandit report without results parsed")
	}
}

// TestParsePaths: paths outside the root, with "..", NUL or empty are
// dropped and reported; absolute paths beneath the root are made relative.
func TestParsePaths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path string
		want string // "" = dropped
	}{
		{"/work/src/a/b.py", "a/b.py"},
		{"a/b.py", "a/b.py"},
		{"./a/b.py", "a/b.py"},
		{"/work/src2/a.py", ""},
		{"/etc/passwd", ""},
		{"/work/src/../etc/passwd", ""},
		{"../a.py", ""},
		{"a/../../b.py", ""},
		{"a//b.py", ""},
		{"a/./b.py", ""},
		{"", ""},
		{".", ""},
		{"/work/src", ""},
		{"/work/src/", ""},
		{"a\x00b.py", ""},
		{strings.Repeat("a/", 3000) + "b.py", ""},
	}
	for _, tt := range tests {
		raw, _ := json.Marshal([]map[string]any{{
			"code": "S101", "message": "m", "filename": tt.path,
			"location": map[string]int{"row": 1, "column": 1}, "end_location": map[string]int{"row": 1, "column": 2},
		}})
		p, err := Parse(ToolRuff, raw, "/work/src/")
		if err != nil {
			t.Fatalf("%q: %v", tt.path, err)
		}
		switch {
		case tt.want == "" && (len(p.Findings) != 0 || len(p.ToolErrors) != 1):
			t.Errorf("%q: not dropped: %+v", tt.path, p)
		case tt.want != "" && (len(p.Findings) != 1 || p.Findings[0].Path != tt.want):
			t.Errorf("%q: got %+v, want path %q", tt.path, p, tt.want)
		}
	}
}

// TestParseSanitises: messages lose control and bidi characters and
// invalid UTF-8, and are clipped; rule ids are clipped; bad lines are
// dropped; columns are kept only when they make sense.
func TestParseSanitises(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", MaxMessageBytes)
	msg := "line1\nline2\x1b[31m red \u202Eevil\u202C \xff" + long
	raw, _ := json.Marshal([]map[string]any{
		{"code": "S101", "message": msg, "filename": "a.py", "url": "javascript:alert(1)",
			"location": map[string]int{"row": 3, "column": 5}, "end_location": map[string]int{"row": 2, "column": 1}},
		{"code": "S" + strings.Repeat("1", 300), "message": "m", "filename": "a.py",
			"location": map[string]int{"row": 1, "column": 1}, "end_location": map[string]int{"row": 1, "column": 1}},
		{"code": "S102", "message": "zero line", "filename": "a.py",
			"location": map[string]int{"row": 0, "column": 1}, "end_location": map[string]int{"row": 0, "column": 1}},
	})
	p, err := Parse(ToolRuff, raw, fixtureRoot)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Findings) != 1 {
		t.Fatalf("findings %+v", p.Findings)
	}
	f := p.Findings[0]
	if len(f.Message) > MaxMessageBytes || strings.ContainsAny(f.Message, "\n\x1b\u202E\u202C") ||
		!strings.HasPrefix(f.Message, "line1 line2 [31m red evil \uFFFD") {
		t.Errorf("message not sanitised: %q…", clip(f.Message, 60))
	}
	if f.HelpURI != "" || f.StartLine != 3 || f.EndLine != 3 || f.EndColumn != 0 {
		t.Errorf("finding %+v", f)
	}
	// The 300-digit code is no rule code: a tool error. Line 0: dropped.
	if len(p.ToolErrors) != 2 {
		t.Errorf("tool errors %q", p.ToolErrors)
	}
}

func TestCleanRelPath(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"a/\xffb.py", "a\x00", "", "/a", "..", "a/..", "a/"} {
		if got, err := cleanRelPath(p); err == nil {
			t.Errorf("cleanRelPath(%q) = %q, want error", p, got)
		}
	}
	for _, p := range []string{"a", "a/b.go", "a\tb.go", "we ird.py", "..a/b"} {
		if got, err := cleanRelPath(p); err != nil || got != p {
			t.Errorf("cleanRelPath(%q) = %q, %v", p, got, err)
		}
	}
}

// TestParseFindingCap: at most MaxParsedFindings findings are kept, and
// the report says the rest were ignored.
func TestParseFindingCap(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("[")
	for i := range MaxParsedFindings + 10 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"code":"S101","message":"m","filename":"a.py","location":{"row":%d,"column":1},"end_location":{"row":%d,"column":2}}`, i+1, i+1)
	}
	b.WriteString("]")
	p, err := Parse(ToolRuff, []byte(b.String()), fixtureRoot)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Findings) != MaxParsedFindings || len(p.ToolErrors) != 1 || !strings.Contains(p.ToolErrors[0], "ignored") {
		t.Fatalf("%d findings, tool errors %q", len(p.Findings), p.ToolErrors)
	}
}
