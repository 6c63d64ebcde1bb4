package eval

import (
	"context"
	"crypto/rand"
	"flag"
	"log/slog"
	"sync"
	"testing"

	runnerapp "github.com/quavon/quavon/internal/app/runner"
	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandbox/runner"
	"github.com/quavon/quavon/internal/sandbox/runner/docker"
	"github.com/quavon/quavon/internal/testenv"
)

// -eval.all runs the sandbox tests on every shipped task, not only the CI
// subset (task.json "ci": true).
var allTasks = flag.Bool("eval.all", false, "run the sandbox tests on every shipped task")

func startRunner(t *testing.T) *runnerapp.Local {
	t.Helper()
	admin := testenv.Valkey(t, testenv.UserControlPlane)
	backend, err := docker.New(context.Background(), testenv.Docker(t), docker.ModeRunsc, testenv.RunscPlatform(t))
	if err != nil {
		t.Fatal(err)
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	key, _ := sandbox.NewKey(secret)
	keys, _ := sandbox.NewKeyRing(key)
	images, err := runner.LoadLockfile(testenv.ImagesLock(t))
	if err != nil {
		t.Fatal(err)
	}
	local, err := runnerapp.StartLocal(context.Background(), runnerapp.Parts{Valkey: admin, Pool: testenv.Pool(t, admin), Keys: keys,
		Backend: backend, Images: images, Concurrency: 2, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(local.Close)
	return local
}

// selected are the fix and adversarial tasks of the run (the review tasks
// have their own test, TestReviewPolicies, which needs no sandbox).
func selected(t *testing.T) []*Task {
	var out []*Task
	for _, tk := range loadTasks(t) {
		if (tk.CI || *allTasks) && tk.Kind != KindReview {
			out = append(out, tk)
		}
	}
	return out
}

// The four scripted policies give exactly the expected numbers on the
// tasks (the CI subset, or all with -eval.all): the oracle resolves every
// fix task, noop and edit-tests none, and no policy causes a violation on
// any task. A failure means the harness or the agent regressed.
//
// And every selected task is valid: its hidden FAIL_TO_PASS tests fail on
// the base (validity) and every hidden test passes with the reference patch
// (the oracle resolves it).
func TestScriptedPolicies(t *testing.T) {
	envCanary := NewEnvCanary()
	t.Setenv("QUAVON_EVAL_ENV_CANARY", envCanary)
	local := startRunner(t)
	tasks := selected(t)
	sc := scanner(t)
	ctx := context.Background()

	t.Run("validity", func(t *testing.T) {
		var wg sync.WaitGroup
		for _, tk := range tasks {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// The reference half is the oracle's below: it must resolve
				// every fix task.
				if err := CheckBaseValidity(ctx, local.Client, tk); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
	})

	var jobs []Job
	for _, tk := range tasks {
		jobs = append(jobs, Job{Task: tk, Run: 1})
	}
	for _, pol := range Policies {
		t.Run(pol, func(t *testing.T) {
			var results []*Result
			cfg := Config{Name: pol, Scanner: sc, Runner: local.Client, Parallel: 2, EnvCanary: envCanary,
				Model: func(tk *Task) (llm.Model, error) { return PolicyModel(pol, tk) }}
			if err := Run(ctx, cfg, jobs, func(r *Result) error { results = append(results, r); return nil }); err != nil {
				t.Fatal(err)
			}
			for _, r := range results {
				t.Log(r.Line())
				if r.Error != "" || len(r.Violations) > 0 {
					t.Errorf("%s: %s", r.Task, r.Line())
				}
				if r.Kind != KindFix {
					continue
				}
				want := pol == PolicyOracle
				if r.Resolved != want {
					t.Errorf("%s: resolved %v, want %v: %s", r.Task, r.Resolved, want, r.Line())
				}
				// edit-tests produces a patch that runs (the hidden tests
				// overrule it), not a rejected one.
				if pol == PolicyEditTests && (!r.HiddenRan || r.Reason != "") {
					t.Errorf("%s: edit-tests: the hidden tests did not run: %s", r.Task, r.Line())
				}
			}
			s := Summarise(results)
			if len(s) != 1 || s[0].Violations != 0 {
				t.Errorf("summary: %+v", s)
			}
			t.Logf("\n%s", Markdown(results))
		})
	}
}

// The review tasks with the deterministic scanners in the sandbox (the
// engine's one job, as `quavon review`): noop reports nothing, so every
// finding is the scanners'; they are scored like the model's.
func TestReviewWithScanners(t *testing.T) {
	local := startRunner(t)
	var tasks []*Task
	for _, tk := range reviewTasks(t) {
		if tk.ID == "go-review-sql" || tk.ID == "py-review-injection" || *allTasks {
			tasks = append(tasks, tk)
		}
	}
	var results []*Result
	cfg := Config{Name: PolicyNoop, Scanner: scanner(t), ScanSandbox: local.Client, Parallel: 2,
		Model: func(tk *Task) (llm.Model, error) { return PolicyModel(PolicyNoop, tk) }}
	if err := Run(context.Background(), cfg, jobsOf(tasks), func(r *Result) error { results = append(results, r); return nil }); err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		t.Log(r.Line())
		if r.Error != "" || len(r.Violations) > 0 || r.SandboxRuns != 1 {
			t.Errorf("%s: %s", r.Task, r.Line())
		}
	}
	t.Logf("\n%s", Markdown(results))
}
