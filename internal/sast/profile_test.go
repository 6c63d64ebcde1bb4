package sast

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestIsTestPath(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]bool{
		"pkg/server_test.go":           true,
		"pkg/testdata/x.go":            true,
		"pkg/server.go":                false,
		"pkg/testing.go":               false,
		"tests/test_api.py":            true,
		"app/test_views.py":            true,
		"app/views_test.py":            true,
		"app/tests.py":                 true,
		"conftest.py":                  true,
		"app/contest.py":               false,
		"app/testimony.py":             false,
		"web/src/app.test.ts":          true,
		"web/src/App.spec.tsx":         true,
		"web/src/__tests__/a.js":       true,
		"web/src/__mocks__/fs.js":      true,
		"web/test/helpers.js":          true,
		"web/src/latest.js":            false,
		"src/test/java/AppTest.java":   true,
		"Test/Fixtures/a.py":           true,
		"fixtures/keys.yml":            true,
		"web/e2e/login.spec.js":        true,
		"attestation/verify.go":        false,
		"spec.md":                      false,
		"contest/spec_helper_impl.rb":  false,
		"protest/main.py":              false,
		"tests_helpers/util.py":        false,
		"app/test_helpers/__init__.py": false,
	} {
		if got := IsTestPath(p); got != want {
			t.Errorf("IsTestPath(%q) = %v, want %v", p, got, want)
		}
	}
}

// Every rule class names a weakness of the table, says why it is not kept
// and is at least as strict in tests.
func TestRuleTablesAreConsistent(t *testing.T) {
	t.Parallel()
	ids := map[WeaknessID]bool{}
	for _, w := range weaknesses {
		if ids[w.ID] || !w.Severity.Valid() || w.Title == "" || (w.CWE != "" && cweID(w.CWE) != w.CWE) {
			t.Errorf("weakness %+v: duplicate, bad severity, title or CWE", w)
		}
		ids[w.ID] = true
	}
	rank := map[Treatment]int{Keep: 0, Downgrade: 1, Drop: 2}
	rules := Rules()
	perTool := map[Tool]int{}
	for _, rc := range rules {
		perTool[rc.Tool]++
		name := QualifiedRule(rc.Tool, rc.Rule)
		switch {
		case !ids[rc.Weakness]:
			t.Errorf("%s: unknown weakness %q", name, rc.Weakness)
		case rc.Review != Keep && rc.Reason == "":
			t.Errorf("%s: treatment %s without a reason", name, rc.Review)
		case rc.InTests == Drop && rc.TestReason == "":
			t.Errorf("%s: dropped in tests without a reason", name)
		case rank[rc.InTests] < rank[rc.Review]:
			t.Errorf("%s: milder in tests (%s) than elsewhere (%s)", name, rc.InTests, rc.Review)
		case len(rc.DropOnLine) > 0 && rc.LineReason == "":
			t.Errorf("%s: dropped on lines without a reason", name)
		}
		if tool, rule, ok := ParseQualifiedRule(name); !ok || tool != rc.Tool || rule != rc.Rule {
			t.Errorf("%s does not parse back", name)
		}
	}
	for _, tool := range Tools {
		if perTool[tool] == 0 {
			t.Errorf("%s: no rules", tool)
		}
	}
	// Gitleaks rules look for real credentials: never muted in tests.
	for _, rc := range rules {
		if rc.Tool == ToolGitleaks && (rc.Review != Keep || rc.InTests != Keep) {
			t.Errorf("gitleaks rule %s muted", rc.Rule)
		}
	}
	if bad := ValidateDisabledRules([]string{"bandit:B101", "eslint:security/detect-object-injection", "gitleaks:github-pat",
		"ast-grep:quavon-python-weak-hash", "bandit:B999", "B101", "semgrep:x", "ruff:"}); !slices.Equal(bad, []string{"bandit:B999", "B101", "semgrep:x", "ruff:"}) {
		t.Errorf("ValidateDisabledRules: %q", bad)
	}
}

// Every finding of the real tools' fixture reports has a weakness and its
// severity: the same problem has the same severity whichever tool found
// it.
func TestFixtureFindingsHaveOneSeverityPerWeakness(t *testing.T) {
	t.Parallel()
	files := map[Tool][]string{
		ToolASTGrep: {"ast-grep.jsonl", "ast-grep-metadata.jsonl"}, ToolGitleaks: {"gitleaks.json"},
		ToolBandit: {"bandit-1.6.2.json"}, ToolGosec: {"gosec.json"}, ToolESLint: {"eslint.json"}, ToolRuff: {"ruff.json"},
	}
	byLine := map[string][]Finding{}
	for tool, names := range files {
		for _, n := range names {
			for _, f := range mustParse(t, tool, n).Findings {
				w, ok := WeaknessOf(f.Weakness)
				if !ok || f.Severity != w.Severity {
					t.Errorf("%s %s: weakness %q severity %s", tool, f.RuleID, f.Weakness, f.Severity)
				}
				k := fmt.Sprintf("%s:%d:%s", f.Path, f.StartLine, f.Weakness)
				byLine[k] = append(byLine[k], f)
			}
		}
	}
	multi := 0
	for k, fs := range byLine {
		tools := map[Tool]bool{}
		for _, f := range fs {
			tools[f.Tool] = true
			if f.Severity != fs[0].Severity {
				t.Errorf("%s: %s %s is %s, %s %s is %s", k, fs[0].Tool, fs[0].RuleID, fs[0].Severity, f.Tool, f.RuleID, f.Severity)
			}
		}
		if len(tools) > 1 {
			multi++
		}
	}
	if multi == 0 {
		t.Error("no weakness found by two tools on one line: the check proves nothing")
	}
}

