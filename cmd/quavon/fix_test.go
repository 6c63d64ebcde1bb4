package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/testenv"
)

func fixRepo(t *testing.T) (dir, issue string) {
	t.Helper()
	dir = testenv.GitRepo(t, nil, map[string]string{"calc.go": "package calc\n\nfunc Add(a, b int) int { return a - b }\n"})
	issue = filepath.Join(t.TempDir(), "issue.md")
	if err := os.WriteFile(issue, []byte("# Add subtracts\n\nAdd(1, 2) returns -1.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, issue
}

func fixScript() llm.Script {
	return llm.Steps(
		llm.Call("read_file", map[string]any{"path": "calc.go"}),
		llm.Call("edit_file", map[string]string{"path": "calc.go", "oldText": "a - b", "newText": "a + b"}),
		llm.Call("finish", map[string]string{"summary": "Add adds."}),
	)
}

// quavon fix with a scripted model and no test command: the patch on
// stdout, progress on stderr, the work tree untouched; --apply applies it.
func TestFixCommand(t *testing.T) {
	dir, issue := fixRepo(t)
	var out, errOut bytes.Buffer
	o := &fixOptions{env: &env{stdout: &out, stderr: &errOut}, Dir: dir, Issue: issue,
		model: llm.NewScripted(fixScript(), "", llm.Price{})}
	if err := runFix(context.Background(), o); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "+func Add(a, b int) int { return a + b }") {
		t.Errorf("patch:\n%s", out.String())
	}
	for _, want := range []string{`"Add subtracts" on HEAD`, "step  2  edit_file", "3 step(s), 0 sandbox run(s)", "summary: Add adds."} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "calc.go")); !strings.Contains(string(b), "a - b") {
		t.Fatal("the work tree changed without --apply")
	}

	patchFile := filepath.Join(t.TempDir(), "fix.patch")
	o = &fixOptions{env: &env{stdout: &out, stderr: &errOut}, Dir: dir, Issue: issue, Out: patchFile, Apply: true,
		model: llm.NewScripted(fixScript(), "", llm.Price{})}
	if err := runFix(context.Background(), o); err != nil {
		t.Fatalf("--apply: %v\n%s", err, errOut.String())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "calc.go")); !strings.Contains(string(b), "a + b") {
		t.Errorf("--apply did not apply:\n%s", b)
	}
	if b, _ := os.ReadFile(patchFile); !strings.Contains(string(b), "+func Add") {
		t.Errorf("--out:\n%s", b)
	}
}

// No patch: exit 1 with the reason; a refused edit leaves the tree alone.
func TestFixCommandNoPatch(t *testing.T) {
	dir, issue := fixRepo(t)
	var errOut bytes.Buffer
	o := &fixOptions{env: &env{stdout: &bytes.Buffer{}, stderr: &errOut}, Dir: dir, Issue: issue, Apply: true,
		model: llm.NewScripted(llm.Steps(
			llm.Call("create_file", map[string]string{"path": ".github/workflows/x.yml", "content": "on: push\n"}),
			llm.Call("finish", map[string]string{"summary": "x"})), "", llm.Price{})}
	err := runFix(context.Background(), o)
	if code := exitCode(err, &bytes.Buffer{}); code != exitNoPatch || !strings.Contains(err.Error(), "no_patch") {
		t.Fatalf("exit %d: %v\n%s", code, err, errOut.String())
	}
	if _, err := os.Stat(filepath.Join(dir, ".github")); err == nil {
		t.Error("a refused file was written")
	}
	// A test command needs an image class.
	o = &fixOptions{env: &env{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}, Dir: dir, Issue: issue, Test: "go test ./...",
		model: llm.NewScripted(fixScript(), "", llm.Price{})}
	if err := runFix(context.Background(), o); err == nil || !strings.Contains(err.Error(), "--image-class") {
		t.Errorf("without --image-class: %v", err)
	}
}

// quavon fix with the local sandbox: run_tests runs the test command on
// gVisor on HEAD's tree with the agent's edit, and its exit code reaches
// the model and the progress.
func TestFixCommandSandbox(t *testing.T) {
	testenv.Program(t, "redis-server")
	testenv.Docker(t)
	environ := []string{"QUAVON_SANDBOX_IMAGES_LOCK=" + testenv.ImagesLock(t), "QUAVON_SANDBOX_RUNSC_PLATFORM=" + testenv.RunscPlatform(t)}
	dir, issue := fixRepo(t)
	model := llm.NewScripted(llm.Steps(
		llm.Call("run_tests", struct{}{}),
		llm.Call("edit_file", map[string]string{"path": "calc.go", "oldText": "a - b", "newText": "a + b"}),
		llm.Call("run_tests", struct{}{}),
		llm.Call("finish", map[string]string{"summary": "Add adds."}),
	), "", llm.Price{})
	var out, errOut bytes.Buffer
	o := &fixOptions{env: &env{environ: environ, stdout: &out, stderr: &errOut}, Dir: dir, Issue: issue, ImageClass: "byo:smoke",
		Test: `grep -q "a + b" calc.go && echo fixed`, model: model}
	if err := runFix(context.Background(), o); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	for _, want := range []string{"runtime runsc", "sandbox  test  exit 1", "sandbox  test  exit 0", "2 sandbox run(s)"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
		}
	}
	if !strings.Contains(out.String(), "+func Add(a, b int) int { return a + b }") {
		t.Errorf("patch:\n%s", out.String())
	}
}
