package sast

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/testenv"
)

// scannersImage is the scanners image of the test images lock.
func scannersImage(t *testing.T) string {
	t.Helper()
	testenv.Docker(t)
	data, err := os.ReadFile(testenv.ImagesLock(t))
	if err != nil {
		t.Fatal(err)
	}
	var lock struct {
		Classes map[string]struct{ Ref string } `json:"classes"`
	}
	if err := json.Unmarshal(data, &lock); err != nil || lock.Classes["scanners"].Ref == "" {
		t.Fatalf("images lock: %v", err)
	}
	return lock.Classes["scanners"].Ref
}

// inImage runs script with /bin/sh in the scanners image, offline.
func inImage(t *testing.T, image, script string) string {
	t.Helper()
	out, err := exec.Command("docker", "run", "--rm", "--network", "none", "--read-only", "--runtime", "runc",
		"--tmpfs", "/tmp", "-e", "HOME=/tmp", "--entrypoint", "/bin/sh", image, "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return string(out)
}

// ruffRuleProbe lists every rule code Ruff accepts among the codes
// settings.json selects: each S code (S100–S999, probed one by one: Ruff
// refuses an unknown selector) and the other codes it names.
const ruffRuleProbe = `
const ruff = require("/opt/quavon/node_modules/@astral-sh/ruff-wasm-nodejs");
const settings = require("/opt/quavon/ruff/settings.json");
const known = [];
const candidates = [];
for (const sel of settings.lint.select) {
  if (sel === "S") { for (let n = 100; n < 1000; n++) candidates.push("S" + n); } else { candidates.push(sel); }
}
const origError = console.error, origWarn = console.warn;
console.error = console.warn = () => {};
for (const code of candidates) {
  try {
    new ruff.Workspace({ ...settings, lint: { ...settings.lint, select: [code] } }, ruff.PositionEncoding.Utf32).free();
    known.push(code);
  } catch (e) {}
}
console.error = origError; console.warn = origWarn;
console.log(JSON.stringify(known));
`

// eslintRuleList lists the rules security.config.js turns on for
// JavaScript and TypeScript files.
const eslintRuleList = `cd /opt/quavon/eslint && node --input-type=module -e '
const { default: configs } = await import("/opt/quavon/eslint/security.config.js");
const on = new Set();
for (const c of configs) for (const [r, v] of Object.entries(c.rules || {})) {
  const level = Array.isArray(v) ? v[0] : v;
  if (level !== "off" && level !== 0) on.add(r);
}
console.log(JSON.stringify([...on].sort()));
'`

// The rule tables hold exactly the rules the tools of the scanners image
// can emit in Quavon's configuration: bandit's and gosec's from their
// -h, Ruff's probed from the WebAssembly build with settings.json,
// ESLint's from security.config.js. A new tool version that adds a rule
// fails here until the rule is mapped (ast-grep and gitleaks:
// TestGeneratedRuleLists).
func TestRuleTablesMatchTools(t *testing.T) {
	image := scannersImage(t)
	check := func(tool Tool, table map[string]RuleClass, fromTool []string) {
		t.Helper()
		if len(fromTool) < 5 {
			t.Fatalf("%s: only %d rules read from the tool: %v", tool, len(fromTool), fromTool)
		}
		for _, r := range fromTool {
			if _, ok := table[r]; !ok {
				t.Errorf("%s can emit %s, which the %s table does not map", tool, r, tool)
			}
		}
		for _, r := range keys(table) {
			if !slices.Contains(fromTool, r) {
				t.Errorf("the %s table maps %s, which %s does not have", tool, r, tool)
			}
		}
	}
	bandit := inImage(t, image, "bandit -h")
	_, list, ok := strings.Cut(bandit, "The following tests were discovered and loaded:")
	if !ok {
		t.Fatalf("bandit -h lists no tests:\n%s", bandit)
	}
	check(ToolBandit, banditRules, matches(`(?m)^\s+(B\d{3})\s`, list))

	gosec := inImage(t, image, "gosec -h 2>&1; true")
	check(ToolGosec, gosecRules, matches(`(?m)^\s*(G\d{3}):`, gosec))

	var ruffCodes []string
	if err := json.Unmarshal([]byte(lastLine(inImage(t, image, "node -e '"+strings.ReplaceAll(ruffRuleProbe, "'", `'\''`)+"'"))), &ruffCodes); err != nil {
		t.Fatalf("ruff probe: %v", err)
	}
	check(ToolRuff, ruffRules, ruffCodes)

	var eslintCodes []string
	if err := json.Unmarshal([]byte(lastLine(inImage(t, image, eslintRuleList))), &eslintCodes); err != nil {
		t.Fatalf("eslint rules: %v", err)
	}
	check(ToolESLint, eslintRules, eslintCodes)
}

func matches(re, s string) []string {
	var out []string
	for _, m := range regexp.MustCompile(re).FindAllStringSubmatch(s, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
