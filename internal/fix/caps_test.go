package fix_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/testenv"
)

func admit(t *testing.T, db *postgres.DB, s testenv.Seeded, repo string, issue int, lim fix.CapLimits, now time.Time) fix.CapDecision {
	t.Helper()
	var d fix.CapDecision
	err := db.InTenant(context.Background(), s.Tenant, func(tx pgx.Tx) error {
		var err error
		d, err = fix.AdmitRun(context.Background(), tx, repo, issue, lim, now)
		return err
	})
	if err != nil {
		t.Error(err)
	}
	return d
}

// 50 parallel attempts on one issue: exactly PerIssue are admitted, and
// every attempt is counted.
func TestCapsUnderConcurrency(t *testing.T) {
	cp := testenv.NewControlPlane(t, 50)
	s := cp.Seed(t, "acme", "app", "private")
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	lim := fix.CapLimits{PerIssue: 2, PerRepository: 5, PerTenant: 50}
	run := func(n int, issue func(i int) int, lim fix.CapLimits) (admitted int, last []fix.CapDecision) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				d := admit(t, cp.App, s, s.Repository, issue(i), lim, now)
				mu.Lock()
				defer mu.Unlock()
				last = append(last, d)
				if d.Admitted {
					admitted++
				}
			})
		}
		wg.Wait()
		return admitted, last
	}
	if got, ds := run(50, func(int) int { return 7 }, lim); got != 2 {
		t.Fatalf("%d of 50 attempts on one issue admitted, want 2", got)
	} else {
		maxIssue := 0
		for _, d := range ds {
			maxIssue = max(maxIssue, d.Issue)
		}
		if maxIssue != 50 {
			t.Fatalf("issue counter reached %d, want 50 (every attempt counts)", maxIssue)
		}
	}
	// The tenant cap across many issues and repositories' worth of attempts.
	lim = fix.CapLimits{PerIssue: 1000, PerRepository: 1000, PerTenant: 60}
	// 50 already counted today for the tenant: 10 more fit.
	if got, _ := run(50, func(i int) int { return 100 + i }, lim); got != 10 {
		t.Fatalf("%d admitted under the tenant cap, want 10", got)
	}
	// A new UTC day starts from zero.
	if d := admit(t, cp.App, s, s.Repository, 7, fix.CapLimits{PerIssue: 2, PerRepository: 5, PerTenant: 50}, now.Add(24*time.Hour)); !d.Admitted || d.Issue != 1 {
		t.Fatalf("next day: %+v", d)
	}
}

func TestCapOrderAndTenants(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	a := cp.Seed(t, "alpha", "app", "private")
	b := cp.Seed(t, "beta", "app", "private")
	now := time.Now()
	lim := fix.CapLimits{PerIssue: 1, PerRepository: 2, PerTenant: 3}
	if d := admit(t, cp.App, a, a.Repository, 1, lim, now); !d.Admitted {
		t.Fatalf("%+v", d)
	}
	if d := admit(t, cp.App, a, a.Repository, 1, lim, now); d.Admitted || d.Exceeded != "issue" {
		t.Fatalf("%+v", d)
	}
	if d := admit(t, cp.App, a, a.Repository, 2, lim, now); d.Admitted || d.Exceeded != "repository" {
		t.Fatalf("second issue after 2 attempts on the repository: %+v", d)
	}
	// Tenant B's counters are its own.
	if d := admit(t, cp.App, b, b.Repository, 1, lim, now); !d.Admitted || d.Tenant != 1 {
		t.Fatalf("tenant B: %+v", d)
	}
}
