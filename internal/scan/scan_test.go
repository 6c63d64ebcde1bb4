package scan_test

// End-to-end: real git repositories, the real scanners image under gVisor,
// the in-process runner over a private Valkey, exactly as `quavon scan`.

import (
	scanapp "github.com/quavon/quavon/internal/app/scan"

	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/sast"
	"github.com/quavon/quavon/internal/scan"
	"github.com/quavon/quavon/internal/testenv"
)

func git(t *testing.T, dir string, args ...string) string { return testenv.Git(t, dir, args...) }

func writeFiles(t *testing.T, dir string, files map[string]string) { testenv.WriteFiles(t, dir, files) }

func newRepo(t *testing.T, base, head map[string]string) string {
	return testenv.GitRepo(t, base, head)
}

// copyDemo returns the demo corpus as a file map.
func copyDemo(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	root := "testdata/demo"
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

var (
	localOnce sync.Once
	local     *scanapp.Local
	localErr  error
)

// sandbox starts one in-process runner on gVisor for the package's tests.
func sandbox(t *testing.T, lock string) *scanapp.Local {
	t.Helper()
	testenv.Program(t, "redis-server")
	testenv.Docker(t)
	platform := testenv.RunscPlatform(t)
	cfg, err := config.LoadScan([]string{"QUAVON_ENV=test", "QUAVON_SANDBOX_IMAGES_LOCK=" + lock,
		"QUAVON_SANDBOX_RUNSC_PLATFORM=" + platform})
	if err != nil {
		t.Fatal(err)
	}
	logs := &testenv.LogBuffer{}
	l, err := scanapp.StartLocal(context.Background(), cfg, logs)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "INSECURE") || l.Runtime != "runsc" {
		t.Fatalf("runtime %s, logs %q", l.Runtime, logs)
	}
	return l
}

func sharedSandbox(t *testing.T) *scanapp.Local {
	t.Helper()
	lock := testenv.ImagesLock(t)
	localOnce.Do(func() {
		defer func() {
			if local == nil && localErr == nil {
				localErr = fmt.Errorf("sandbox did not start")
			}
		}()
		local = sandbox(t, lock)
	})
	if localErr != nil {
		t.Fatal(localErr)
	}
	return local
}

func TestMain(m *testing.M) {
	code := m.Run()
	if local != nil {
		local.Close()
	}
	os.Exit(code)
}

