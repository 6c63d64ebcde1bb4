package scan_test

// Hostile repositories, one per way a changed line could escape the scan
// (issue: "scanner coverage without silent misses"). Each asserts that the
// planted finding is reported, or that the scan is incomplete with the
// file listed: never "ok, no findings".

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/sast"
	"github.com/quavon/quavon/internal/scan"
)

// Planted code each scanner reports.
const (
	pyShell = "import subprocess\n\n\ndef run(c):\n    return subprocess.call(c, shell=True)\n" // B602 on line 5
	jsEval  = "function f(x) {\n  return eval(x);\n}\nmodule.exports = f;\n"                    // no-eval on line 2
)

func scanWith(t *testing.T, dir string, lim scan.Limits, opt scan.Options) *scan.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	plan, err := scan.NewPlan(ctx, dir, "main", lim)
	if err != nil {
		t.Fatal(err)
	}
	if opt.Normalise.MaxFindings == 0 {
		opt.Normalise = sast.Options{ContextLines: 0, MaxFindings: 500, Profile: sast.ProfileAudit}
	}
	out, err := scan.Run(ctx, sharedSandbox(t).Client, plan, opt)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// reported fails unless tool reported rule at path:line.
func reported(t *testing.T, out *scan.Outcome, tool sast.Tool, rule, path string, line int) {
	t.Helper()
	for _, f := range out.Report.Findings {
		if f.Tool == tool && f.RuleID == rule && f.Path == path && f.StartLine == line {
			return
		}
	}
	var got []string
	for _, f := range out.Report.Findings {
		got = append(got, fmt.Sprintf("%s %s %s:%d", f.Tool, f.RuleID, f.Path, f.StartLine))
	}
	t.Errorf("%s %s not reported at %s:%d; findings %q; not scanned %+v", tool, rule, path, line, got, out.Report.NotScanned)
}

// listed fails unless path is listed as not scanned by tool ("" = no
// tool) with a reason containing why, and the scan is incomplete.
func listed(t *testing.T, out *scan.Outcome, path string, tool sast.Tool, why string) {
	t.Helper()
	if !out.Incomplete() {
		t.Errorf("the scan is complete; %s should be listed", path)
	}
	for _, n := range out.Report.NotScanned {
		if n.Path == path && n.Tool == tool && strings.Contains(n.Reason, why) {
			return
		}
	}
	t.Errorf("%s not listed as not scanned by %q (%q): %+v", path, tool, why, out.Report.NotScanned)
}

// Attributes and configuration of the repository have no say: -diff,
// binary, a textconv driver that empties the file, and the same in
// .git/info/attributes; the changed lines come from the blobs.
func TestCoverageIgnoresGitAttributes(t *testing.T) {
	dir := newRepo(t, map[string]string{"README.md": "base\n", "old.py": "x = 1\n"}, map[string]string{
		".gitattributes": "*.py -diff\n*.js binary\n*.rb diff=blank\nold.py diff=blank text eol=crlf\n",
		"a.py":           pyShell,
		"b.js":           jsEval,
		"old.py":         "x = 1\n" + strings.TrimPrefix(pyShell, "import subprocess\n"),
	})
	git(t, dir, "config", "diff.blank.textconv", "true")
	git(t, dir, "config", "diff.noprefix", "true")
	git(t, dir, "config", "diff.context", "0")
	writeFiles(t, dir, map[string]string{".git/info/attributes": "* -diff\n"})
	out := scanWith(t, dir, scan.DefaultLimits, scan.Options{Tools: []sast.Tool{sast.ToolBandit, sast.ToolESLint}})
	requireStatus(t, out, map[sast.Tool]sast.Status{sast.ToolBandit: sast.StatusOK, sast.ToolESLint: sast.StatusOK})
	reported(t, out, sast.ToolBandit, "B602", "a.py", 5)
	reported(t, out, sast.ToolBandit, "B602", "old.py", 5)
	reported(t, out, sast.ToolESLint, "no-eval", "b.js", 2)
	if out.Incomplete() {
		t.Errorf("incomplete: %s", out.Report.Summary())
	}
}

