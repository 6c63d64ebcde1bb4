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

var byoFiles = BYOFiles{Files: []string{"app.py", "pkg/a.go"}, Src: map[string]string{"pkg/a.go": "pkg/a.go", "pkg/b.go": "pkg/b.go"}}

func readBYOFixture(t testing.TB) []byte {
	raw, err := os.ReadFile(filepath.Join("testdata", "reports", "byo.sarif"))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestParseBYOSARIF(t *testing.T) {
	p, err := ParseBYOSARIF(BYOTool("acme-lint"), readBYOFixture(t), byoFiles)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.ToolErrors) != 0 {
		t.Fatalf("tool errors %q", p.ToolErrors)
	}
	got := map[string]Finding{}
	for _, f := range p.Findings {
		got[f.RuleID] = f
		if f.Tool != "byo:acme-lint" {
			t.Errorf("tool %q", f.Tool)
		}
	}
	want := []struct {
		rule, path string
		start, end int
		sev        Severity
		cwe        string
	}{
		{"ACME001", "app.py", 5, 5, SeverityHigh, "CWE-78"}, // security-severity 8.8 over level warning
		{"ACME002", "pkg/a.go", 3, 4, SeverityHigh, ""},     // src/ through uriBaseId WORK
		{"ACME003", "pkg/a.go", 1, 1, SeverityInfo, ""},     // artifacts[0], level none
		{"ACME004", "app.py", 2, 2, SeverityMedium, "CWE-89"},
	}
	if len(p.Findings) != len(want) {
		t.Fatalf("%d findings, want %d: %+v", len(p.Findings), len(want), p.Findings)
	}
	for _, w := range want {
		f, ok := got[w.rule]
		if !ok || f.Path != w.path || f.StartLine != w.start || f.EndLine != w.end || f.Severity != w.sev || f.CWE != w.cwe {
			t.Errorf("%s: %+v, want %+v", w.rule, f, w)
		}
	}
	if f := got["ACME001"]; f.RuleName != "ShellInjection" || f.HelpURI != "https://acme.example/rules/ACME001" || f.StartColumn != 12 {
		t.Errorf("ACME001 details %+v", f)
	}
}

// sarifWith is a log of one run whose results are the given JSON objects.
func sarifWith(results ...string) []byte {
	return []byte(`{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"x"}},"originalUriBaseIds":{"EVIL":{"uri":"file:///etc/"},"CHAIN":{"uri":"x","uriBaseId":"EVIL"}},"results":[` +
		strings.Join(results, ",") + `]}]}`)
}

func resultAt(uri string, line int) string {
	u, _ := json.Marshal(uri)
	return fmt.Sprintf(`{"ruleId":"R","message":{"text":"m"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":%s},"region":{"startLine":%d}}}]}`, u, line)
}

// Every location that is not a file of the snapshot is dropped and said;
// nothing of it reaches a finding.
func TestParseBYOSARIFHostileLocations(t *testing.T) {
	for _, uri := range []string{
		"../etc/passwd", "/etc/passwd", "/work", "/work/../etc/passwd", "changed/0/../../../etc/passwd",
		"%2e%2e/%2e%2e/etc/passwd", "file://evil.example/work/changed/0/f.py", "https://evil.example/changed/0/f.py",
		"changed/9/f.py", "changed/00/f.py", "changed/x/f.py", "scan-request.json", "src/not/laid/out.go",
		"changed/0/f.py?q=1", "changed/0/f.py#frag", "file:changed/0/f.py", "javascript:alert(1)", "changed\x00/0/f.py",
		"//work/changed/0/f.py", "",
	} {
		p, err := ParseBYOSARIF(BYOTool("x"), sarifWith(resultAt(uri, 1)), byoFiles)
		if err != nil {
			t.Fatalf("%q: %v", uri, err)
		}
		if len(p.Findings) != 0 || len(p.ToolErrors) != 1 {
			t.Errorf("%q: findings %+v, tool errors %q", uri, p.Findings, p.ToolErrors)
		}
	}
	for _, r := range []string{
		`{"ruleId":"R","locations":[{"physicalLocation":{"artifactLocation":{"uri":"x","uriBaseId":"EVIL"},"region":{"startLine":1}}}]}`,
		`{"ruleId":"R","locations":[{"physicalLocation":{"artifactLocation":{"uri":"x","uriBaseId":"CHAIN"},"region":{"startLine":1}}}]}`,
		`{"ruleId":"R","locations":[{"physicalLocation":{"artifactLocation":{"uri":"x","uriBaseId":"NOPE"},"region":{"startLine":1}}}]}`,
		`{"ruleId":"R","locations":[{"physicalLocation":{"artifactLocation":{"uri":"changed/0/f.py"}}}]}`,
		`{"ruleId":"R","locations":[{"physicalLocation":{"artifactLocation":{"uri":"changed/0/f.py"},"region":{"startLine":0}}}]}`,
		`{"ruleId":"R","locations":[{"physicalLocation":{"artifactLocation":{"uri":"changed/0/f.py"},"region":{"startLine":1073741825}}}]}`,
		`{"ruleId":"R","locations":[]}`,
		`{"ruleId":"","locations":[{"physicalLocation":{"artifactLocation":{"uri":"changed/0/f.py"},"region":{"startLine":1}}}]}`,
		`{"ruleId":"R","locations":[{"physicalLocation":{"artifactLocation":{"index":5},"region":{"startLine":1}}}]}`,
		`"not an object"`,
	} {
		p, err := ParseBYOSARIF(BYOTool("x"), sarifWith(r), byoFiles)
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		if len(p.Findings) != 0 || len(p.ToolErrors) != 1 {
			t.Errorf("%s: findings %+v, tool errors %q", r, p.Findings, p.ToolErrors)
		}
	}
}

