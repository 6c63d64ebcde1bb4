package worker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/fix/fixjob"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/review"
)

// TestReviewFixRunIneligibleWhileNotSignedOff: with the gate as shipped, a
// queued review fix (subject pull_request) that reaches the worker anyway
// is recorded ineligible with not_signed_off; no model is asked and
// nothing is published, even with a policy that asks for review fixes.
func TestReviewFixRunIneligibleWhileNotSignedOff(t *testing.T) {
	if policy.ReviewFixesSignedOff() {
		t.Fatal("this test is of the gate as shipped: policy.ReviewFixesSignedOff() must be false")
	}
	w := newWorld(t)
	ctx := context.Background()
	w.setFixPolicy(t, `{"mode":"approval","reviewFixes":"commit"}`)
	head := w.repo.Ref("main")
	var runID string
	w.in(t, func(tx pgx.Tx) error {
		rr, _, err := review.Create(ctx, tx, review.NewRun{RepositoryID: w.repoID, PRNumber: 3, HeadSHA: head,
			HeadRef: "feature", BaseRef: "main", Trigger: review.TriggerOpened, Author: "bob"})
		if err != nil {
			return err
		}
		r, err := fix.Create(ctx, tx, fix.NewRun{RepositoryID: w.repoID, Subject: fix.SubjectPullRequest, Number: 3,
			ReviewRunID: rr.ID, Delivery: fix.DeliveryStackedPR, Mode: fix.ModeApproval, Trigger: fix.TriggerDashboard,
			Actor: fix.Actor{Login: "wanda", ID: 7}})
		if err != nil {
			return err
		}
		runID = r.ID
		return nil
	})

	models := &fixModels{}
	deps, conn := w.fixDeps(t, models, nil)
	w.startFixWorker(t, deps, conn)
	jobs, err := river.NewClient(riverpgxv5.New(w.cp.App.Pool), &river.Config{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := jobs.Insert(ctx, fixjob.RunArgs{TenantID: string(w.tenant), RunID: runID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job completed", func() bool {
		j, err := jobs.JobGet(ctx, res.Job.ID)
		return err == nil && j.State == rivertype.JobStateCompleted
	})
	st, reason, out := w.fixStatus(t, runID)
	if st != fix.StatusIneligible || reason != string(policy.ReasonNotSignedOff) || out != "" {
		t.Fatalf("the review fix run: %s %q, output %q; want ineligible not_signed_off and no output", st, reason, out)
	}
	var detail string
	w.in(t, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, `SELECT detail FROM fix_runs WHERE id = $1`, runID).Scan(&detail)
	})
	if !strings.Contains(detail, "sign-off") {
		t.Errorf("the detail does not say why: %q", detail)
	}
	if models.calls() != 0 || len(models.used) != 0 {
		t.Errorf("the model was asked for (%d runs, %d calls)", len(models.used), models.calls())
	}
}
