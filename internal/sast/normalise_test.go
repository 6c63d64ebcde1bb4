package sast

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fixtureSource reads the head version of the fixtures' source tree.
func fixtureSource(p string) ([]byte, bool) {
	data, err := os.ReadFile(filepath.Join("testdata", "src", filepath.FromSlash(p)))
	return data, err == nil
}

// fixtureVersions are the versions of the tools that wrote the fixtures.
var fixtureVersions = map[Tool]string{
	ToolASTGrep: "0.51.1", ToolGitleaks: "8.30.1", ToolBandit: "1.7.10",
	ToolGosec: "2.30.0", ToolESLint: "9.39.5", ToolRuff: "0.17.4",
}

// fixtureInput is every fixture report with status ok.
func fixtureInput(t testing.TB, changed ChangedLines) Input {
	t.Helper()
	in := Input{Manifest: Manifest{Version: 1, Root: fixtureRoot}, Outputs: map[Tool][]byte{},
		Changed: changed, Source: fixtureSource}
	for _, tool := range Tools {
		in.Manifest.Tools = append(in.Manifest.Tools, ToolRun{Tool: tool, Status: StatusOK, Version: fixtureVersions[tool],
			Output: OutputArtefact(tool)})
		in.Outputs[tool] = fixture(t, fixtureReports[tool])
	}
	return in
}

// rf is a synthetic Ruff diagnostic.
type rf struct {
	code      string
	file      string
	line, end int
	msg       string
}

