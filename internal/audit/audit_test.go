package audit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/audit"
	"github.com/quavon/quavon/internal/testenv"
)

// An entry commits and rolls back with the caller's transaction, belongs to
// its tenant, and bad events are refused.
func TestRecordInCallersTransaction(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	a := cp.Seed(t, "alpha", "app", "private")
	b := cp.Seed(t, "beta", "app", "private")
	ctx := context.Background()
	ev := audit.Event{ActorUserID: a.User, Actor: "user:alice", Action: "repository.policy.update",
		SubjectType: "repository", SubjectID: a.Repository, Metadata: map[string]any{"changes": []string{"/features/fix/mode"}}}
	rollback := errors.New("rollback")
	err := cp.App.InTenant(ctx, a.Tenant, func(tx pgx.Tx) error {
		if _, err := audit.Record(ctx, tx, ev); err != nil {
			return err
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatal(err)
	}
	err = cp.App.InTenant(ctx, a.Tenant, func(tx pgx.Tx) error {
		_, err := audit.Record(ctx, tx, ev)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	count := func(s testenv.Seeded) (n int) {
		err := cp.App.InTenant(ctx, s.Tenant, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, "SELECT count(*) FROM audit_log WHERE action = 'repository.policy.update'").Scan(&n)
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if count(a) != 1 || count(b) != 0 {
		t.Fatalf("entries: alpha %d (want 1: the rolled-back one is gone), beta %d", count(a), count(b))
	}
	for _, bad := range []audit.Event{
		{Actor: "x", Action: "Update", SubjectType: "r", SubjectID: "1"},
		{Actor: "", Action: "a.b", SubjectType: "r", SubjectID: "1"},
		{Actor: "x", Action: "a.b", SubjectType: "r", SubjectID: "1", Metadata: strings.Repeat("x", 70<<10)},
	} {
		err := cp.App.InTenant(ctx, a.Tenant, func(tx pgx.Tx) error { _, err := audit.Record(ctx, tx, bad); return err })
		if err == nil {
			t.Errorf("accepted %+v", bad.Action)
		}
	}
}
