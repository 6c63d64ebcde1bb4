package testenv

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/quavon/quavon/internal/postgres"
)

// ControlPlane is a fresh, migrated database and a connection pool as a
// service role (a login role that is only a member of quavon_app).
type ControlPlane struct {
	DB    *TestDatabase
	Admin *pgxpool.Pool
	App   *postgres.DB
	// AppURL connects as the service role.
	AppURL string
}

// NewControlPlane makes a new migrated database (a copy of the migrated
// template, see template.go); maxConns sizes the app pool.
func NewControlPlane(tb testing.TB, maxConns int32) *ControlPlane {
	tb.Helper()
	ctx := context.Background()
	db := newDatabase(tb, migratedTemplate(tb))
	admin := db.AdminPool(tb)
	// Nothing to apply on a copy of the template; Migrate says so, and would
	// catch up a template that fell behind.
	if res, err := postgres.Migrate(ctx, admin); err != nil {
		tb.Fatal(err)
	} else if len(res.Applied) > 0 {
		tb.Fatalf("the template database %s was at schema version %d, not %d", migratedTemplate(tb), res.From, res.To)
	}
	url, _ := db.LoginRole(tb, "quavon_app")
	app, err := postgres.Open(ctx, url, "", maxConns)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(app.Close)
	return &ControlPlane{DB: db, Admin: admin, App: app, AppURL: url}
}

// Seeded is what Seed created.
type Seeded struct {
	Tenant     postgres.TenantID
	Repository string // repositories.id
	User       string // users.id
}

// Seed creates, through the service role, a tenant with one private
// repository owner/name and one user.
func (cp *ControlPlane) Seed(tb testing.TB, owner, name string, visibility string) Seeded {
	tb.Helper()
	ctx := context.Background()
	var s Seeded
	var tid string
	if err := cp.Admin.QueryRow(ctx, "SELECT gen_random_uuid()::text").Scan(&tid); err != nil {
		tb.Fatal(err)
	}
	s.Tenant = postgres.TenantID(tid)
	err := cp.App.InTenant(ctx, s.Tenant, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO tenants (id, name) VALUES (quavon_current_tenant(), $1)", owner); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO repositories (tenant_id, external_id, owner, name, visibility)
			VALUES (quavon_current_tenant(), (random()*1e12)::bigint + 1, $1, $2, $3) RETURNING id::text`,
			owner, name, visibility).Scan(&s.Repository); err != nil {
			return err
		}
		return tx.QueryRow(ctx, "INSERT INTO users (tenant_id, display_name) VALUES (quavon_current_tenant(), $1) RETURNING id::text",
			owner+"-admin").Scan(&s.User)
	})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