func ruffReport(t testing.TB, fs ...rf) []byte {
	t.Helper()
	var out []map[string]any
	for _, f := range fs {
		end := f.end
		if end == 0 {
			end = f.line
		}
		out = append(out, map[string]any{"code": f.code, "message": cmpOr(f.msg, "msg "+f.code), "filename": "/work/src/" + f.file,
			"location": map[string]int{"row": f.line, "column": 1}, "end_location": map[string]int{"row": end, "column": 2}})
	}
	raw, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ruffInput is a manifest with Ruff alone and the given report.
func ruffInput(raw []byte, changed ChangedLines, src map[string]string) Input {
	in := Input{Manifest: Manifest{Root: fixtureRoot, Tools: []ToolRun{{Tool: ToolRuff, Status: StatusOK}}},
		Outputs: map[Tool][]byte{ToolRuff: raw}, Changed: changed}
	if src != nil {
		in.Source = func(p string) ([]byte, bool) { s, ok := src[p]; return []byte(s), ok }
	}
	return in
}

func TestNormaliseFixtures(t *testing.T) {
	t.Parallel()
	// The change: app/run.py line 7 (shell=True) and svc/multi/multi.go
	// lines 20-22 (os.ReadFile), nothing else.
	changed := ChangedLines{"app/run.py": {{7, 7}}, "svc/multi/multi.go": {{20, 22}}}
	in := fixtureInput(t, changed)
	total := 0
	for tool, name := range fixtureReports {
		p, err := Parse(tool, fixture(t, name), fixtureRoot)
		if err != nil {
			t.Fatal(err)
		}
		total += len(p.Findings)
	}
	rep := Normalise(in, Options{Profile: ProfileAudit, ContextLines: DefaultContextLines})
	if len(rep.Tools) != len(Tools) {
		t.Fatalf("tools %+v", rep.Tools)
	}
	// The fixtures hold files the tools could not parse: those tools are
	// partial, and the files are listed.
	for _, tr := range rep.Tools {
		want := StatusPartial
		if tr.Tool == ToolASTGrep || tr.Tool == ToolGitleaks {
			want = StatusOK
		}
		if tr.Status != want {
			t.Errorf("%s: status %s (%s), want %s", tr.Tool, tr.Status, tr.Error, want)
		}
	}
	notScanned := map[NotScanned]bool{}
	for _, n := range rep.NotScanned {
		notScanned[NotScanned{Path: n.Path, Tool: n.Tool}] = true
	}
	for _, n := range []NotScanned{
		{Path: "app/broken.py", Tool: ToolBandit}, {Path: "app/broken.py", Tool: ToolRuff},
		{Path: "app/web/broken.js", Tool: ToolESLint}, {Path: "svc/cmd/tool/tool.go", Tool: ToolGosec},
	} {
		if !notScanned[n] {
			t.Errorf("%s not listed as not scanned by %s: %+v", n.Path, n.Tool, rep.NotScanned)
		}
	}
	if !rep.Incomplete() {
		t.Error("a report with partial tools is not incomplete")
	}
	errs := map[Tool][]string{}
	for _, tr := range rep.Tools {
		errs[tr.Tool] = tr.Errors
	}
	if len(errs[ToolBandit]) != 1 || len(errs[ToolGosec]) != 2 || len(errs[ToolESLint]) != 1 || len(errs[ToolRuff]) != 2 {
		t.Errorf("tool errors %q", errs)
	}
	// Context 3: run.py 4-10 and multi.go 17-25.
	type key struct {
		tool Tool
		rule string
		line int
	}
	var got []key
	for _, f := range rep.Findings {
		got = append(got, key{f.Tool, f.RuleID, f.StartLine})
		if !changed.Contains(f.Path, f.StartLine, f.EndLine, DefaultContextLines) {
			t.Errorf("finding outside the change: %+v", f)
		}
		if len(f.Fingerprint) != 32 {
			t.Errorf("fingerprint %q", f.Fingerprint)
		}
	}
	want := []key{
		// high, by path, line, tool, rule
		{ToolASTGrep, "quavon-python-subprocess-shell-true", 7},
		{ToolBandit, "B602", 7},
		{ToolRuff, "S602", 7},
		// medium
		{ToolGosec, "G304", 20},
	}
	if !slices.Equal(got, want) {
		t.Errorf("findings\n got %v\nwant %v", got, want)
	}
	if rep.OutsideChange != total-len(want) || rep.Dropped != 0 {
		t.Errorf("outside %d (total %d), dropped %d", rep.OutsideChange, total, rep.Dropped)
	}
	// A wider context reaches run.py's yaml.load (line 11) and hashlib.md5 (15).
	rep = Normalise(in, Options{Profile: ProfileAudit, ContextLines: 8})
	if n := len(rep.Findings); n <= len(want) {
		t.Errorf("context 8: %d findings", n)
	}
}

// TestNormaliseStatuses: missing stays missing; ok with a missing or
// malformed report becomes failed; unknown tools, repeated entries and
// unknown statuses are not trusted.
func TestNormaliseStatuses(t *testing.T) {
	t.Parallel()
	raw := ruffReport(t, rf{code: "S101", file: "a.py", line: 1})
	in := Input{
		Manifest: Manifest{Root: fixtureRoot, Tools: []ToolRun{
			{Tool: ToolRuff, Status: StatusOK},
			{Tool: ToolGitleaks, Status: StatusOK},     // no report
			{Tool: ToolBandit, Status: StatusOK},       // malformed report
			{Tool: ToolGosec, Status: StatusMissing},   // a report, but missing
			{Tool: ToolESLint, Status: StatusTimedOut}, // timed out
			{Tool: ToolASTGrep, Status: "exploded"},    // unknown status
			{Tool: "semgrep", Status: StatusOK},        // unknown tool
			{Tool: ToolRuff, Status: StatusFailed},     // repeated
		}},
		Outputs: map[Tool][]byte{
			ToolRuff: raw, ToolBandit: []byte(`{"results": [`), ToolGosec: fixture(t, "gosec.json"),
			ToolESLint: fixture(t, "eslint.json"), ToolASTGrep: fixture(t, "ast-grep.jsonl"),
		},
		Changed: ChangedLines{"a.py": {{1, 1}}, "svc/main.go": {{1, 100}}, "app/web/app.js": {{1, 100}}},
	}
	rep := Normalise(in, Options{Profile: ProfileAudit})
	got := map[Tool]Status{}
	for _, tr := range rep.Tools {
		got[tr.Tool] = tr.Status
	}
	want := map[Tool]Status{
		ToolRuff: StatusOK, ToolGitleaks: StatusFailed, ToolBandit: StatusFailed, ToolGosec: StatusMissing,
		ToolESLint: StatusTimedOut, ToolASTGrep: StatusFailed,
	}
	if len(rep.Tools) != len(want) {
		t.Errorf("tools %+v", rep.Tools)
	}
	for tool, st := range want {
		if got[tool] != st {
			t.Errorf("%s: status %q, want %q", tool, got[tool], st)
		}
	}
	for _, tr := range rep.Tools {
		if tr.Status == StatusFailed && tr.Error == "" {
			t.Errorf("%s failed without an error", tr.Tool)
		}
	}
	// Only Ruff's finding: the others' reports were not read.
	if len(rep.Findings) != 1 || rep.Findings[0].Tool != ToolRuff {
		t.Errorf("findings %+v", rep.Findings)
	}
}

// A tool the job asked for that the manifest leaves out is failed, not a
// tool without findings.
func TestNormaliseExpectedToolMissingFromManifest(t *testing.T) {
	t.Parallel()
	raw := ruffReport(t, rf{code: "S101", file: "a.py", line: 1})
	rep := Normalise(Input{
		Manifest: Manifest{Root: fixtureRoot, Tools: []ToolRun{{Tool: ToolRuff, Status: StatusOK}}},
		Outputs:  map[Tool][]byte{ToolRuff: raw},
		Changed:  ChangedLines{"a.py": {{1, 1}}},
		Expected: []Tool{ToolRuff, ToolGitleaks},
	}, Options{Profile: ProfileAudit})
	if len(rep.Tools) != 2 || rep.Tools[1].Tool != ToolGitleaks || rep.Tools[1].Status != StatusFailed || rep.Tools[1].Error == "" {
		t.Fatalf("tools %+v", rep.Tools)
	}
}

// TestNormaliseFilter: changed ranges, the context on both sides, context
// 0, files not in the diff and deleted files.
func TestNormaliseFilter(t *testing.T) {
	t.Parallel()
	raw := ruffReport(t,
		rf{code: "S101", file: "a.py", line: 10},
		rf{code: "S102", file: "a.py", line: 13},          // 3 after the change
		rf{code: "S103", file: "a.py", line: 14},          // 4 after
		rf{code: "S104", file: "a.py", line: 2},           // 3 before the change at 5
		rf{code: "S105", file: "a.py", line: 1},           // 4 before
		rf{code: "S106", file: "a.py", line: 20, end: 40}, // spans the change at 30
		rf{code: "S107", file: "untouched.py", line: 10},  // not in the diff
		rf{code: "S108", file: "deleted.py", line: 1},     // deleted in the change
	)
	changed := ChangedLines{"a.py": {{5, 5}, {10, 10}, {30, 30}}}
	rules := func(rep Report) []string {
		var out []string
		for _, f := range rep.Findings {
			out = append(out, f.RuleID)
		}
		slices.Sort(out)
		return out
	}
	rep := Normalise(ruffInput(raw, changed, nil), Options{Profile: ProfileAudit, ContextLines: DefaultContextLines})
	// S106 starts outside the change: its range crossing a changed line
	// does not place it there (bandit's range bug).
	if got, want := rules(rep), []string{"S101", "S102", "S104"}; !slices.Equal(got, want) || rep.OutsideChange != 5 {
		t.Errorf("context 3: %v (outside %d), want %v", got, rep.OutsideChange, want)
	}
	rep = Normalise(ruffInput(raw, changed, nil), Options{Profile: ProfileAudit})
	if got, want := rules(rep), []string{"S101"}; !slices.Equal(got, want) || rep.OutsideChange != 7 {
		t.Errorf("context 0: %v (outside %d), want %v", got, rep.OutsideChange, want)
	}
	rep = Normalise(ruffInput(raw, nil, nil), Options{Profile: ProfileAudit})
	if len(rep.Findings) != 0 || rep.OutsideChange != 8 {
		t.Errorf("no change: %+v", rep)
	}
}

// TestFingerprintMoved: inserting lines above a finding moves it but keeps
// its fingerprint, with the source and without it (message fallback).
func TestFingerprintMoved(t *testing.T) {
	t.Parallel()
	v1 := "import os\n\nos.system(cmd)\n"
	v2 := "import os\n# one\n# two\n\n\n    os.system(cmd)  \t\n"
	all := ChangedLines{"a.py": {{1, 100}}}
	for _, withSource := range []bool{true, false} {
		src1, src2 := map[string]string{"a.py": v1}, map[string]string{"a.py": v2}
		if !withSource {
			src1, src2 = nil, nil
		}
		r1 := Normalise(ruffInput(ruffReport(t, rf{code: "S605", file: "a.py", line: 3}), all, src1), Options{Profile: ProfileAudit})
		r2 := Normalise(ruffInput(ruffReport(t, rf{code: "S605", file: "a.py", line: 6}), all, src2), Options{Profile: ProfileAudit})
		if len(r1.Findings) != 1 || len(r2.Findings) != 1 {
			t.Fatalf("findings %+v %+v", r1.Findings, r2.Findings)
		}
		if r1.Findings[0].Fingerprint != r2.Findings[0].Fingerprint {
			t.Errorf("source %v: moved finding changed fingerprint: %s → %s", withSource, r1.Findings[0].Fingerprint, r2.Findings[0].Fingerprint)
		}
	}
	// A different snippet, rule or path changes it.
	base := Normalise(ruffInput(ruffReport(t, rf{code: "S605", file: "a.py", line: 3}), all, map[string]string{"a.py": v1}), Options{Profile: ProfileAudit})
	for name, in := range map[string]Input{
		"snippet": ruffInput(ruffReport(t, rf{code: "S605", file: "a.py", line: 3}), all, map[string]string{"a.py": "import os\n\nos.system(other)\n"}),
		"rule":    ruffInput(ruffReport(t, rf{code: "S606", file: "a.py", line: 3}), all, map[string]string{"a.py": v1}),
		"path":    ruffInput(ruffReport(t, rf{code: "S605", file: "b.py", line: 3}), ChangedLines{"b.py": {{1, 9}}}, map[string]string{"b.py": v1}),
	} {
		if r := Normalise(in, Options{Profile: ProfileAudit}); len(r.Findings) != 1 || r.Findings[0].Fingerprint == base.Findings[0].Fingerprint {
			t.Errorf("%s: fingerprint unchanged", name)
		}
	}
}

// TestFingerprintOccurrence: two identical snippets get distinct
// fingerprints (by occurrence); a finding reported twice at one position
// is merged.
func TestFingerprintOccurrence(t *testing.T) {
	t.Parallel()
	src := map[string]string{"a.py": "os.system(cmd)\nx = 1\n  os.system(cmd)\n"}
	all := ChangedLines{"a.py": {{1, 100}}}
	rep := Normalise(ruffInput(ruffReport(t,
		rf{code: "S605", file: "a.py", line: 3},
		rf{code: "S605", file: "a.py", line: 1},
		rf{code: "S605", file: "a.py", line: 1}, // the same again
	), all, src), Options{Profile: ProfileAudit})
	if len(rep.Findings) != 2 || rep.Findings[0].Fingerprint == rep.Findings[1].Fingerprint {
		t.Fatalf("findings %+v", rep.Findings)
	}
	// The occurrence index follows file order: the first occurrence's
	// fingerprint is the one a file with only that occurrence gives.
	one := Normalise(ruffInput(ruffReport(t, rf{code: "S605", file: "a.py", line: 1}), all,
		map[string]string{"a.py": "os.system(cmd)\n"}), Options{Profile: ProfileAudit})
	if one.Findings[0].Fingerprint != rep.Findings[0].Fingerprint {
		t.Errorf("first occurrence: %s vs %s", one.Findings[0].Fingerprint, rep.Findings[0].Fingerprint)
	}
}

// TestNormaliseCap: MaxFindings keeps the most severe; Dropped counts the
// rest (after deduplication).
func TestNormaliseCap(t *testing.T) {
	t.Parallel()
	raw := ruffReport(t,
		rf{code: "S101", file: "a.py", line: 1}, // medium
		rf{code: "E501", file: "a.py", line: 2}, // low
		rf{code: "S602", file: "a.py", line: 3}, // high
		rf{code: "S103", file: "a.py", line: 4}, // medium
		rf{code: "S602", file: "a.py", line: 5}, // high
		rf{code: "S602", file: "a.py", line: 5}, // duplicate
	)
	in := ruffInput(raw, ChangedLines{"a.py": {{1, 10}}}, nil)
	rep := Normalise(in, Options{Profile: ProfileAudit, MaxFindings: 2})
	if len(rep.Findings) != 2 || rep.Dropped != 3 {
		t.Fatalf("findings %d dropped %d", len(rep.Findings), rep.Dropped)
	}
	for _, f := range rep.Findings {
		if f.Severity != SeverityHigh {
			t.Errorf("kept %+v", f)
		}
	}
	if rep := Normalise(in, Options{Profile: ProfileAudit}); len(rep.Findings) != 5 || rep.Dropped != 0 {
		t.Errorf("default cap: %d findings, dropped %d", len(rep.Findings), rep.Dropped)
	}
	// The default cap is DefaultMaxFindings.
	var many []rf
	for i := range DefaultMaxFindings + 7 {
		many = append(many, rf{code: "S101", file: "a.py", line: i + 1})
	}
	rep = Normalise(ruffInput(ruffReport(t, many...), ChangedLines{"a.py": {{1, 1000}}}, nil), Options{Profile: ProfileAudit})
	if len(rep.Findings) != DefaultMaxFindings || rep.Dropped != 7 {
		t.Errorf("default cap: %d findings, dropped %d", len(rep.Findings), rep.Dropped)
	}
}

// TestNormaliseUntrustedRun: the driver's free text is bounded and the
// tool errors come only from parsing.
func TestNormaliseUntrustedRun(t *testing.T) {
	t.Parallel()
	in := ruffInput(ruffReport(t), nil, nil)
	in.Manifest.Tools[0].Version = "1.0\x1b[2J" + strings.Repeat("v", 500)
	in.Manifest.Tools[0].Errors = []string{"forged"}
	rep := Normalise(in, Options{Profile: ProfileAudit})
	tr := rep.Tools[0]
	if len(tr.Version) > 100 || strings.Contains(tr.Version, "\x1b") || tr.Errors != nil {
		t.Errorf("run %+v", tr)
	}
	if out, _ := json.Marshal(rep); !strings.Contains(string(out), `"findings":[]`) {
		t.Errorf("empty findings not an array: %s", out)
	}
}

// Coverage: every file a tool covers and did not fully scan is listed with
// its reason, and the tool is partial; a tool that did not finish lists
// all its files; the driver claiming fewer files than it was given is a
// failure; lines are mapped from the tool's numbering; a finding whose
// numbering cannot be mapped is kept and marked.
func TestNormaliseCoverage(t *testing.T) {
	t.Parallel()
	files := []string{"a.py", "b.js", "c.go", "d.txt", "e.py"}
	src := map[string]string{
		"a.py":  "import os\nos.system(x)\n",
		"b.js":  "var a;\u2028var b;\neval(x)\n", // ESLint's line 3 is our line 2
		"c.go":  "package c\n",
		"d.txt": "x\n",
		"e.py":  "# coding: utf-7\n+AAo-import os\n",
	}
	eslint := `[{"filePath":"/work/changed/1/f.js","messages":[{"ruleId":"no-eval","severity":2,"message":"eval","line":3,"column":1,"endLine":3,"endColumn":5}]}]`
	bandit := `{"errors":[{"filename":"0/f.py","reason":"exception while scanning file"}],"results":[` +
		`{"test_id":"B605","issue_severity":"HIGH","issue_text":"shell","filename":"4/f.py","line_number":3,"line_range":[3]}]}`
	in := Input{
		Manifest: Manifest{Tools: []ToolRun{
			{Tool: ToolBandit, Status: StatusOK, Files: 2},
			{Tool: ToolESLint, Status: StatusOK, Files: 1},
			{Tool: ToolGosec, Status: StatusTimedOut, Files: 1, Error: "killed after 1s"},
			{Tool: ToolGitleaks, Status: StatusOK, Files: 4, NotCovered: []FileNote{{3, "gitleaks: skipping binary file"}, {99, "bogus"}}},
			{Tool: ToolRuff, Status: StatusOK, Files: 2},
		}},
		Outputs: map[Tool][]byte{ToolBandit: []byte(bandit), ToolESLint: []byte(eslint), ToolGitleaks: []byte("[]"), ToolRuff: []byte("[]")},
		Root:    "/work/src", Files: files,
		NotScanned: []NotScanned{{Path: "big.js", Reason: "over the per-file cap"}},
		Changed:    ChangedLines{"a.py": {{1, 2}}, "b.js": {{2, 2}}, "c.go": {{1, 1}}, "d.txt": {{1, 1}}, "e.py": {{1, 1}}},
		Source:     func(p string) ([]byte, bool) { s, ok := src[p]; return []byte(s), ok },
	}
	rep := Normalise(in, Options{Profile: ProfileAudit, MaxFindings: 50})
	status := map[Tool]Status{}
	for _, tr := range rep.Tools {
		status[tr.Tool] = tr.Status
	}
	want := map[Tool]Status{ToolBandit: StatusPartial, ToolESLint: StatusOK, ToolGosec: StatusTimedOut,
		ToolGitleaks: StatusFailed, ToolRuff: StatusOK}
	for tool, st := range want {
		if status[tool] != st {
			t.Errorf("%s: %s, want %s", tool, status[tool], st)
		}
	}
	listed := map[NotScanned]bool{}
	for _, n := range rep.NotScanned {
		listed[NotScanned{Path: n.Path, Tool: n.Tool}] = true
	}
	for _, n := range []NotScanned{
		{Path: "big.js"}, {Path: "a.py", Tool: ToolBandit}, {Path: "c.go", Tool: ToolGosec},
		{Path: "a.py", Tool: ToolGitleaks}, {Path: "d.txt", Tool: ToolGitleaks}, // gitleaks claimed 4 of 5 files: failed
	} {
		if !listed[n] {
			t.Errorf("%+v not listed: %+v", n, rep.NotScanned)
		}
	}
	if !rep.Incomplete() || !strings.HasPrefix(rep.Summary(), "incomplete: ") {
		t.Errorf("summary %q", rep.Summary())
	}
	var js, utf7 *Finding
	for i, f := range rep.Findings {
		switch f.Path {
		case "b.js":
			js = &rep.Findings[i]
		case "e.py":
			utf7 = &rep.Findings[i]
		}
	}
	if js == nil || js.StartLine != 2 || js.StartColumn != 0 || js.Unmapped != "" {
		t.Errorf("ESLint's line 3 after U+2028 is not our line 2: %+v", js)
	}
	if utf7 == nil || utf7.Unmapped == "" || utf7.StartLine != 3 {
		t.Errorf("the finding in the UTF-7 file is not kept and marked: %+v", utf7)
	}

	// Complete: every tool ok or without files, nothing listed.
	ok := Normalise(Input{Manifest: Manifest{Tools: []ToolRun{{Tool: ToolRuff, Status: StatusOK, Files: 1}, {Tool: ToolGosec, Status: StatusNoFiles}}},
		Outputs: map[Tool][]byte{ToolRuff: []byte("[]")}, Files: []string{"a.py"}, Changed: ChangedLines{}}, Options{})
	if ok.Incomplete() || !strings.HasPrefix(ok.Summary(), "complete: ") {
		t.Errorf("complete report: %q %+v", ok.Summary(), ok)
	}
}
