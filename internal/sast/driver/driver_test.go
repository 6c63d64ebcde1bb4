package driver

// These tests hold the driver's own logic (statuses, environment, the
// copies it scans, report merging) with small shell programs in place of
// the scanners. The real scanners run in the scanners image in
// internal/scan's end-to-end tests.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/sast"
)

type fixture struct {
	cfg Config
	bin string
}

// newFixture lays out a snapshot as the host does: every file at its path
// in src, and the request's files (names, in order) under their neutral
// names in changed, Go files with their Src.
func newFixture(t *testing.T, files map[string]string, names []string, req sast.Request) *fixture {
	t.Helper()
	top := t.TempDir()
	cfg := Config{
		Work: filepath.Join(top, "work"), Out: filepath.Join(top, "out"), Opt: filepath.Join(top, "opt"),
		Home: filepath.Join(top, "work", ".home"), Path: filepath.Join(top, "bin"), DefaultTimeout: 10 * time.Second,
	}
	for _, d := range []string{cfg.Out, cfg.Opt, cfg.Home, cfg.Path, filepath.Join(cfg.Work, sast.SourceDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range files {
		p := filepath.Join(cfg.Work, sast.SourceDir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, name := range names {
		f := sast.ScanFile{Ext: sast.NeutralExt(name)}
		if strings.HasSuffix(name, ".go") {
			f.Src = name
		}
		req.Files = append(req.Files, f)
		p := filepath.Join(cfg.Work, sast.ChangedDir, filepath.FromSlash(sast.NeutralName(i, f.Ext)))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(files[name]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	req.Version = sast.RequestVersion
	data, _ := json.Marshal(req)
	if err := os.WriteFile(filepath.Join(cfg.Work, sast.RequestFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return &fixture{cfg: cfg, bin: cfg.Path}
}

// tool installs a fake scanner: a shell script.
func (f *fixture) tool(t *testing.T, name, script string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(f.bin, name), []byte("#!/bin/sh\n"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// optFile makes an empty file at name (slash-separated) in the image's
// Quavon directory.
func (f *fixture) optFile(t *testing.T, name string) {
	t.Helper()
	p := filepath.Join(f.cfg.Opt, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) run(t *testing.T) map[sast.Tool]sast.ToolRun {
	t.Helper()
	if err := Run(context.Background(), f.cfg); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(f.cfg.Out, sast.ManifestArtefact))
	if err != nil {
		t.Fatal(err)
	}
	var m sast.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	out := map[sast.Tool]sast.ToolRun{}
	for _, r := range m.Tools {
		out[r.Tool] = r
	}
	return out
}

// argAfter prints the argument after $1 in the script's argv.
const writeOut = `while [ $# -gt 0 ]; do case "$1" in -o|-out|--report-path|--output) shift; echo "${REPORT:-[]}" > "$1";; esac; shift; done`

func TestStatuses(t *testing.T) {
	f := newFixture(t, map[string]string{"a.py": "x = 1\n", "b.go": "package b\n"}, []string{"a.py", "b.go"}, sast.Request{
		TimeoutSeconds: 1,
	})
	f.tool(t, "bandit", writeOut+"; exit 1")         // findings: exit 1 is ok
	f.tool(t, "gitleaks", "exit 7")                  // error exit
	f.tool(t, "quavon-gosec", "/bin/sleep 30")       // hangs
	f.tool(t, "go", "exit 0")                        //
	f.tool(t, "ast-grep", "echo; exit 0")            // report on stdout
	f.tool(t, "node", "echo should not run; exit 9") // ESLint's: no JS file changed; no ruff/check.mjs: ruff is missing
	f.optFile(t, "eslint/lint.bundle.mjs")           // ESLint's program
	got := f.run(t)
	want := map[sast.Tool]sast.Status{
		sast.ToolBandit: sast.StatusOK, sast.ToolGitleaks: sast.StatusFailed, sast.ToolGosec: sast.StatusTimedOut,
		sast.ToolASTGrep: sast.StatusOK, sast.ToolESLint: sast.StatusNoFiles, sast.ToolRuff: sast.StatusMissing,
	}
	for tool, st := range want {
		if got[tool].Status != st {
			t.Errorf("%s: status %s (%s), want %s", tool, got[tool].Status, got[tool].Error, st)
		}
	}
	if got[sast.ToolBandit].Output != "bandit.json" || got[sast.ToolBandit].ExitCode != 1 {
		t.Errorf("bandit: %+v", got[sast.ToolBandit])
	}
	if got[sast.ToolGosec].DurationMillis < 900 {
		t.Errorf("gosec ran %d ms before its 1 s timeout", got[sast.ToolGosec].DurationMillis)
	}
	if got[sast.ToolGitleaks].ExitCode != 7 || got[sast.ToolGitleaks].Output != "" {
		t.Errorf("gitleaks: %+v", got[sast.ToolGitleaks])
	}
}

// A tool that exits 0 but writes no report failed.
func TestNoReportIsFailure(t *testing.T) {
	f := newFixture(t, map[string]string{"a.py": "x = 1\n"}, []string{"a.py"}, sast.Request{Tools: []sast.Tool{sast.ToolBandit}})
	f.tool(t, "bandit", "exit 0")
	got := f.run(t)
	if r := got[sast.ToolBandit]; r.Status != sast.StatusFailed || !strings.Contains(r.Error, "no report") {
		t.Fatalf("%+v", r)
	}
	if len(got) != 1 {
		t.Fatalf("ran %d tools, want only the requested one", len(got))
	}
}

// Every tool gets an environment built from scratch: nothing of the
// driver's own (GITLEAKS_CONFIG, NODE_OPTIONS, GOFLAGS) reaches it.
func TestEnvironmentIsBuiltFromScratch(t *testing.T) {
	t.Setenv("GITLEAKS_CONFIG", "/work/src/.gitleaks.toml")
	t.Setenv("NODE_OPTIONS", "--require /work/src/evil.js")
	f := newFixture(t, map[string]string{"a.py": "x = 1\n"}, []string{"a.py"}, sast.Request{Tools: []sast.Tool{sast.ToolBandit}})
	f.tool(t, "bandit", `env > "$HOME/env.txt"; `+writeOut)
	if r := f.run(t)[sast.ToolBandit]; r.Status != sast.StatusOK {
		t.Fatalf("%+v", r)
	}
	env, err := os.ReadFile(filepath.Join(f.cfg.Home, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"GITLEAKS_CONFIG", "NODE_OPTIONS"} {
		if strings.Contains(string(env), bad) {
			t.Errorf("%s reached the tool", bad)
		}
	}
}

// ast-grep scans a copy of the changed files in which ast-grep-ignore is
// blanked (same length, lines kept), under their neutral names, where no
// repository file but the changed ones exists; gitleaks scans a copy
// named by index whose root holds no .gitleaksignore, and a changed
// .gitleaksignore is scanned like any other file.
func TestCopies(t *testing.T) {
	src := "x := 1 // ast-grep-ignore\nexec.Command(\"sh\", \"-c\", s)\n"
	f := newFixture(t, map[string]string{
		"cmd/a.go": src, "sgconfig.yml": "ruleDirs: [evil]\n", ".gitleaksignore": "*\n", "go.mod": "module m\n",
		"deps/package-lock.json": "{}\n", "conf/x.yml": "a: b\n",
	}, []string{"cmd/a.go", ".gitleaksignore", "deps/package-lock.json", "conf/x.yml"},
		sast.Request{Tools: []sast.Tool{sast.ToolASTGrep, sast.ToolGitleaks}})
	f.tool(t, "ast-grep", `/usr/bin/find . -type f | /usr/bin/sort > "$HOME/ast-grep-files.txt"; /bin/cp 0/f.go "$HOME/ast-grep-a.go"; echo`)
	// The pack's Go rules: the scan's configuration names only them.
	if err := os.MkdirAll(filepath.Join(f.cfg.Opt, "ast-grep", "rules", "go"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.tool(t, "gitleaks", `/usr/bin/find . -type f | /usr/bin/sort > "$HOME/gitleaks-files.txt"; `+writeOut)
	got := f.run(t)
	for _, tool := range []sast.Tool{sast.ToolASTGrep, sast.ToolGitleaks} {
		if got[tool].Status != sast.StatusOK {
			t.Fatalf("%s: %+v", tool, got[tool])
		}
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(f.cfg.Home, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if files := read("ast-grep-files.txt"); files != "./0/f.go\n" {
		t.Errorf("ast-grep saw %q, want only the changed source file", files)
	}
	blanked := read("ast-grep-a.go")
	if strings.Contains(blanked, "ast-grep-ignore") || len(blanked) != len(src) || strings.Count(blanked, "\n") != 2 {
		t.Errorf("copy for ast-grep = %q", blanked)
	}
	if files := read("gitleaks-files.txt"); files != "./0/f\n./1/f\n./2/f\n./3/f.yml\n" {
		t.Errorf("gitleaks saw %q, want every changed file by index, the YAML one still .yml", files)
	}
}

// gitleaks' log names the files it skipped; each is a note of its run.
func TestGitleaksSkipsAreNoted(t *testing.T) {
	f := newFixture(t, map[string]string{"a.env": "MZ token\n", "b.txt": "ok\n"}, []string{"a.env", "b.txt"},
		sast.Request{Tools: []sast.Tool{sast.ToolGitleaks}})
	f.tool(t, "gitleaks", `echo "9:20AM DBG skipping binary file mime_type=application/vnd.microsoft.portable-executable path=0/f" >&2; `+writeOut)
	r := f.run(t)[sast.ToolGitleaks]
	if r.Status != sast.StatusOK || len(r.NotCovered) != 1 || r.NotCovered[0].File != 0 ||
		!strings.Contains(r.NotCovered[0].Reason, "skipping binary file") {
		t.Fatalf("%+v", r)
	}
}

// gosec runs once per module, with -tests and -files; the reports
// are merged, and a changed file Go does not build is noted.
func TestGosecPerModule(t *testing.T) {
	f := newFixture(t, map[string]string{
		"go.mod": "module a\n", "x/a.go": "package x\n", "x/a_windows.go": "package x\n",
		"sub/go.mod": "module b\n", "sub/y/b.go": "package y\n",
	}, []string{"sub/y/b.go", "x/a.go", "x/a_windows.go"}, sast.Request{Tools: []sast.Tool{sast.ToolGosec}})
	src := filepath.Join(f.cfg.Work, sast.SourceDir)
	f.tool(t, "go", `exit 0`)
	// The image's map of the standard library's export data is passed on.
	stdExport := filepath.Join(f.cfg.Opt, "gocache-std.txt")
	if err := os.WriteFile(stdExport, []byte("fmt /opt/quavon/gocache/00/x-d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The image's build cache: the driver seeds what its manifest lists, and
	// passes the cache on for quavon-gosec to seed the rest.
	seed := filepath.Join(f.cfg.Opt, "gocache")
	for _, e := range []string{"ab/ab12-d", "cd/cd34-d"} {
		p := filepath.Join(seed, filepath.FromSlash(e))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(f.cfg.Opt, "gocache-list.txt"), []byte("ab/ab12-d\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.tool(t, "quavon-gosec", `pkgs=""; out=""; tests=""; list=""; std=""; seed=""; while [ $# -gt 0 ]; do case "$1" in -out) shift; out="$1";; -files) shift; list="$1";; -std-export) shift; std="$1";; -gocache-seed) shift; seed="$1";; -tests) tests=1;; ./*|.) pkgs="$pkgs $1";; esac; shift; done
[ -n "$tests" ] && [ -n "$list" ] && [ "$std" = "`+stdExport+`" ] && [ "$seed" = "`+seed+`" ] || exit 3
[ -L "$GOCACHE/ab/ab12-d" ] && [ ! -e "$GOCACHE/cd/cd34-d" ] || exit 4
case "$(pwd)" in
*/sub) echo '{"Dir":"`+src+`/sub/y","GoFiles":["b.go"]}';;
*) echo '{"Dir":"`+src+`/x","GoFiles":["a.go"],"IgnoredGoFiles":["a_windows.go"]}';;
esac >"$list"
echo "{\"Golang errors\":{},\"Issues\":[{\"file\":\"$(pwd)\",\"details\":\"$pkgs\"}],\"GosecVersion\":\"dev\"}" > "$out"; exit 1`)
	got := f.run(t)
	r := got[sast.ToolGosec]
	if r.Status != sast.StatusOK || r.Files != 3 {
		t.Fatalf("%+v", r)
	}
	if len(r.NotCovered) != 1 || r.NotCovered[0].File != 2 || !strings.Contains(r.NotCovered[0].Reason, "not in the build") {
		t.Errorf("notes %+v, want x/a_windows.go outside the build", r.NotCovered)
	}
	data, _ := os.ReadFile(filepath.Join(f.cfg.Out, "gosec.json"))
	var rep struct {
		Issues []struct{ File, Details string } `json:"Issues"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Issues) != 2 {
		t.Fatalf("merged %s", data)
	}
	// files in request order: sub/y/b.go, then x/a.go
	if rep.Issues[0].File != filepath.Join(src, "sub") || strings.TrimSpace(rep.Issues[0].Details) != "./y" ||
		rep.Issues[1].File != src || strings.TrimSpace(rep.Issues[1].Details) != "./x" {
		t.Fatalf("modules and packages: %s", data)
	}
}

func TestBadRequests(t *testing.T) {
	for name, file := range map[string]sast.ScanFile{
		"escape":      {Ext: ".go", Src: "../etc/passwd"},
		"absolute":    {Ext: ".go", Src: "/etc/passwd"},
		"flag":        {Ext: ".go", Src: "-rf"},
		"missing src": {Ext: ".go", Src: "nope.go"},
		"unclean":     {Ext: ".go", Src: "a//b.go"},
		"bad ext":     {Ext: ".P Y"},
		"missing":     {Ext: ".rb"},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, map[string]string{"a.py": ""}, []string{"a.py"}, sast.Request{})
			data, _ := json.Marshal(sast.Request{Version: sast.RequestVersion, Files: []sast.ScanFile{{Ext: ".py"}, file}})
			if err := os.WriteFile(filepath.Join(f.cfg.Work, sast.RequestFile), data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := Run(context.Background(), f.cfg); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}