// Files git calls binary (a NUL byte) are diffed and scanned like any
// other; a file gitleaks takes for binary by its first bytes is listed.
func TestCoverageBinaryDetection(t *testing.T) {
	token := "ghp_" + strings.Repeat("Xk2PqL9vTz4RmW8sJd3F", 2)[:36]
	dir := newRepo(t, map[string]string{"README.md": "base\n"}, map[string]string{
		"nul.js":  "// \x00\n" + jsEval,
		"nul.py":  "# \x00\n" + pyShell,
		"tok.env": "MZ\nGITHUB_TOKEN=" + token + "\n",
	})
	out := scanWith(t, dir, scan.DefaultLimits, scan.Options{Tools: []sast.Tool{sast.ToolESLint, sast.ToolBandit, sast.ToolGitleaks}})
	reported(t, out, sast.ToolESLint, "no-eval", "nul.js", 3)
	// Python refuses a NUL byte: bandit cannot parse the file, and says so.
	listed(t, out, "nul.py", sast.ToolBandit, "")
	listed(t, out, "tok.env", sast.ToolGitleaks, "binary")
}

// Line terminators and encodings: each tool's numbering is mapped onto
// the file's lines, and a numbering that cannot be mapped is kept and
// marked.
func TestCoverageLineTerminatorsAndEncodings(t *testing.T) {
	utf16 := func(s string) string {
		b := []byte{0xFF, 0xFE}
		for _, r := range s {
			b = append(b, byte(r), 0)
		}
		return string(b)
	}
	dir := newRepo(t, map[string]string{"README.md": "base\n"}, map[string]string{
		// ESLint ends lines at U+2028: its line 4 is our line 2.
		"ls.js": "var a = 1;\u2028var b = 2;\u2028var c = 3;\n" + jsEval,
		// Python ends lines at a lone CR: the whole file is our line 1.
		"cr.py": strings.ReplaceAll(pyShell, "\n", "\r"),
		// UTF-16 with a byte order mark is scanned as text.
		"u16.js": utf16(jsEval),
		// Code Python decodes from UTF-7 that is a comment to every other reader.
		"utf7.py": "# coding: utf-7\n#+AAo-import os+ADs-os.system(input())\n",
	})
	out := scanWith(t, dir, scan.DefaultLimits, scan.Options{Tools: []sast.Tool{sast.ToolESLint, sast.ToolBandit}})
	reported(t, out, sast.ToolESLint, "no-eval", "ls.js", 3)
	reported(t, out, sast.ToolBandit, "B602", "cr.py", 1)
	reported(t, out, sast.ToolESLint, "no-eval", "u16.js", 2)
	found := false
	for _, f := range out.Report.Findings {
		if f.Tool == sast.ToolBandit && f.Path == "utf7.py" && f.Unmapped != "" {
			found = true
		}
	}
	if !found {
		t.Errorf("bandit's finding in the UTF-7 file is not kept and marked: %+v", out.Report.Findings)
	}
}

// Any name git can store is scanned and shown escaped.
func TestCoverageNames(t *testing.T) {
	names := []string{"-rf.py", "a b\tc.py", "new\nline.py", `back\slash.py`, "ünï.py", "\xe9t\xe9.py", ".git-x/h.py", "-d/x.py"}
	head := map[string]string{}
	for _, n := range names {
		head[n] = pyShell
	}
	dir := newRepo(t, map[string]string{"README.md": "base\n"}, head)
	out := scanWith(t, dir, scan.DefaultLimits, scan.Options{Tools: []sast.Tool{sast.ToolBandit, sast.ToolRuff, sast.ToolASTGrep}})
	requireStatus(t, out, map[sast.Tool]sast.Status{sast.ToolBandit: sast.StatusOK, sast.ToolRuff: sast.StatusOK, sast.ToolASTGrep: sast.StatusOK})
	for _, n := range names {
		shown := sast.DisplayPath(n)
		reported(t, out, sast.ToolBandit, "B602", shown, 5)
		reported(t, out, sast.ToolRuff, "S602", shown, 5)
	}
	if got := sast.DisplayPath("new\nline.py"); got != `"new\nline.py"` {
		t.Errorf("shown as %s", got)
	}
	if out.Incomplete() {
		t.Errorf("incomplete: %s %+v", out.Report.Summary(), out.Report.NotScanned)
	}
}

