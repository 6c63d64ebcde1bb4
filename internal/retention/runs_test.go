package retention_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/retention"
	"github.com/quavon/quavon/internal/review"
	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/sandboxrun"
	"github.com/quavon/quavon/internal/testenv"
)

// Every tenant table declares its retention: swept on its own date, gone
// with the row it belongs to, or kept with a reason. A new table without
// one fails here.
func TestEveryTenantTableHasARetention(t *testing.T) {
	cp := testenv.NewControlPlane(t, 2)
	tables, err := postgres.TenantTables(context.Background(), cp.Admin)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	for _, s := range retention.Tables {
		declared[s.Table] = true
	}
	for name := range retention.Cascaded {
		declared[name] = true
	}
	for name := range retention.Kept {
		declared[name] = true
	}
	for _, table := range tables {
		if !declared[table] {
			t.Errorf("tenant table %s has no retention: sweep it (retention.Tables), cascade it or keep it with a reason", table)
		}
		delete(declared, table)
	}
	for name := range declared {
		t.Errorf("retention names %s, which is not a tenant table", name)
	}
}

var head = strings.Repeat("a", 40)

// Runs go when they ended longer ago than the tenant's retention, with
// everything that belongs to them; runs still going stay whatever their
// age.
func TestRunsAreSweptWithWhatBelongsToThem(t *testing.T) {
	cp := testenv.NewControlPlane(t, 8)
	s := cp.Seed(t, "acme", "app", "private")
	ctx := context.Background()
	old := time.Now().Add(-100 * 24 * time.Hour) // retention_days defaults to 90
	var newReview, oldFix, liveFix string
	err := cp.App.InTenant(ctx, s.Tenant, func(tx pgx.Tx) error {
		mkReview := func(pr int) string {
			r, _, err := review.Create(ctx, tx, review.NewRun{RepositoryID: s.Repository, PRNumber: pr, HeadSHA: head, Trigger: review.TriggerOpened})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := review.Start(ctx, tx, r.ID, review.Modes{Review: "on", SAST: "on", Acceptance: "on"}, "", ""); err != nil {
				t.Fatal(err)
			}
			if _, err := review.AddFindings(ctx, tx, r.ID, []review.Finding{{Fingerprint: strings.Repeat("1", 32), Source: review.SourceLLM,
				Path: "a.go", StartLine: 1, EndLine: 1, Severity: "low", Title: "t"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := review.Complete(ctx, tx, r.ID, review.Result{}); err != nil {
				t.Fatal(err)
			}
			o, err := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: s.Repository, Kind: publish.KindReview, ReviewRunID: r.ID,
				Status: publish.OutputReady, Payload: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := publish.EnsureIntent(ctx, tx, o.ID); err != nil {
				t.Fatal(err)
			}
			return r.ID
		}
		mkReview(1)
		newReview = mkReview(2)
		mkFix := func(issue int) string {
			r, err := fix.Create(ctx, tx, fix.NewRun{RepositoryID: s.Repository, Subject: fix.SubjectIssue, Number: issue,
				Delivery: fix.DeliveryPR, Mode: fix.ModeApproval, Trigger: fix.TriggerLabel, Actor: fix.Actor{Login: "ada", ID: 7}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fix.Start(ctx, tx, r.ID, fix.Base{SHA: head, Ref: "main"}); err != nil {
				t.Fatal(err)
			}
			if _, err := fix.AddStep(ctx, tx, r.ID, fix.Step{Tool: fix.ToolFinish, Outcome: fix.OutcomeOK}); err != nil {
				t.Fatal(err)
			}
			if _, err := fix.RecordPatch(ctx, tx, r.ID, []patch.FixFileChange{{Path: "a", Operation: patch.OpCreate, NewContent: "x\n",
				Mode: patch.ModeFile}}, "d", ""); err != nil {
				t.Fatal(err)
			}
			if _, err := fix.Transition(ctx, tx, r.ID, fix.StatusAwaitingApproval, fix.Why{}); err != nil {
				t.Fatal(err)
			}
			return r.ID
		}
		oldFix, liveFix = mkFix(3), mkFix(4)
		if _, err := fix.Transition(ctx, tx, oldFix, fix.StatusRejected, fix.Why{Reason: "rejected"}); err != nil {
			t.Fatal(err)
		}
		for _, stmt := range []string{
			`UPDATE review_runs SET created_at = $1, finished_at = $1 WHERE pr_number = 1`,
			`UPDATE fix_runs SET created_at = $1, finished_at = $1 WHERE number = 3`,
			`UPDATE fix_runs SET created_at = $1 WHERE number = 4`,
			`INSERT INTO webhook_events (tenant_id, delivery_id, app_kind, repository_id, event, action, number, actor_login, actor_id,
				actor_type, received_at) VALUES (quavon_current_tenant(), 'old', 'review', '` + s.Repository + `', 'pull_request', 'closed', 1,
				'ada', 7, 'User', $1)`,
			`INSERT INTO webhook_events (tenant_id, delivery_id, app_kind, repository_id, event, action, number, actor_login, actor_id,
				actor_type) VALUES (quavon_current_tenant(), 'new', 'review', '` + s.Repository + `', 'pull_request', 'closed', 1, 'ada', 7, 'User')`,
			`INSERT INTO finding_feedback (tenant_id, repository_id, pr_number, fingerprint, action, source, actor_login, created_at)
				VALUES (quavon_current_tenant(), '` + s.Repository + `', 1, repeat('1', 32), 'dismiss', 'github', 'ada', $1)`,
		} {
			args := []any{}
			if strings.Contains(stmt, "$1") {
				args = append(args, old)
			}
			if _, err := tx.Exec(ctx, stmt, args...); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{oldFix, liveFix} {
		if _, _, err := sandboxrun.Run(ctx, cp.App, s.Tenant, sandboxrun.Start{RepositoryID: s.Repository, FixRunID: id,
			Purpose: sandbox.PurposeFixTest, ImageClass: "go"}, func(context.Context) (*sandbox.SandboxResult, sandboxrun.Sizes, error) {
			return &sandbox.SandboxResult{JobID: "job-" + id[:8], RunnerID: "r", Status: sandbox.StatusCompleted}, sandboxrun.Sizes{}, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := retention.Sweep(ctx, cp.App, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if res["review_runs"] != 1 || res["fix_runs"] != 1 || res["webhook_events"] != 1 || res["finding_feedback"] != 1 {
		t.Errorf("swept %v", res)
	}
	left := map[string][]string{}
	err = cp.App.InTenant(ctx, s.Tenant, func(tx pgx.Tx) error {
		for table, q := range map[string]string{
			"review_runs":     "SELECT id::text FROM review_runs",
			"review_findings": "SELECT review_run_id::text FROM review_findings",
			"pending_outputs": "SELECT coalesce(review_run_id, fix_run_id)::text FROM pending_outputs",
			"publish_intents": "SELECT o.review_run_id::text FROM publish_intents i JOIN pending_outputs o ON o.id = i.pending_output_id",
			"fix_runs":        "SELECT id::text FROM fix_runs",
			"fix_run_steps":   "SELECT fix_run_id::text FROM fix_run_steps",
			"sandbox_runs":    "SELECT fix_run_id::text FROM sandbox_runs",
		} {
			rows, err := tx.Query(ctx, q)
			if err != nil {
				return err
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			slices.Sort(ids)
			left[table] = ids
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for table, want := range map[string][]string{
		"review_runs": {newReview}, "review_findings": {newReview}, "pending_outputs": {newReview}, "publish_intents": {newReview},
		"fix_runs": {liveFix}, "fix_run_steps": {liveFix}, "sandbox_runs": {liveFix},
	} {
		if !slices.Equal(left[table], want) {
			t.Errorf("%s: left %v, want %v", table, left[table], want)
		}
	}
}
