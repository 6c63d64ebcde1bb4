package audit_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/quavon/quavon/internal/audit"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/testenv"
)

// Entries written before migration 0005 are numbered, reported as
// unchained, and the chain starts after them; a deleted one is still found.
func TestUpgradeKeepsEarlierEntriesUnchained(t *testing.T) {
	ctx := context.Background()
	db := testenv.NewDatabase(t)
	admin := db.AdminPool(t)
	ms, err := postgres.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	at := -1
	for i, m := range ms {
		if m.Name == "audit_chain" {
			at = i
		}
	}
	if at < 0 {
		t.Fatal("no audit_chain migration")
	}
	apply := func(ms []postgres.Migration) {
		t.Helper()
		for _, m := range ms {
			if _, err := admin.Exec(ctx, m.SQL); err != nil {
				t.Fatalf("migration %04d_%s: %v", m.Version, m.Name, err)
			}
		}
	}
	apply(ms[:at])
	tenants := []string{"6f1b5c1e-0000-4000-8000-000000000001", "6f1b5c1e-0000-4000-8000-000000000002"}
	for i, tn := range tenants {
		for range 3 + i {
			if _, err := admin.Exec(ctx, `INSERT INTO audit_log (tenant_id, actor, action, subject_type, subject_id, metadata)
				VALUES ($1, 'user:old', 'repository.policy.update', 'repository', 'r', '{"from": "before the chain"}')`, tn); err != nil {
				t.Fatal(err)
			}
		}
	}
	apply(ms[at:])
	url, _ := db.LoginRole(t, "quavon_app")
	app, err := postgres.Open(ctx, url, "", 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(app.Close)
	cp := &testenv.ControlPlane{DB: db, Admin: admin, App: app, AppURL: url}
	a, b := postgres.TenantID(tenants[0]), postgres.TenantID(tenants[1])
	for _, tn := range []postgres.TenantID{a, a, b} {
		err := app.InTenant(ctx, tn, func(tx pgx.Tx) error {
			_, err := audit.Record(ctx, tx, audit.Event{Actor: "user:new", Action: "repository.policy.update", SubjectType: "repository", SubjectID: "r"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// These tenants have no tenants row: the operator's role still finds their logs.
	if got, err := audit.Tenants(ctx, admin); err != nil || len(got) != 2 || got[0] != tenants[0] || got[1] != tenants[1] {
		t.Fatalf("tenants as the superuser: %v %v", got, err)
	}
	if got, err := audit.Tenants(ctx, app.Pool); err != nil || len(got) != 0 {
		t.Fatalf("tenants as the service role: %v %v", got, err)
	}
	r, entries := walkEntries(t, cp, a, nil)
	if !r.Intact() || r.Entries != 5 || r.Unchained != 3 || r.HeadSeq != 5 {
		t.Fatalf("alpha: %+v %v", r, r.Break)
	}
	if entries[2].Hash != "" || entries[3].PrevHash != audit.Genesis || entries[3].Seq != 4 {
		t.Fatalf("the chain does not start after the earlier entries: %+v / %+v", entries[2], entries[3])
	}
	if r := walk(t, cp, b, nil); !r.Intact() || r.Entries != 5 || r.Unchained != 4 {
		t.Fatalf("beta: %+v %v", r, r.Break)
	}
	superuser(t, cp, "DELETE FROM audit_log WHERE tenant_id = '"+tenants[1]+"' AND seq = 2")
	if r := walk(t, cp, b, nil); r.Intact() || r.Break.Seq != 2 || !strings.Contains(r.Break.Reason, "missing") {
		t.Fatalf("a deleted earlier entry: %+v %v", r, r.Break)
	}
	superuser(t, cp, "UPDATE audit_log SET hash = sha256('x'), prev_hash = sha256('y') WHERE tenant_id = '"+tenants[0]+"' AND seq = 1")
	if r := walk(t, cp, a, nil); r.Intact() || r.Break.Seq != 1 || !strings.Contains(r.Break.Reason, "from before the chain") {
		t.Fatalf("hashes on an earlier entry: %+v %v", r, r.Break)
	}
}

// quavon_auditor reads every tenant's log and nothing else, and writes
// nothing.
func TestAuditorReadsOnly(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	a := cp.Seed(t, "alpha", "app", "private")
	b := cp.Seed(t, "beta", "app", "private")
	recordN(t, cp, a, 3)
	recordN(t, cp, b, 2)
	ctx := context.Background()
	url, _ := cp.DB.LoginRole(t, "quavon_auditor")
	auditor, err := postgres.Open(ctx, url, "", 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(auditor.Close)
	tenants, err := audit.Tenants(ctx, auditor.Pool)
	if err != nil || len(tenants) != 2 {
		t.Fatalf("tenants: %v %v", tenants, err)
	}
	for _, tn := range tenants {
		err := auditor.InTenantSnapshot(ctx, postgres.TenantID(tn), func(tx pgx.Tx) error {
			r, err := audit.Walk(ctx, tx, nil, nil)
			if err == nil && (!r.Intact() || r.Entries == 0) {
				t.Errorf("%s: %+v %v", tn, r, r.Break)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, stmt := range []string{
		"SELECT count(*) FROM repositories",
		"SELECT * FROM quavon_audit_head()",
		"INSERT INTO audit_log (tenant_id, seq, actor, action, subject_type, subject_id) VALUES (quavon_current_tenant(), 9, 'x', 'a.b', 's', 'i')",
		"UPDATE audit_heads SET seq = 0",
	} {
		err := auditor.InTenant(ctx, a.Tenant, func(tx pgx.Tx) error { _, err := tx.Exec(ctx, stmt); return err })
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" {
			t.Errorf("auditor %q: %v, want permission denied", stmt, err)
		}
	}
	// And without a tenant it sees no entry (forced RLS binds it too).
	var n int
	if err := auditor.Pool.QueryRow(ctx, "SELECT count(*) FROM audit_log").Scan(&n); err != nil || n != 0 {
		t.Fatalf("auditor without a tenant sees %d entries (%v)", n, err)
	}
}
