package retention_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/quavon/quavon/internal/queues"
	"github.com/quavon/quavon/internal/retention"
	"github.com/quavon/quavon/internal/testenv"
)

// Old rows go, recent rows stay, each tenant by its own retention, and the
// River periodic job does it on start.
func TestRetentionSweepAsRiverJob(t *testing.T) {
	cp := testenv.NewControlPlane(t, 8)
	a := cp.Seed(t, "alpha", "app", "private")
	b := cp.Seed(t, "beta", "app", "private")
	ctx := context.Background()
	now := time.Now()
	fill := func(s testenv.Seeded, days int) {
		err := cp.App.InTenant(ctx, s.Tenant, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "UPDATE tenants SET retention_days = $1", days); err != nil {
				return err
			}
			for i, age := range []int{1, 20, 40} {
				at := now.Add(-time.Duration(age) * 24 * time.Hour)
				if _, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (tenant_id, delivery_id, event, received_at)
					VALUES (quavon_current_tenant(), $1, 'issues', $2)`, string(s.Tenant)+"-"+string(rune('a'+i)), at); err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `INSERT INTO fix_run_caps (tenant_id, scope, key, day, count)
					VALUES (quavon_current_tenant(), 'tenant', '', $1::date, 1)`, at.UTC().Format(time.DateOnly)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	fill(a, 30) // keeps 1 and 20 days old
	fill(b, 10) // keeps 1 day old

	workers := river.NewWorkers()
	river.AddWorker(workers, &retention.Worker{DB: cp.App})
	client, err := river.NewClient(riverpgxv5.New(cp.App.Pool), &river.Config{
		Queues:       map[string]river.QueueConfig{queues.Maintenance: {MaxWorkers: 2}},
		Workers:      workers,
		PeriodicJobs: []*river.PeriodicJob{retention.PeriodicJob(time.Hour)},
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
		if ev.Kind != river.EventKindJobCompleted || ev.Job.Kind != "retention_sweep" {
			t.Fatalf("event %s for %s: %v", ev.Kind, ev.Job.Kind, ev.Job.Errors)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the retention job did not run")
	}
	for _, c := range []struct {
		s    testenv.Seeded
		want int
	}{{a, 2}, {b, 1}} {
		err := cp.App.InTenant(ctx, c.s.Tenant, func(tx pgx.Tx) error {
			for _, table := range []string{"webhook_deliveries", "fix_run_caps"} {
				var n int
				if err := tx.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
					return err
				}
				if n != c.want {
					t.Errorf("tenant %s: %d rows left in %s, want %d", c.s.Tenant, n, table, c.want)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