// Caps are reported: a file over the per-file cap, the files over the cap
// on files per scan.
func TestCoverageCaps(t *testing.T) {
	dir := newRepo(t, map[string]string{"README.md": "base\n"}, map[string]string{
		"a.py": pyShell, "big.py": pyShell + strings.Repeat("# padding\n", 200), "c.py": pyShell, "d.py": pyShell,
	})
	lim := scan.DefaultLimits
	lim.MaxFileBytes, lim.MaxFiles = 1000, 2
	out := scanWith(t, dir, lim, scan.Options{Tools: []sast.Tool{sast.ToolBandit}})
	reported(t, out, sast.ToolBandit, "B602", "a.py", 5)
	listed(t, out, "big.py", "", "per-file cap")
	listed(t, out, "d.py", "", "files per scan")
}

// A tool's errors about a file (a syntax error, a Go file outside the
// build) make the tool partial and list the file.
func TestCoverageToolErrors(t *testing.T) {
	dir := newRepo(t, map[string]string{"README.md": "base\n"}, map[string]string{
		"bad.py":  "def (:\n" + pyShell,
		"bad.js":  "function (\n" + jsEval,
		"go.mod":  "module m\n\ngo 1.22\n",
		"ok.go":   "package m\n\nimport \"os/exec\"\n\nfunc R(s string) { exec.Command(\"sh\", \"-c\", s).Run() }\n",
		"win.go":  "//go:build windows\n\npackage m\n\nimport \"os/exec\"\n\nfunc W(s string) { exec.Command(\"sh\", \"-c\", s).Run() }\n",
		"_old.go": "package m\n",
	})
	out := scanWith(t, dir, scan.DefaultLimits, scan.Options{Tools: []sast.Tool{sast.ToolBandit, sast.ToolESLint, sast.ToolGosec}})
	requireStatus(t, out, map[sast.Tool]sast.Status{sast.ToolBandit: sast.StatusPartial, sast.ToolESLint: sast.StatusPartial,
		sast.ToolGosec: sast.StatusPartial})
	listed(t, out, "bad.py", sast.ToolBandit, "")
	listed(t, out, "bad.js", sast.ToolESLint, "Parsing error")
	listed(t, out, "win.go", sast.ToolGosec, "not in the build")
	listed(t, out, "_old.go", sast.ToolGosec, "not in the build")
	reported(t, out, sast.ToolGosec, "G204", "ok.go", 5)
}

// The scanners' own exclusions do not hide a changed file: gitleaks' path
// allowlist (lock files, vendor/, node_modules/), ESLint's default ignores
// (node_modules/), gosec's skipping of tests, ast-grep's case-sensitive
// extensions.
func TestCoverageBuiltInExclusions(t *testing.T) {
	token := "ghp_" + strings.Repeat("Xk2PqL9vTz4RmW8sJd3F", 2)[:36]
	secret := "GITHUB_TOKEN = \"" + token + "\"\n"
	dir := newRepo(t, map[string]string{"README.md": "base\n"}, map[string]string{
		"package-lock.json":             "{\"t\": \"" + token + "\"}\n",
		"vendor/github.com/x/y/conf.go": "package y\n\nconst T = \"" + token + "\"\n",
		"node_modules/lib/index.js":     jsEval,
		"conf/gitleaks.toml.py":         secret,
		"logo.png":                      secret,
		"go.mod":                        "module m\n\ngo 1.22\n",
		"m.go":                          "package m\n",
		"m_test.go":                     "package m\n\nimport (\n\t\"os/exec\"\n\t\"testing\"\n)\n\nfunc TestX(t *testing.T) { exec.Command(\"sh\", \"-c\", t.Name()).Run() }\n",
		"UPPER.PY":                      pyShell,
	})
	out := scanWith(t, dir, scan.DefaultLimits, scan.Options{Tools: []sast.Tool{sast.ToolGitleaks, sast.ToolESLint, sast.ToolGosec, sast.ToolASTGrep}})
	for _, p := range []string{"package-lock.json", "vendor/github.com/x/y/conf.go", "conf/gitleaks.toml.py", "logo.png"} {
		line := 1
		if strings.HasSuffix(p, ".go") {
			line = 3
		}
		reported(t, out, sast.ToolGitleaks, "github-pat", p, line)
	}
	reported(t, out, sast.ToolESLint, "no-eval", "node_modules/lib/index.js", 2)
	reported(t, out, sast.ToolGosec, "G204", "m_test.go", 8)
	reported(t, out, sast.ToolASTGrep, "quavon-python-subprocess-shell-true", "UPPER.PY", 5)
}