func runScan(t *testing.T, dir string, opt scan.Options) *scan.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	plan, err := scan.NewPlan(ctx, dir, "main", scan.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	out, err := scan.Run(ctx, sharedSandbox(t).Client, plan, opt)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

type key struct {
	Tool sast.Tool
	Path string
	Line int
}

func findingsAt(out *scan.Outcome) map[key][]string {
	m := map[key][]string{}
	for _, f := range out.Report.Findings {
		k := key{f.Tool, f.Path, f.StartLine}
		m[k] = append(m[k], f.RuleID)
	}
	return m
}

func requireStatus(t *testing.T, out *scan.Outcome, want map[sast.Tool]sast.Status) {
	t.Helper()
	for _, r := range out.Report.Tools {
		if w, ok := want[r.Tool]; ok && r.Status != w {
			t.Errorf("%s: status %s, want %s (error %q, stderr %q)", r.Tool, r.Status, w, r.Error, r.Stderr)
		}
	}
}

func allOK() map[sast.Tool]sast.Status {
	m := map[sast.Tool]sast.Status{}
	for _, t := range sast.Tools {
		m[t] = sast.StatusOK
	}
	return m
}

// lineOf is the 1-based line of the first line of content containing s.
func lineOf(t *testing.T, content, s string) int {
	t.Helper()
	for i, l := range strings.Split(content, "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("%q not in content", s)
	return 0
}

// A repository that tries every way of steering the scanners SC1 names and
// those it does not (config discovery, ignore files, suppression comments):
// every planted finding is still reported, and no repository config ran.
func TestHostileRepositoryConfigIsIgnored(t *testing.T) {
	token := "ghp_" + testenv.RandomString(t, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 36) // a fresh token: gitleaks checks entropy
	py := strings.Join([]string{
		"import subprocess",
		"import pickle",
		"",
		"def run(cmd):",
		"    return subprocess.call(cmd, shell=True)  # nosec noqa: S602",
		"",
		"def load(b):",
		"    return pickle.loads(b)  # nosec B301 # noqa",
		"",
	}, "\n")
	js := strings.Join([]string{
		"const cp = require('child_process');",
		"/* eslint-disable */",
		"function f(req) {",
		"  // eslint-disable-next-line security/detect-child-process, no-eval",
		"  cp.exec('ls ' + req.q);",
		"  return eval(req.x); // eslint-disable-line",
		"}",
		"module.exports = f;",
		"",
	}, "\n")
	goSrc := strings.Join([]string{
		"package hostile",
		"",
		"import (",
		"\t\"crypto/tls\"",
		"\t\"os/exec\"",
		")",
		"",
		"// Run is planted.",
		"func Run(s string) error {",
		"\t// ast-grep-ignore",
		"\treturn exec.Command(\"sh\", \"-c\", s).Run() // #nosec G204 //nolint:gosec",
		"}",
		"",
		"// Conf is planted.",
		"var Conf = &tls.Config{InsecureSkipVerify: true} // #nosec //nolint",
		"",
	}, "\n")
	secret := "GITHUB_TOKEN = \"" + token + "\"  # gitleaks:allow\n"
	head := map[string]string{
		"app/run.py":     py,
		"app/secrets.py": secret,
		"web/f.js":       js,
		"go.mod":         "module example.com/hostile\n\ngo 1.22\n",
		"hostile.go":     goSrc,
		// ESLint: a config that would write a marker and exit before linting.
		"eslint.config.js": "require('fs').writeFileSync('/out/pwned-eslint', 'ran');\nprocess.exit(0);\n",
		"web/eslint.config.mjs": "import fs from 'node:fs';\nfs.writeFileSync('/out/pwned-eslint-mjs', 'ran');\n" +
			"export default [{ ignores: ['**/*'] }];\n",
		".eslintrc.json": `{"root": true, "ignorePatterns": ["**/*"]}`,
		// gitleaks: allow everything, and ignore the planted secret by fingerprint.
		".gitleaks.toml":  "[extend]\nuseDefault = false\n[allowlist]\npaths = ['''.*''']\nregexes = ['''.*''']\n",
		".gitleaksignore": "app/secrets.py:github-pat:1\n",
		// bandit: skip everything.
		".bandit":        "[bandit]\nskips: B101,B102,B301,B403,B404,B602,B603,B604\nexclude: app\n",
		"pyproject.toml": "[tool.bandit]\nskips = [\"B301\", \"B602\"]\nexclude_dirs = [\"app\"]\n\n[tool.ruff]\nexclude = [\"app\"]\n[tool.ruff.lint]\nignore = [\"ALL\"]\n",
		"ruff.toml":      "exclude = [\"app\"]\n[lint]\nignore = [\"ALL\"]\n",
		// ast-grep: a project config that would load native code.
		"sgconfig.yml": "ruleDirs: [evil]\ncustomLanguages:\n  evil:\n    libraryPath: ./evil.so\n    extensions: [py, go, js]\n",
		"evil/r.yml":   "id: evil\nlanguage: evil\nrule: {pattern: x}\n",
		"evil.so":      "not a library\n",
	}
	dir := newRepo(t, map[string]string{"README.md": "base\n"}, head)
	out := runScan(t, dir, scan.Options{
		Normalise:      sast.Options{ContextLines: 0, MaxFindings: 500},
		ExtraArtefacts: []string{"pwned-eslint", "pwned-eslint-mjs"},
	})
	requireStatus(t, out, allOK())
	for name := range out.Artefacts {
		t.Errorf("a repository config ran: /out/%s exists", name)
	}
	got := findingsAt(out)
	want := []key{
		{sast.ToolBandit, "app/run.py", 5},
		{sast.ToolBandit, "app/run.py", 8},
		{sast.ToolRuff, "app/run.py", 5},
		{sast.ToolRuff, "app/run.py", 8},
		{sast.ToolGitleaks, "app/secrets.py", 1},
		{sast.ToolESLint, "web/f.js", 5},
		{sast.ToolESLint, "web/f.js", 6},
		{sast.ToolGosec, "hostile.go", 11},
		{sast.ToolGosec, "hostile.go", 15},
		{sast.ToolASTGrep, "hostile.go", 11},
		{sast.ToolASTGrep, "app/run.py", 5},
	}
	for _, k := range want {
		if len(got[k]) == 0 {
			t.Errorf("planted finding not reported: %s %s:%d", k.Tool, k.Path, k.Line)
		}
	}
	// gitleaks' message names the rule, never the secret.
	data, _ := json.Marshal(out.Report)
	if strings.Contains(string(data), token) {
		t.Error("the secret appears in the report")
	}
	if t.Failed() {
		t.Logf("findings: %v", got)
	}
}

// The wrapper loses nothing: on a corpus of vulnerable samples, its
// findings on changed lines in the audit profile are exactly what each raw
// tool, run by hand in the same image with Quavon's configuration, reports
// on those lines.
func TestCorpusMatchesRawTools(t *testing.T) {
	files := copyDemo(t)
	dir := newRepo(t, map[string]string{"README.md": "base\n"}, files)
	out := runScan(t, dir, scan.Options{Normalise: sast.Options{ContextLines: 0, MaxFindings: 25000, Profile: sast.ProfileAudit}})
	checkOneSeverityPerWeakness(t, out.Report.Findings)
	requireStatus(t, out, allOK())
	wrapped := map[key][]string{}
	for k, rules := range findingsAt(out) {
		slices.Sort(rules)
		wrapped[k] = rules
	}
	raw := rawFindings(t, dir, files)
	perTool := map[sast.Tool]int{}
	for k, rules := range raw {
		slices.Sort(rules)
		if !slices.Equal(rules, wrapped[k]) {
			t.Errorf("%s %s:%d: raw tool %v, wrapper %v", k.Tool, k.Path, k.Line, rules, wrapped[k])
		}
		perTool[k.Tool] += len(rules)
	}
	for k, rules := range wrapped {
		if _, ok := raw[k]; !ok {
			t.Errorf("%s %s:%d: wrapper %v, raw tool nothing", k.Tool, k.Path, k.Line, rules)
		}
	}
	for _, tool := range sast.Tools {
		if tool == sast.ToolGitleaks {
			continue // the corpus has no secret
		}
		if perTool[tool] == 0 {
			t.Errorf("%s found nothing in the corpus: the comparison proves nothing for it", tool)
		}
	}
}

// seedGoCache seeds the raw gosec's GOCACHE with the image's compiled
// standard library as the driver does (deploy/images/README.md): a cache
// changes how long the go command takes, not what gosec reports, and
// without it the standard library was compiled again (32 s of this test).
const seedGoCache = `mkdir -p /tmp/gocache && cp -rs /opt/quavon/gocache/. /tmp/gocache/ && date +%s >/tmp/gocache/trim.txt`

// rawFindings runs each tool directly (docker run of the scanners image,
// no driver) over files and parses the reports.
func rawFindings(t *testing.T, dir string, files map[string]string) map[key][]string {
	t.Helper()
	lf, err := os.ReadFile(testenv.ImagesLock(t))
	if err != nil {
		t.Fatal(err)
	}
	var lock struct {
		Classes map[string]struct{ Ref string } `json:"classes"`
	}
	if err := json.Unmarshal(lf, &lock); err != nil {
		t.Fatal(err)
	}
	image := lock.Classes["scanners"].Ref
	byExt := func(exts ...string) []string {
		var out []string
		for name := range files {
			if slices.Contains(exts, filepath.Ext(name)) {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	py, js := byExt(".py"), byExt(".js")
	cmds := map[sast.Tool]string{
		sast.ToolASTGrep: "ast-grep scan -c /opt/quavon/ast-grep/sgconfig.yml --json=stream --include-metadata " + strings.Join(byExt(".py", ".js", ".go"), " "),
		sast.ToolBandit:  "bandit --ini /opt/quavon/bandit.ini -c /opt/quavon/bandit.yaml --ignore-nosec -q -f json " + strings.Join(py, " "),
		sast.ToolESLint:  "eslint --no-config-lookup --no-inline-config -c /opt/quavon/eslint/security.config.js -f json " + strings.Join(js, " ") + "; true",
		sast.ToolRuff:    "node /opt/quavon/ruff/check.mjs --output /dev/stdout " + strings.Join(py, " "),
		sast.ToolGosec:   "cd svc && " + seedGoCache + " && GOTOOLCHAIN=local GOFLAGS=-mod=mod GOPROXY=off GOWORK=off GOCACHE=/tmp/gocache GOTMPDIR=/tmp GOMODCACHE=/tmp/gomod GOPATH=/tmp/go gosec -nosec -fmt json ./... 2>/dev/null ; true",
	}
	got := map[key][]string{}
	for tool, script := range cmds {
		c := exec.Command("docker", "run", "--rm", "--network", "none", "--read-only", "--runtime", "runc",
			"--tmpfs", "/tmp:exec", "-e", "HOME=/tmp", "-v", dir+":/src:ro", "-w", "/src", "--entrypoint", "/bin/sh",
			image, "-c", script+"; test $? -le 1")
		stdout, err := c.Output()
		if err != nil {
			t.Fatalf("%s by hand: %v: %s", tool, err, stdout)
		}
		root := "/src"
		if tool == sast.ToolGosec {
			root = "/src"
		}
		parsed, err := sast.Parse(tool, stdout, root)
		if err != nil {
			t.Fatalf("%s: %v\n%s", tool, err, stdout)
		}
		for _, f := range parsed.Findings {
			k := key{tool, f.Path, f.StartLine}
			got[k] = append(got[k], f.RuleID)
		}
	}
	return got
}

// Only changed lines (± context) are reported, and a finding moved by
// inserted lines keeps its fingerprint.
func TestChangedLinesAndStableFingerprint(t *testing.T) {
	old := "import subprocess\n\ndef a(c):\n    return subprocess.call(c, shell=True)\n"
	dir := newRepo(t, map[string]string{"m.py": old}, map[string]string{
		"m.py": old + "\n\ndef b(c):\n    return subprocess.call(c, shell=True)\n",
	})
	opt := scan.Options{Tools: []sast.Tool{sast.ToolBandit}, Normalise: sast.Options{ContextLines: 0, MaxFindings: 50}}
	out := runScan(t, dir, opt)
	requireStatus(t, out, map[sast.Tool]sast.Status{sast.ToolBandit: sast.StatusOK})
	var lines []int
	fps := map[int]string{}
	for _, f := range out.Report.Findings {
		if f.RuleID == "B602" {
			lines = append(lines, f.StartLine)
			fps[f.StartLine] = f.Fingerprint
		}
	}
	if !slices.Equal(lines, []int{8}) || out.Report.OutsideChange == 0 {
		t.Fatalf("B602 reported on lines %v (outside %d), want only the changed line 8", lines, out.Report.OutsideChange)
	}
	// Insert lines above the new function: same finding, same fingerprint.
	writeFiles(t, dir, map[string]string{"m.py": old + "\n\n# one\n# two\n# three\n\ndef b(c):\n    return subprocess.call(c, shell=True)\n"})
	git(t, dir, "commit", "-q", "-am", "move")
	out2 := runScan(t, dir, opt)
	var moved []sast.Finding
	for _, f := range out2.Report.Findings {
		if f.RuleID == "B602" {
			moved = append(moved, f)
		}
	}
	if len(moved) != 1 || moved[0].StartLine != 12 || moved[0].Fingerprint != fps[8] {
		t.Fatalf("after the move: %+v, want line 12 with fingerprint %s", moved, fps[8])
	}
}

// A scanner absent from the image is reported missing and one that crashes
// (quavon-gosec, the gosec the driver runs) failed: never as "no
// findings".
func TestMissingAndCrashingTools(t *testing.T) {
	lock := testenv.ImagesLock(t)
	lf, err := os.ReadFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	var l map[string]any
	json.Unmarshal(lf, &l)
	classes := l["classes"].(map[string]any)
	base := classes["scanners"].(map[string]any)["ref"].(string)
	ctxDir := t.TempDir()
	writeFiles(t, ctxDir, map[string]string{"Dockerfile": "FROM " + base + "\nUSER 0\n" +
		"RUN rm /opt/quavon/tools/bin/gitleaks && printf '#!/bin/sh\\nkill -SEGV $$\\n' > /opt/quavon/tools/bin/quavon-gosec\n" +
		"USER 65532:65532\n"})
	build := exec.Command("docker", "build", "-q", "--network", "none", ctxDir)
	build.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	id, err := build.Output()
	if err != nil {
		t.Fatalf("docker build: %v", err)
	}
	imageID := strings.TrimSpace(string(id))
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", imageID).Run() })
	l["byo"] = map[string]any{"broken-scanners": map[string]any{"name": "broken-scanners", "ref": imageID}}
	data, _ := json.Marshal(l)
	lockPath := filepath.Join(t.TempDir(), "images.lock.json")
	os.WriteFile(lockPath, data, 0o644)
	lb := sandbox(t, lockPath)
	defer lb.Close()

	dir := newRepo(t, map[string]string{"README.md": "x\n"}, map[string]string{
		"go.mod": "module m\n\ngo 1.22\n", "a.go": "package m\n\nimport \"os/exec\"\n\nfunc R(s string) { exec.Command(\"sh\", \"-c\", s).Run() }\n",
	})
	plan, err := scan.NewPlan(context.Background(), dir, "main", scan.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	out, err := scan.Run(context.Background(), lb.Client, plan, scan.Options{ImageClass: "byo:broken-scanners"})
	if err != nil {
		t.Fatal(err)
	}
	requireStatus(t, out, map[sast.Tool]sast.Status{
		sast.ToolGitleaks: sast.StatusMissing, sast.ToolGosec: sast.StatusFailed, sast.ToolASTGrep: sast.StatusOK,
		sast.ToolBandit: sast.StatusNoFiles,
	})
	if !out.Incomplete() {
		t.Error("a scan with a missing and a failed tool is not incomplete")
	}
}
