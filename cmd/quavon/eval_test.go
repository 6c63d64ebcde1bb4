package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/eval"
	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/llm/llmfake"
	"github.com/quavon/quavon/internal/testenv"
)

const evalTasks = "../../eval/tasks"

// quavon eval with a scripted policy on tasks that need no sandbox: the
// results file gets one line per run, a second invocation resumes (runs
// nothing), the Markdown table goes to stdout, compare reads two files.
func TestEvalCommandResumeAndCompare(t *testing.T) {
	dir := t.TempDir()
	results := filepath.Join(dir, "obey.jsonl")
	only := []string{"adv-workflow", "adv-secret-summary", "adv-secret-copy"}
	var out, errOut bytes.Buffer
	o := &evalOptions{env: &env{stdout: &out, stderr: &errOut}, Tasks: evalTasks, Model: eval.PolicyObey, Runs: 1, Parallel: 2,
		Results: results, Only: only, Markdown: filepath.Join(dir, "table.md")}
	if err := runEval(context.Background(), o); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	rs, err := eval.ReadResults(results)
	if err != nil || len(rs) != 3 {
		t.Fatalf("results: %d, %v", len(rs), err)
	}
	for _, want := range []string{"3 to do", "[3/3]", "adv-secret-summary run 1 (obey-injection)"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
		}
	}
	if !strings.Contains(out.String(), "| obey-injection | 0/0 (0%) |") {
		t.Errorf("markdown:\n%s", out.String())
	}
	if b, _ := os.ReadFile(o.Markdown); string(b) != out.String() {
		t.Error("--markdown differs from stdout")
	}
	// Resume: nothing left to do; a torn last line is tolerated.
	f, _ := os.OpenFile(results, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"task":"adv-wo`)
	f.Close()
	out.Reset()
	errOut.Reset()
	if err := runEval(context.Background(), o); err != nil {
		t.Fatalf("resume: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "0 to do, 3 already") || strings.Contains(errOut.String(), "[1/") {
		t.Errorf("resume:\n%s", errOut.String())
	}
	other := filepath.Join(dir, "noop.jsonl")
	o2 := &evalOptions{env: &env{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}, Tasks: evalTasks, Model: eval.PolicyNoop, Runs: 1,
		Parallel: 1, Results: other, Only: only}
	if err := runEval(context.Background(), o2); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	root := newRoot(&env{stdout: &out, stderr: &errOut})
	root.SetArgs([]string{"eval", "compare", results, other})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "| violations | 0 | 0 |") {
		t.Errorf("compare:\n%s", out.String())
	}
}

// --kind review: the review tasks of the CI subset through the review
// engine, precision and recall in the table; no sandbox is needed.
func TestEvalCommandReview(t *testing.T) {
	var out, errOut bytes.Buffer
	o := &evalOptions{env: &env{stdout: &out, stderr: &errOut}, Tasks: evalTasks, Model: eval.PolicyOracle, Runs: 1, Parallel: 2,
		Results: filepath.Join(t.TempDir(), "r.jsonl"), CIOnly: true, Kind: eval.KindReview}
	if err := runEval(context.Background(), o); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "| oracle | 0/0 (0%) | - | - | - | 3/3 (100%) | 3/3 (100%) | 0 |") ||
		strings.Contains(errOut.String(), "the sandbox is") || !strings.Contains(errOut.String(), "review: found 2/2 planted") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
}

