package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/llm/llmfake"
	"github.com/quavon/quavon/internal/sast"
	"github.com/quavon/quavon/internal/testenv"
)

// quavon review with the configured model (the Anthropic provider against
// the provider emulator), scanners skipped: the verified finding on a
// changed line is printed in every format, the unverified one is dropped,
// and --fail-on decides the exit status.
func TestReviewCommandWithModel(t *testing.T) {
	t.Parallel()
	dir := gitRepo(t) // app.py line 5: subprocess.call(c, shell=True)
	script := func() llm.Script {
		return llm.Steps(
			llm.Call("report_finding", map[string]any{"path": "app.py", "startLine": 5, "endLine": 5, "severity": "high",
				"category": "security", "title": "Shell injection", "body": "c reaches a shell", "quote": "subprocess.call(c, shell=True)"}),
			llm.Call("report_finding", map[string]any{"path": "app.py", "startLine": 5, "endLine": 5, "severity": "high",
				"category": "security", "title": "Invented", "body": "x", "quote": "os.system(c)"}),
			llm.Call("finish", map[string]string{"summary": "one problem"}))
	}
	key := filepath.Join(t.TempDir(), "key")
	os.WriteFile(key, []byte("sk-ant-test-key-000000000000000000\n"), 0o600)
	for _, format := range []string{"text", "json", "github", "sarif"} {
		s := llmfake.New(llmfake.Options{APIKey: "sk-ant-test-key-000000000000000000", Models: []string{"claude-sonnet-5-5"}, Script: script()})
		env := []string{"QUAVON_LLM_PROVIDER=anthropic", "QUAVON_LLM_MODEL=claude-sonnet-5-5", "QUAVON_LLM_API_KEY_FILE=" + key,
			"QUAVON_LLM_BASE_URL=" + s.AnthropicURL()}
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{"review", "-C", dir, "--base", "main", "--no-scanners", "--format", format}, env, &out, &errOut)
		s.Close()
		if code := scanExitCode(err); code != exitFindings {
			t.Fatalf("%s: exit %d (%v)\nstderr: %s", format, code, err, errOut.String())
		}
		got := out.String()
		switch format {
		case "text":
			if !strings.Contains(got, "app.py:5: high [model] Shell injection") || strings.Contains(got, "Invented") ||
				!strings.Contains(got, "1 model finding(s) dropped as unverified") || !strings.Contains(got, "scanners: skipped") {
				t.Errorf("text:\n%s", got)
			}
		case "json":
			var res struct {
				Findings []struct{ Path, Severity, Title string }
				Dropped  int `json:"droppedUnverified"`
			}
			if err := json.Unmarshal(out.Bytes(), &res); err != nil || len(res.Findings) != 1 || res.Dropped != 1 {
				t.Errorf("json %v: %s", err, got)
			}
		case "github":
			if !strings.Contains(got, "| high | `app.py:5` | Shell injection | AI review |") {
				t.Errorf("github:\n%s", got)
			}
		case "sarif":
			var log struct {
				Version string
				Runs    []struct {
					Tool    struct{ Driver struct{ Name string } }
					Results []struct{ RuleID string }
				}
			}
			if err := json.Unmarshal(out.Bytes(), &log); err != nil || log.Version != "2.1.0" || len(log.Runs) == 0 ||
				log.Runs[len(log.Runs)-1].Tool.Driver.Name != "quavon-review" || len(log.Runs[len(log.Runs)-1].Results) != 1 {
				t.Errorf("sarif %v: %s", err, got)
			}
		}
		if format == "text" && !strings.Contains(errOut.String(), "AI review") {
			t.Errorf("no progress on stderr: %s", errOut.String())
		}
	}
	// --fail-on none: exit 0.
	s := llmfake.New(llmfake.Options{APIKey: "sk-ant-test-key-000000000000000000", Models: []string{"claude-sonnet-5-5"}, Script: script()})
	defer s.Close()
	env := []string{"QUAVON_LLM_PROVIDER=anthropic", "QUAVON_LLM_MODEL=claude-sonnet-5-5", "QUAVON_LLM_API_KEY_FILE=" + key,
		"QUAVON_LLM_BASE_URL=" + s.AnthropicURL()}
	if err := run(context.Background(), []string{"review", "-C", dir, "--base", "main", "--no-scanners", "--fail-on", "none"}, env,
		&bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Errorf("--fail-on none: %v", err)
	}
}

// Without a model, quavon review says it runs the scanners only.
func TestReviewCommandWithoutModel(t *testing.T) {
	t.Parallel()
	dir := testenv.GitRepo(t, nil, map[string]string{"notes.txt": "hello\n"})
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"review", "-C", dir, "--base", "main", "--no-scanners"}, nil, &out, &errOut)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "no model is configured") || !strings.Contains(out.String(), "model: none configured") {
		t.Errorf("stderr %q stdout %q", errOut.String(), out.String())
	}
	err = run(context.Background(), []string{"review", "-C", dir, "--format", "xml"}, nil, &out, &errOut)
	if scanExitCode(err) != exitError {
		t.Errorf("--format xml: %v", err)
	}
}

// quavon review --byo: a bring-your-own scanner image of the lockfile runs
// in the local sandbox beside the scanners; its finding joins bandit's on
// the same line and weakness, and an image the lockfile lacks is reported
// missing (the review is then incomplete, unless a finding fails it).
func TestReviewCommandBYO(t *testing.T) {
	testenv.Program(t, "redis-server")
	testenv.Docker(t)
	acme := testenv.BYOImage(t, map[string]string{sast.BYORunCommand: "#!/bin/sh\n" +
		`printf '{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"acme","rules":[{"id":"ACME-SHELL","properties":{"tags":["CWE-78"]}}]}},` +
		`"results":[{"ruleId":"ACME-SHELL","level":"error","message":{"text":"shell"},` +
		`"locations":[{"physicalLocation":{"artifactLocation":{"uri":"changed/0/f.py"},"region":{"startLine":5}}}]}]}]}' > /out/results.sarif` + "\n"})
	env := []string{"QUAVON_SANDBOX_IMAGES_LOCK=" + testenv.LockWithBYO(t, map[string]string{"acme": acme}),
		"QUAVON_SANDBOX_RUNSC_PLATFORM=" + testenv.RunscPlatform(t)}
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"review", "-C", gitRepo(t), "--base", "main", "--byo", "acme", "--byo", "absent",
		"--format", "json"}, env, &out, &errOut)
	if code := scanExitCode(err); code != exitFindings {
		t.Fatalf("exit %d (%v)\nstderr: %s", code, err, errOut.String())
	}
	var res struct {
		Findings []struct {
			StartLine int
			Tools     []string
		}
		Scanners []sast.ToolRun `json:"scanners"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	st := map[sast.Tool]sast.Status{}
	for _, r := range res.Scanners {
		st[r.Tool] = r.Status
	}
	if st["byo:acme"] != sast.StatusOK || st["byo:absent"] != sast.StatusMissing || st["bandit"] != sast.StatusOK {
		t.Errorf("scanners %v", st)
	}
	joined := false
	for _, f := range res.Findings {
		joined = joined || (f.StartLine == 5 && slices.Contains(f.Tools, "bandit") && slices.Contains(f.Tools, "byo:acme"))
	}
	if !joined {
		t.Errorf("findings %s", out.String())
	}
	if err := run(context.Background(), []string{"review", "-C", gitRepo(t), "--byo", "byo:acme"}, env, &out, &errOut); scanExitCode(err) != exitError {
		t.Errorf("--byo byo:acme: %v", err)
	}
}