func TestParseBYOSARIFRefused(t *testing.T) {
	big := append([]byte(`{"version":"2.1.0","runs":[],"pad":"`), make([]byte, MaxBYOSARIFBytes)...)
	manyRuns := `{"version":"2.1.0","runs":[` + strings.Repeat(`{},`, MaxSARIFRuns) + `{}]}`
	for name, raw := range map[string][]byte{
		"empty": nil, "not json": []byte("not json"), "two documents": []byte(`{"version":"2.1.0","runs":[]} {}`),
		"version 2.0.0": []byte(`{"version":"2.0.0","runs":[]}`), "no version": []byte(`{"runs":[]}`),
		"no runs": []byte(`{"version":"2.1.0"}`), "runs not an array": []byte(`{"version":"2.1.0","runs":{}}`),
		"too large": big, "too many runs": []byte(manyRuns), "array": []byte(`[]`),
	} {
		if _, err := ParseBYOSARIF(BYOTool("x"), raw, byoFiles); !errors.Is(err, ErrSARIF) {
			t.Errorf("%s: %v, want ErrSARIF", name, err)
		}
	}
	if _, err := ParseBYOSARIF("bandit", []byte(`{"version":"2.1.0","runs":[]}`), byoFiles); err == nil {
		t.Error("a built-in tool's name was taken as a BYO tool")
	}
}

// Text is sanitised and clipped; results past the cap are ignored and said.
func TestParseBYOSARIFCaps(t *testing.T) {
	long := strings.Repeat("x", 3*MaxMessageBytes)
	r := fmt.Sprintf(`{"ruleId":"R\u202e1","message":{"text":"a\u0000b\u2066c%s"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"changed/0/f.py"},"region":{"startLine":1}}}]}`, long)
	p, err := ParseBYOSARIF(BYOTool("x"), sarifWith(r), byoFiles)
	if err != nil || len(p.Findings) != 1 {
		t.Fatalf("%v %+v", err, p)
	}
	if f := p.Findings[0]; len(f.Message) > MaxMessageBytes || strings.ContainsAny(f.Message, "\x00\u2066") || strings.Contains(f.RuleID, "\u202e") {
		t.Errorf("unsanitised: %q %q", f.RuleID, f.Message[:40])
	}
	many := make([]string, MaxBYOResults+5)
	for i := range many {
		many[i] = resultAt("changed/0/f.py", i+1)
	}
	p, err = ParseBYOSARIF(BYOTool("x"), sarifWith(many...), byoFiles)
	if err != nil || len(p.Findings) != MaxBYOResults || len(p.ToolErrors) != 1 {
		t.Fatalf("%v: %d findings, errors %q", err, len(p.Findings), p.ToolErrors)
	}
}