// banditReport builds a bandit JSON report.
func banditJSON(results ...string) []byte {
	return []byte(`{"errors":[],"results":[` + strings.Join(results, ",") + `]}`)
}

func banditRes(id, sev, text, file string, line int) string {
	return fmt.Sprintf(`{"test_id":%q,"test_name":"t","issue_severity":%q,"issue_text":%q,"filename":%q,"line_number":%d,"line_range":[%d]}`,
		id, sev, text, file, line, line)
}

func profileInput(t *testing.T, src map[string]string, bandit []byte, gitleaks string) Input {
	t.Helper()
	changed := ChangedLines{}
	for p, s := range src {
		changed[p] = []LineRange{{1, strings.Count(s, "\n") + 1}}
	}
	in := Input{
		Manifest: Manifest{Root: fixtureRoot, Tools: []ToolRun{{Tool: ToolBandit, Status: StatusOK}, {Tool: ToolGitleaks, Status: StatusOK}}},
		Outputs:  map[Tool][]byte{ToolBandit: bandit, ToolGitleaks: []byte(gitleaks)},
		Changed:  changed,
		Source:   func(p string) ([]byte, bool) { s, ok := src[p]; return []byte(s), ok },
	}
	return in
}

// The review profile leaves out audit hints, test-only noise, constant
// commands and HMAC digests, keeps real-looking secrets in tests, and
// applies disabledRules; the audit profile keeps everything.
func TestProfiles(t *testing.T) {
	t.Parallel()
	src := map[string]string{
		"tests/test_api.py": "import subprocess\nassert resp.status == 200\npassword = 'hunter2'\nsubprocess.call('ls -l', shell=True)\nsubprocess.call(cmd, shell=True)\n",
		"app/auth.py":       "import hashlib, hmac\nsig = hmac.new(key, msg, hashlib.sha1).hexdigest()\nh = hashlib.md5(data).hexdigest()\npassword = 'hunter2'\nassert user\n",
	}
	bandit := banditJSON(
		banditRes("B404", "LOW", "Consider possible security implications associated with subprocess module.", "/work/src/tests/test_api.py", 1),
		banditRes("B101", "LOW", "Use of assert detected.", "/work/src/tests/test_api.py", 2),
		banditRes("B105", "LOW", "Possible hardcoded password: 'hunter2'", "/work/src/tests/test_api.py", 3),
		banditRes("B602", "LOW", "subprocess call with shell=True seems safe, but may be changed in the future, consider rewriting without shell", "/work/src/tests/test_api.py", 4),
		banditRes("B602", "HIGH", "subprocess call with shell=True identified, security issue.", "/work/src/tests/test_api.py", 5),
		banditRes("B303", "MEDIUM", "Use of insecure MD2, MD4, MD5, or SHA1 hash function.", "/work/src/app/auth.py", 2),
		banditRes("B303", "MEDIUM", "Use of insecure MD2, MD4, MD5, or SHA1 hash function.", "/work/src/app/auth.py", 3),
		banditRes("B105", "LOW", "Possible hardcoded password: 'hunter2'", "/work/src/app/auth.py", 4),
		banditRes("B101", "LOW", "Use of assert detected.", "/work/src/app/auth.py", 5),
	)
	gitleaks := `[{"RuleID":"github-pat","Description":"GitHub token","StartLine":3,"EndLine":3,"StartColumn":1,"EndColumn":10,"File":"/work/src/tests/test_api.py"}]`
	got := func(opt Options) []string {
		rep := Normalise(profileInput(t, src, bandit, gitleaks), opt)
		for _, r := range rep.Tools {
			if r.Status != StatusOK {
				t.Fatalf("%s %s: %s %v", r.Tool, r.Status, r.Error, r.Errors)
			}
		}
		var out []string
		for _, f := range rep.Findings {
			out = append(out, fmt.Sprintf("%s:%d %s %s", f.Path, f.StartLine, f.RuleID, f.Severity))
		}
		slices.Sort(out)
		out = append(out, fmt.Sprintf("muted %d", rep.Muted))
		return out
	}
	tests := []struct {
		name string
		opt  Options
		want []string
	}{
		{"audit", Options{Profile: ProfileAudit}, []string{
			"app/auth.py:2 B303 medium", "app/auth.py:3 B303 medium", "app/auth.py:4 B105 high", "app/auth.py:5 B101 info",
			"tests/test_api.py:1 B404 info", "tests/test_api.py:2 B101 info", "tests/test_api.py:3 B105 high",
			"tests/test_api.py:3 github-pat high", "tests/test_api.py:4 B602 high", "tests/test_api.py:5 B602 high", "muted 0",
		}},
		{"review (default)", Options{}, []string{
			"app/auth.py:3 B303 medium", "app/auth.py:4 B105 high", "tests/test_api.py:3 github-pat high", "muted 7",
		}},
		{"review, disabled rule", Options{DisabledRules: []string{"bandit:B303"}}, []string{
			"app/auth.py:4 B105 high", "tests/test_api.py:3 github-pat high", "muted 8",
		}},
		{"audit, disabled rule", Options{Profile: ProfileAudit, DisabledRules: []string{"gitleaks:github-pat"}}, []string{
			"app/auth.py:2 B303 medium", "app/auth.py:3 B303 medium", "app/auth.py:4 B105 high", "app/auth.py:5 B101 info",
			"tests/test_api.py:1 B404 info", "tests/test_api.py:2 B101 info", "tests/test_api.py:3 B105 high",
			"tests/test_api.py:4 B602 high", "tests/test_api.py:5 B602 high", "muted 1",
		}},
		{"review, policy test paths", Options{TestPath: func(p string) bool { return strings.HasPrefix(p, "app/") }}, []string{
			"tests/test_api.py:3 github-pat high", "muted 9", // app/ is tests now: the MD5 of a fixture too
		}},
	}
	for _, tt := range tests {
		if g := got(tt.opt); !slices.Equal(g, tt.want) {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, g, tt.want)
		}
	}
}

