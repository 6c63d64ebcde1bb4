package fixrun_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/fix/fixagent"
	"github.com/quavon/quavon/internal/fix/fixrun"
	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/secret/leaks"
	"github.com/quavon/quavon/internal/testenv"
)

const (
	baseSHA = "0123456789abcdef0123456789abcdef01234567"
	canary  = "ghp_CanaryCanaryCanaryCanaryCanary012345"
)

func files() map[string]patch.MapFile {
	return map[string]patch.MapFile{"calc.go": {Content: "package calc\n\nfunc Add(a, b int) int { return a - b }\n"}}
}

type printSandbox struct{}

func (printSandbox) Run(context.Context, fix.TestKind, []patch.FixFileChange) (*fixagent.SandboxResult, error) {
	return &fixagent.SandboxResult{ExitCode: 1, Duration: time.Second, Stdout: "FAIL\nGITHUB_TOKEN=" + canary + "\n"}, nil
}

type world struct {
	cp *testenv.ControlPlane
	s  testenv.Seeded
}

func (w *world) in(t *testing.T, fn func(tx pgx.Tx) error) {
	t.Helper()
	if err := w.cp.App.InTenant(context.Background(), w.s.Tenant, fn); err != nil {
		t.Fatal(err)
	}
}

func (w *world) queued(t *testing.T, number int, mode fix.Mode) string {
	t.Helper()
	var id string
	w.in(t, func(tx pgx.Tx) error {
		r, err := fix.Create(context.Background(), tx, fix.NewRun{RepositoryID: w.s.Repository, Subject: fix.SubjectIssue, Number: number,
			Delivery: fix.DeliveryPR, Mode: mode, Trigger: fix.TriggerLabel, Label: "quavon:fix", Actor: fix.Actor{Login: "wanda", ID: 3}})
		if err == nil {
			id = r.ID
		}
		return err
	})
	return id
}

func (w *world) run(t *testing.T, id string, private bool, script llm.Script) *fix.Run {
	t.Helper()
	return w.runQueued(t, id, private, script, nil)
}

