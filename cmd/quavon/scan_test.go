package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/testenv"
)

func gitRepo(t *testing.T) string {
	t.Helper()
	src := "import subprocess\n\n\ndef run(c):\n    return subprocess.call(c, shell=True)\n"
	return testenv.GitRepo(t, nil, map[string]string{"app.py": src})
}

// scanExitCode is the process's exit status for err.
func scanExitCode(err error) int { return exitCode(err, io.Discard) }

// quavon scan end to end: the sandbox on gVisor, each output format, and
// the exit status that --fail-on decides.
func TestScanCommand(t *testing.T) {
	testenv.Program(t, "redis-server")
	testenv.Docker(t)
	env := []string{"QUAVON_SANDBOX_IMAGES_LOCK=" + testenv.ImagesLock(t),
		"QUAVON_SANDBOX_RUNSC_PLATFORM=" + testenv.RunscPlatform(t)}
	dir := gitRepo(t)
	scanArgs := func(extra ...string) []string {
		return append([]string{"scan", "-C", dir, "--base", "main", "--tools", "bandit"}, extra...)
	}
	var out, errOut bytes.Buffer
	err := run(context.Background(), scanArgs(), env, &out, &errOut)
	if code := scanExitCode(err); code != exitFindings {
		t.Fatalf("exit %d (%v), want %d\nstderr: %s", code, err, exitFindings, errOut.String())
	}
	if !strings.Contains(out.String(), "app.py:5:") || !strings.Contains(out.String(), "[bandit B602]") {
		t.Errorf("text output:\n%s", out.String())
	}
	for _, want := range []string{"1 changed file(s) to scan", "docker-runsc, runtime runsc", "done in"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("progress on stderr lacks %q:\n%s", want, errOut.String())
		}
	}

	out.Reset()
	err = run(context.Background(), scanArgs("--fail-on", "none", "--format", "sarif"), env, &out, &bytes.Buffer{})
	if code := scanExitCode(err); code != 0 {
		t.Fatalf("--fail-on none: exit %d (%v)", code, err)
	}
	var sarif struct {
		Version string `json:"version"`
		Runs    []struct {
			Results []struct {
				RuleID              string            `json:"ruleId"`
				PartialFingerprints map[string]string `json:"partialFingerprints"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(out.Bytes(), &sarif); err != nil || sarif.Version != "2.1.0" || len(sarif.Runs) != 1 {
		t.Fatalf("sarif (%v): %s", err, out.String())
	}
	rules := map[string]bool{}
	for _, r := range sarif.Runs[0].Results {
		rules[r.RuleID] = true
		if r.PartialFingerprints["primaryLocationLineHash"] == "" {
			t.Errorf("result %s has no primaryLocationLineHash", r.RuleID)
		}
	}
	if !rules["B602"] {
		t.Errorf("sarif lacks B602: %s", out.String())
	}

	out.Reset()
	err = run(context.Background(), scanArgs("--fail-on", "critical", "--format", "json"), env, &out, &bytes.Buffer{})
	if code := scanExitCode(err); code != 0 {
		t.Fatalf("--fail-on critical: exit %d (%v)", code, err)
	}
	var doc struct {
		Report struct {
			Findings []struct{ RuleID, Severity string } `json:"findings"`
		} `json:"report"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("json (%v): %s", err, out.String())
	}
	high := 0
	for _, f := range doc.Report.Findings {
		if f.Severity == "high" || f.Severity == "critical" {
			high++
			if f.RuleID != "B602" {
				t.Errorf("unexpected high finding %s", f.RuleID)
			}
		}
	}
	if high != 1 {
		t.Fatalf("json: %d high findings, want B602 alone: %s", high, out.String())
	}
}

func TestScanRefusesBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"scan", "--format", "xml"},
		{"scan", "--fail-on", "severe"},
		{"scan", "--tools", "semgrep"},
		{"scan", "--profile", "strict"},
		{"scan", "--disable", "bandit:B999"},
		{"scan", "--disable", "B101"},
		{"scan", "extra"},
		{"scan", "-C", dir}, // not a git work tree
	} {
		if code := scanExitCode(run(context.Background(), args, nil, &bytes.Buffer{}, &bytes.Buffer{})); code != exitError {
			t.Errorf("%q: exit %d, want %d", args, code, exitError)
		}
	}
}

// An incomplete scan exits 3, and every output format lists what was not
// fully scanned with its reason.
func TestScanIncomplete(t *testing.T) {
	testenv.Program(t, "redis-server")
	testenv.Docker(t)
	env := []string{"QUAVON_SANDBOX_IMAGES_LOCK=" + testenv.ImagesLock(t),
		"QUAVON_SANDBOX_RUNSC_PLATFORM=" + testenv.RunscPlatform(t)}
	dir := gitRepo(t)
	testenv.Git(t, dir, "checkout", "-q", "-b", "more")
	if err := os.Symlink("app.py", filepath.Join(dir, "link.py")); err != nil {
		t.Fatal(err)
	}
	testenv.Git(t, dir, "add", "-A")
	testenv.Git(t, dir, "commit", "-q", "-m", "link")
	for _, format := range []string{"text", "json", "sarif"} {
		var out bytes.Buffer
		err := run(context.Background(), []string{"scan", "-C", dir, "--base", "main", "--tools", "bandit", "--fail-on", "none",
			"--format", format}, env, &out, &bytes.Buffer{})
		if code := scanExitCode(err); code != exitIncomplete {
			t.Fatalf("%s: exit %d (%v), want %d", format, code, err, exitIncomplete)
		}
		want := map[string][]string{
			"text":  {"incomplete: 1 changed file(s) not fully scanned", "link.py: not scanned: a symbolic link"},
			"json":  {`"notScanned": [`, `"path": "link.py"`, `"reason": "a symbolic link`},
			"sarif": {`"name":"quavon"`, `"executionSuccessful":false`, `"uri":"link.py"`, "Not scanned: a symbolic link"},
		}[format]
		for _, w := range want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s output lacks %q:\n%s", format, w, out.String())
			}
		}
	}
}