// NormaliseBYO keeps only results on changed lines, drops results past
// the file's end, and reports a run that is not ok on every file.
func TestNormaliseBYO(t *testing.T) {
	src := map[string]string{"app.py": "a\nb\nc\nd\ne\nf\n", "pkg/a.go": "package pkg\n\nfunc A() {}\nfunc B() {}\n"}
	in := Input{Files: byoFiles.Files, Changed: ChangedLines{"app.py": {{Start: 5, End: 5}}, "pkg/a.go": {{Start: 3, End: 4}}},
		Source: func(p string) ([]byte, bool) { s, ok := src[p]; return []byte(s), ok }}
	run := BYORun{Tool: BYOTool("acme-lint"), Status: StatusOK, SARIF: readBYOFixture(t), Files: byoFiles}
	rep := NormaliseBYO(in, run, Options{})
	var rules []string
	for _, f := range rep.Findings {
		rules = append(rules, f.RuleID)
		if f.Fingerprint == "" {
			t.Errorf("no fingerprint: %+v", f)
		}
	}
	// ACME003 (line 1) and ACME004 (line 2) are outside the change.
	if strings.Join(rules, ",") != "ACME001,ACME002" || rep.OutsideChange != 2 || rep.Tools[0].Status != StatusOK || rep.Incomplete() {
		t.Fatalf("findings %v, outside %d, tools %+v", rules, rep.OutsideChange, rep.Tools)
	}

	past := run
	past.SARIF = sarifWith(resultAt("changed/0/f.py", 5), resultAt("changed/0/f.py", 500))
	rep = NormaliseBYO(in, past, Options{})
	if len(rep.Findings) != 1 || rep.Tools[0].Status != StatusPartial || len(rep.Tools[0].Errors) != 1 {
		t.Fatalf("past the end: %+v %+v", rep.Findings, rep.Tools)
	}

	for _, st := range []Status{StatusFailed, StatusMissing, StatusTimedOut} {
		r := NormaliseBYO(in, BYORun{Tool: BYOTool("acme-lint"), Status: st, Error: "why", Files: byoFiles}, Options{})
		if len(r.Findings) != 0 || r.Tools[0].Status != st || len(r.NotScanned) != 2 || !r.Incomplete() {
			t.Errorf("%s: %+v", st, r)
		}
	}
	bad := run
	bad.SARIF = []byte("{")
	if r := NormaliseBYO(in, bad, Options{}); r.Tools[0].Status != StatusFailed || len(r.Findings) != 0 || !r.Incomplete() {
		t.Errorf("malformed log: %+v", r.Tools)
	}
}

func FuzzParseBYOSARIF(f *testing.F) {
	raw := readBYOFixture(f)
	f.Add(raw)
	f.Add(raw[:len(raw)/2])
	f.Add(sarifWith(resultAt("../x", 1), resultAt("changed/0/f.py", 3)))
	f.Add([]byte(`{"version":"2.1.0","runs":[]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		tool := BYOTool("fuzz")
		p, err := ParseBYOSARIF(tool, raw, byoFiles)
		if err != nil {
			if len(p.Findings) != 0 {
				t.Fatal("findings with an error")
			}
			return
		}
		if len(p.Findings) > MaxBYOResults || len(p.ToolErrors) > MaxToolErrors+1 {
			t.Fatalf("%d findings, %d tool errors", len(p.Findings), len(p.ToolErrors))
		}
		for _, f := range p.Findings {
			if f.Tool != tool || f.validateFields() != nil {
				t.Fatalf("invalid finding %+v", f)
			}
			if f.Path != "app.py" && f.Path != "pkg/a.go" && f.Path != "pkg/b.go" {
				t.Fatalf("path %q is not a file of the snapshot", f.Path)
			}
		}
	})
}

// A BYO scanner's findings get a run of their own in the uploaded SARIF,
// under its tool name; one that did not finish is a notification.
func TestSARIFWithBYOScanners(t *testing.T) {
	rep := Report{Tools: []ToolRun{{Tool: BYOTool("acme"), Status: StatusOK}, {Tool: BYOTool("broken"), Status: StatusFailed, Error: "exit 3"}},
		Findings: []Finding{{Tool: BYOTool("acme"), RuleID: "ACME-SHELL", Severity: SeverityHigh, Path: "app.py", StartLine: 5, EndLine: 5,
			Message: "m", CWE: "CWE-78", Fingerprint: "0123456789abcdef0123456789abcdef"}},
		NotScanned: []NotScanned{{Path: "app.py", Tool: BYOTool("broken"), Reason: "failed: exit 3"}}}
	out, err := SARIF(rep, SARIFOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct{ Name string } `json:"driver"`
			} `json:"tool"`
			Results []struct {
				RuleID string `json:"ruleId"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(out, &log); err != nil {
		t.Fatal(err)
	}
	if len(log.Runs) != 2 || log.Runs[0].Tool.Driver.Name != "byo:acme" || len(log.Runs[0].Results) != 1 ||
		log.Runs[1].Tool.Driver.Name != "quavon" || !strings.Contains(string(out), "byo:broken did not finish") {
		t.Errorf("SARIF %s", out)
	}
}