func (w *world) runQueued(t *testing.T, id string, private bool, script llm.Script, queue func(context.Context, pgx.Tx, string) error) *fix.Run {
	t.Helper()
	scanner, err := leaks.NewScanner()
	if err != nil {
		t.Fatal(err)
	}
	budget, err := llm.NewBudget(llm.Ceiling{Tokens: 1 << 30, Cost: 1 << 40}, llm.BudgetOptions{Feature: llm.FeatureFix})
	if err != nil {
		t.Fatal(err)
	}
	model := llm.NewScripted(script, "scripted-fix", llm.Price{})
	cfg := fixagent.Config{Model: budget.Model(model), Base: patch.MapBase(files()),
		Fresh:   func() (*patch.Listing, error) { return patch.MapBase(files()), nil },
		Scanner: scanner, Sandbox: printSandbox{}, HasTest: true,
		Limits: fixagent.Limits{MaxSteps: 10, MaxSandboxRuns: 2, WallClock: time.Minute, MaxFiles: 5, MaxChangedLines: 50},
		Issue:  fixagent.Issue{Title: "Add subtracts", Body: "fix it"}}
	r, err := fixrun.Execute(context.Background(), w.cp.App, fixrun.Run{Tenant: w.s.Tenant, ID: id,
		Base: fix.Base{SHA: baseSHA, Ref: "main"}, Private: private, Agent: cfg, Budget: budget, Now: time.Now, QueuePublish: queue})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var fixScript = llm.Steps(
	llm.Call("read_file", map[string]any{"path": "calc.go"}),
	llm.Call("edit_file", map[string]string{"path": "calc.go", "oldText": "a - b", "newText": "a + b"}),
	llm.Call("run_tests", struct{}{}),
	llm.Call("create_file", map[string]string{"path": ".github/workflows/x.yml", "content": "on: push\n"}),
	llm.Call("finish", map[string]string{"summary": "Add adds now."}),
)

func TestExecute(t *testing.T) {
	w := &world{cp: testenv.NewControlPlane(t, 4)}
	w.s = w.cp.Seed(t, "acme", "app", "private")
	ctx := context.Background()

	// Approval: awaiting_approval, the patch pinned, one fix_pr output
	// awaiting approval with an expiry, every step logged.
	id := w.queued(t, 1, fix.ModeApproval)
	r := w.run(t, id, true, fixScript)
	if r.Status != fix.StatusAwaitingApproval || r.PatchSHA256 == "" || r.BaseSHA != baseSHA {
		t.Fatalf("run %s %s %s", r.Status, r.Reason, r.Detail)
	}
	w.in(t, func(tx pgx.Tx) error {
		changes, diff, sum, err := fix.Patch(ctx, tx, id)
		if err != nil {
			return err
		}
		if patch.PatchSHA256(changes) != r.PatchSHA256 || sum != r.PatchSHA256 ||
			!strings.Contains(diff, "+func Add(a, b int) int { return a + b }") || r.Summary != "Add adds now." {
			t.Errorf("patch %s\n%s\n%s", r.PatchSHA256, diff, r.Summary)
		}
		outs, err := publish.OutputsOfRun(ctx, tx, id)
		if err != nil {
			return err
		}
		if len(outs) != 1 || outs[0].Kind != publish.KindFixPR || outs[0].Status != publish.OutputAwaitingApproval ||
			outs[0].ExpiresAt == nil || outs[0].Bound.PatchSHA256 != r.PatchSHA256 || outs[0].Bound.BaseSHA != baseSHA {
			t.Errorf("outputs %+v", outs)
		}
		steps, err := fix.Steps(ctx, tx, id)
		if err != nil {
			return err
		}
		var got []string
		for _, s := range steps {
			got = append(got, s.Tool+":"+s.Outcome)
		}
		want := "read_file:ok edit_file:ok run_tests:ok create_file:refused finish:ok"
		if strings.Join(got, " ") != want {
			t.Errorf("steps %v, want %s", got, want)
		}
		return nil
	})
	got, err := getRun(w, t, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.TestResults.Test == nil || got.TestResults.Test.ExitCode != 1 || got.Steps != 5 {
		t.Errorf("test results %+v, steps %d", got.TestResults, got.Steps)
	}

	// Auto on a private repository: publishing, the output ready and its
	// publish job queued in the same transaction; an output awaiting
	// approval queues nothing.
	var queued []string
	queue := func(ctx context.Context, tx pgx.Tx, outputID string) error {
		queued = append(queued, outputID)
		return nil
	}
	id = w.queued(t, 2, fix.ModeAuto)
	if r := w.runQueued(t, id, true, fixScript, queue); r.Status != fix.StatusPublishing {
		t.Errorf("auto, private: %s", r.Status)
	}
	w.in(t, func(tx pgx.Tx) error {
		outs, err := publish.OutputsOfRun(ctx, tx, id)
		if err != nil {
			return err
		}
		if len(outs) != 1 || outs[0].Status != publish.OutputReady || len(queued) != 1 || queued[0] != outs[0].ID {
			t.Errorf("auto: outputs %+v, queued %v", outs, queued)
		}
		return nil
	})
	queued = nil
	if r := w.runQueued(t, w.queued(t, 60, fix.ModeApproval), true, fixScript, queue); r.Status != fix.StatusAwaitingApproval || len(queued) != 0 {
		t.Errorf("approval: %s, queued %v", r.Status, queued)
	}
	// Auto seen on a public repository: approval all the same.
	id = w.queued(t, 3, fix.ModeAuto)
	if r := w.run(t, id, false, fixScript); r.Status != fix.StatusAwaitingApproval {
		t.Errorf("auto, public: %s", r.Status)
	}
	// No change: failed with the reason.
	id = w.queued(t, 4, fix.ModeApproval)
	if r := w.run(t, id, true, llm.Steps(llm.Call("finish", map[string]string{"summary": "nothing"}))); r.Status != fix.StatusFailed ||
		r.Reason != fixagent.ReasonNoPatch {
		t.Errorf("no patch: %s %s", r.Status, r.Reason)
	}
	// A second run of an issue with one running: ineligible.
	a, b := w.queued(t, 5, fix.ModeApproval), w.queued(t, 5, fix.ModeApproval)
	w.in(t, func(tx pgx.Tx) error {
		_, err := fix.Start(ctx, tx, a, fix.Base{SHA: baseSHA, Ref: "main"})
		return err
	})
	if r := w.run(t, b, true, fixScript); r.Status != fix.StatusIneligible || r.Reason != fix.ReasonAlreadyRunning {
		t.Errorf("second run: %s %s", r.Status, r.Reason)
	}

	// The canary printed by the tests is nowhere in the stored rows.
	var leaked int
	if err := w.cp.Admin.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM fix_runs WHERE (to_jsonb(fix_runs))::text LIKE '%' || $1 || '%') +
		(SELECT count(*) FROM fix_run_steps WHERE (to_jsonb(fix_run_steps))::text LIKE '%' || $1 || '%') +
		(SELECT count(*) FROM pending_outputs WHERE (to_jsonb(pending_outputs))::text LIKE '%' || $1 || '%')`, canary).Scan(&leaked); err != nil {
		t.Fatal(err)
	}
	if leaked != 0 {
		t.Errorf("the canary is in %d stored row(s)", leaked)
	}
}

func getRun(w *world, t *testing.T, id string) (*fix.Run, error) {
	var r *fix.Run
	err := w.cp.App.InTenant(context.Background(), w.s.Tenant, func(tx pgx.Tx) error {
		var err error
		r, err = fix.Get(context.Background(), tx, id)
		return err
	})
	return r, err
}
