package fix_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/queues"
	"github.com/quavon/quavon/internal/testenv"
)

// The maintenance job expires approvals nobody gave in time: the output and
// its fix run, in every tenant; others stay.
func TestApprovalsExpireAsRiverJob(t *testing.T) {
	cp := testenv.NewControlPlane(t, 8)
	a := cp.Seed(t, "alpha", "app", "private")
	b := cp.Seed(t, "beta", "app", "private")
	ctx := context.Background()
	now := time.Now()
	waiting := func(s testenv.Seeded, issue int, expires time.Time) string {
		var id string
		inTenant(t, cp, s, func(tx pgx.Tx) error {
			n := newIssueRun(issue)
			n.RepositoryID = s.Repository
			r, err := fix.Create(ctx, tx, n)
			if err != nil {
				return err
			}
			if err := driveTo(ctx, tx, r.ID, fix.StatusAwaitingApproval); err != nil {
				return err
			}
			got, _ := fix.Get(ctx, tx, r.ID)
			_, err = publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: s.Repository, Kind: publish.KindFixPR, FixRunID: r.ID,
				Status: publish.OutputAwaitingApproval, Payload: map[string]any{"issue": issue},
				Bound: publish.Bound{PatchSHA256: got.PatchSHA256, BaseSHA: got.BaseSHA}, ExpiresAt: expires})
			id = r.ID
			return err
		})
		return id
	}
	overdueA := waiting(a, 1, now.Add(-time.Minute))
	overdueB := waiting(b, 1, now.Add(-time.Hour))
	fresh := waiting(a, 2, now.Add(time.Hour))

	workers := river.NewWorkers()
	river.AddWorker(workers, &fix.ExpiryWorker{DB: cp.App})
	client, err := river.NewClient(riverpgxv5.New(cp.App.Pool), &river.Config{
		Queues:       map[string]river.QueueConfig{queues.Maintenance: {MaxWorkers: 1}},
		Workers:      workers,
		PeriodicJobs: []*river.PeriodicJob{fix.ExpiryPeriodicJob(time.Hour)},
	})
	if err != nil {
		t.Fatal(err)
	}
	done, cancel := client.Subscribe(river.EventKindJobCompleted, river.EventKindJobFailed)
	defer cancel()
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer client.Stop(ctx)
	select {
	case ev := <-done:
		if ev.Kind != river.EventKindJobCompleted || ev.Job.Kind != "approval_expiry" {
			t.Fatalf("event %s for %s: %v", ev.Kind, ev.Job.Kind, ev.Job.Errors)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the expiry job did not run")
	}
	for _, c := range []struct {
		s    testenv.Seeded
		id   string
		want fix.Status
	}{{a, overdueA, fix.StatusExpired}, {b, overdueB, fix.StatusExpired}, {a, fresh, fix.StatusAwaitingApproval}} {
		inTenant(t, cp, c.s, func(tx pgx.Tx) error {
			r, err := fix.Get(ctx, tx, c.id)
			if err != nil {
				return err
			}
			if r.Status != c.want || c.want == fix.StatusExpired && r.Reason != fix.ReasonApprovalExpired {
				t.Errorf("run %s: %s (%s), want %s", c.id, r.Status, r.Reason, c.want)
			}
			outs, err := publish.OutputsOfRun(ctx, tx, c.id)
			if err != nil || len(outs) != 1 {
				t.Fatalf("outputs %v %v", outs, err)
			}
			if (outs[0].Status == publish.OutputExpired) != (c.want == fix.StatusExpired) {
				t.Errorf("output of %s: %s", c.id, outs[0].Status)
			}
			return nil
		})
	}
}