func TestGroupFindings(t *testing.T) {
	t.Parallel()
	fs := []Finding{
		{Tool: ToolRuff, RuleID: "S602", Weakness: "command-injection", Severity: SeverityHigh, Path: "a.py", StartLine: 3},
		{Tool: ToolBandit, RuleID: "B602", Weakness: "command-injection", Severity: SeverityHigh, Path: "a.py", StartLine: 3},
		{Tool: ToolASTGrep, RuleID: "quavon-python-subprocess-shell-true", Weakness: "command-injection", Severity: SeverityHigh, Path: "a.py", StartLine: 3},
		{Tool: ToolBandit, RuleID: "B604", Weakness: "command-injection", Severity: SeverityHigh, Path: "a.py", StartLine: 3},
		{Tool: ToolBandit, RuleID: "B303", Weakness: "weak-hash", Severity: SeverityMedium, Path: "a.py", StartLine: 3},
		{Tool: ToolRuff, RuleID: "S602", Weakness: "command-injection", Severity: SeverityHigh, Path: "a.py", StartLine: 4},
		{Tool: ToolRuff, RuleID: "S602", Weakness: "command-injection", Severity: SeverityHigh, Path: "b.py", StartLine: 3},
		{Tool: ToolGosec, RuleID: "G204", Weakness: "process-start", Severity: SeverityLow, Path: "a.go", StartLine: 9},
		{Tool: ToolGosec, RuleID: "G204", Weakness: "process-start", Severity: SeverityLow, Path: "a.go", StartLine: 7},
		{Tool: ToolGosec, RuleID: "G702", Weakness: "command-injection", Severity: SeverityHigh, Path: "a.go", StartLine: 9},
		{Tool: ToolESLint, RuleID: "x", Severity: SeverityLow, Path: "a.js", StartLine: 1},
		{Tool: ToolESLint, RuleID: "y", Severity: SeverityLow, Path: "a.js", StartLine: 1},
	}
	gs := GroupFindings(fs)
	var got []string
	for _, g := range gs {
		got = append(got, fmt.Sprintf("%s:%d %s %s %v %v %d", g.Path, g.StartLine, g.Weakness, g.Severity, g.Tools, g.Rules, len(g.Findings)))
	}
	want := []string{
		"a.py:3 command-injection high [ast-grep bandit ruff] [ast-grep:quavon-python-subprocess-shell-true bandit:B602 bandit:B604 ruff:S602] 4",
		"a.py:3 weak-hash medium [bandit] [bandit:B303] 1",
		"a.py:4 command-injection high [ruff] [ruff:S602] 1",
		"b.py:3 command-injection high [ruff] [ruff:S602] 1",
		"a.go:9 command-injection high [gosec] [gosec:G204 gosec:G702] 2",
		"a.go:7 process-start low [gosec] [gosec:G204] 1",
		"a.js:1  low [eslint] [eslint:x] 1",
		"a.js:1  low [eslint] [eslint:y] 1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("groups\n got %q\nwant %q", got, want)
	}
	if gs[0].Findings[0].Tool != ToolRuff {
		t.Error("the first member is not the first finding of the input")
	}
	if len(GroupFindings(nil)) != 0 {
		t.Error("groups of nothing")
	}
}