func TestEvalCommandErrors(t *testing.T) {
	for name, o := range map[string]*evalOptions{
		"no model":      {Tasks: evalTasks, Runs: 1, Parallel: 1},
		"bad model":     {Tasks: evalTasks, Model: "gpt", Runs: 1, Parallel: 1},
		"bad provider":  {Tasks: evalTasks, Model: "gemini:x", Runs: 1, Parallel: 1},
		"unknown task":  {Tasks: evalTasks, Model: "noop", Runs: 1, Parallel: 1, Only: []string{"nope"}},
		"no tasks dir":  {Tasks: t.TempDir(), Model: "noop", Runs: 1, Parallel: 1},
		"bad kind":      {Tasks: evalTasks, Model: "noop", Runs: 1, Parallel: 1, Kind: "lint"},
		"zero runs":     {Tasks: evalTasks, Model: "noop", Runs: 0, Parallel: 1},
		"results wrong": {Tasks: evalTasks, Model: "noop", Runs: 1, Parallel: 1, Results: "eval_test.go"},
	} {
		o.env = &env{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
		if err := runEval(context.Background(), o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// quavon eval end to end on the local gVisor sandbox: the oracle resolves
// a fix task whose hidden tests run in the sandbox.
func TestEvalCommandSandbox(t *testing.T) {
	testenv.Program(t, "redis-server")
	testenv.Docker(t)
	environ := []string{"QUAVON_SANDBOX_IMAGES_LOCK=" + testenv.ImagesLock(t), "QUAVON_SANDBOX_RUNSC_PLATFORM=" + testenv.RunscPlatform(t)}
	var out, errOut bytes.Buffer
	o := &evalOptions{env: &env{environ: environ, stdout: &out, stderr: &errOut}, Tasks: evalTasks, Model: eval.PolicyOracle, Runs: 1,
		Parallel: 1, Results: filepath.Join(t.TempDir(), "r.jsonl"), Only: []string{"py-slugify"}}
	if err := runEval(context.Background(), o); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "| oracle | 1/1 (100%) | - | 1/1 | - | - | - | 0 |") || !strings.Contains(errOut.String(), "runtime runsc") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
	// --scanners: a review task with the scanners in the sandbox (noop
	// reports nothing: the finding is the scanners').
	out.Reset()
	errOut.Reset()
	o = &evalOptions{env: &env{environ: environ, stdout: &out, stderr: &errOut}, Tasks: evalTasks, Model: eval.PolicyNoop, Runs: 1,
		Parallel: 1, Results: filepath.Join(t.TempDir(), "r.jsonl"), Only: []string{"go-review-sql"}, Scanners: true}
	if err := runEval(context.Background(), o); err != nil {
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "go-review-sql run 1 (noop): review: found 1/1 planted") || !strings.Contains(errOut.String(), "1 sandbox runs") {
		t.Errorf("--scanners:\n%s", errOut.String())
	}
	// eval validate: the base fails FAIL_TO_PASS, the reference passes.
	out.Reset()
	errOut.Reset()
	if err := run(context.Background(), []string{"eval", "validate", "--tasks", evalTasks, "--only", "js-leftpad"}, environ, &out, &errOut); err != nil {
		t.Fatalf("validate: %v\n%s", err, errOut.String())
	}
	if out.String() != "1 task(s) valid\n" || !strings.Contains(errOut.String(), "ok js-leftpad") {
		t.Errorf("validate:\n%s\n%s", out.String(), errOut.String())
	}
}

// A real model is one flag: --model anthropic:MODEL or openai:MODEL, here
// against the provider emulator through the official SDKs; tokens and
// cost are the provider's usage at the model's price.
func TestEvalCommandProviderModel(t *testing.T) {
	for _, prov := range []string{"anthropic", "openai"} {
		t.Run(prov, func(t *testing.T) {
			const key = "sk-test-key-000000000000000000000000"
			model := map[string]string{"anthropic": "claude-sonnet-5-5", "openai": "gpt-5"}[prov]
			s := llmfake.New(llmfake.Options{APIKey: key, Models: []string{model}, Script: llm.Steps(
				llm.Call("create_file", map[string]string{"path": ".github/workflows/x.yml", "content": "on: push\n"}),
				llm.Call("finish", map[string]string{"summary": "done"}))})
			defer s.Close()
			keyFile := filepath.Join(t.TempDir(), "key")
			os.WriteFile(keyFile, []byte(key+"\n"), 0o600)
			url := map[string]string{"anthropic": s.AnthropicURL(), "openai": s.OpenAIURL()}[prov]
			environ := []string{"QUAVON_LLM_FIX_API_KEY_FILE=" + keyFile, "QUAVON_LLM_FIX_BASE_URL=" + url}
			results := filepath.Join(t.TempDir(), "r.jsonl")
			var out, errOut bytes.Buffer
			err := run(context.Background(), []string{"eval", "--tasks", evalTasks, "--only", "adv-workflow", "--model", prov + ":" + model,
				"--results", results}, environ, &out, &errOut)
			if err != nil {
				t.Fatalf("%v\n%s", err, errOut.String())
			}
			rs, err := eval.ReadResults(results)
			if err != nil || len(rs) != 1 {
				t.Fatalf("%d results, %v", len(rs), err)
			}
			r := rs[0]
			if r.Model != prov+":"+model || r.Tokens == 0 || r.CostMicros == 0 || r.Steps != 2 || len(r.Violations) != 0 || r.Error != "" {
				t.Errorf("%+v", r)
			}
			if s.Calls() != 2 {
				t.Errorf("%d calls", s.Calls())
			}
		})
	}
}
