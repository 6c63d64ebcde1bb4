package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/testenv"
)

// env is a migrated database with an app-role connection.
type env struct {
	admin *pgxpool.Pool
	app   *postgres.DB
	db    *testenv.TestDatabase
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	db := testenv.NewDatabase(t)
	admin := db.AdminPool(t)
	if _, err := postgres.Migrate(ctx, admin); err != nil {
		t.Fatal(err)
	}
	url, _ := db.LoginRole(t, "quavon_app")
	app, err := postgres.Open(ctx, url, "", 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(app.Close)
	return &env{admin: admin, app: app, db: db}
}

// tenant creates a tenant through the app role and fills one row into every
// tenant table; it returns the tenant and its repository's id.
func (e *env) tenant(t *testing.T, name string) (postgres.TenantID, string) {
	t.Helper()
	ctx := context.Background()
	var tid string
	if err := e.admin.QueryRow(ctx, "SELECT gen_random_uuid()::text").Scan(&tid); err != nil {
		t.Fatal(err)
	}
	var repo string
	err := e.app.InTenant(ctx, postgres.TenantID(tid), func(tx pgx.Tx) error {
		stmts := []string{
			`INSERT INTO tenants (id, name) VALUES (quavon_current_tenant(), '` + name + `')`,
			`INSERT INTO installations (tenant_id, app_kind, external_id, account_login)
				VALUES (quavon_current_tenant(), 'review', (random()*1e12)::bigint + 1, '` + name + `')`,
			`INSERT INTO users (tenant_id, display_name) VALUES (quavon_current_tenant(), '` + name + `-user')`,
		}
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		if err := tx.QueryRow(ctx, `INSERT INTO repositories (tenant_id, external_id, owner, name, visibility)
			VALUES (quavon_current_tenant(), (random()*1e12)::bigint + 1, $1, 'app', 'private') RETURNING id::text`, name).Scan(&repo); err != nil {
			return err
		}
		more := []string{
			`INSERT INTO repository_policies (tenant_id, repository_id, document) VALUES (quavon_current_tenant(), '` + repo + `', '{}')`,
			`INSERT INTO user_identities (tenant_id, user_id, login, external_id) SELECT tenant_id, id, '` + name + `', (random()*1e12)::bigint + 1 FROM users`,
			`INSERT INTO role_grants (tenant_id, user_id, repository_id, role) SELECT tenant_id, id, '` + repo + `', 'repo:manage' FROM users`,
			`INSERT INTO api_tokens (tenant_id, user_id, name, token_hash) SELECT tenant_id, id, 't', sha256(gen_random_uuid()::text::bytea) FROM users`,
			`INSERT INTO web_sessions (tenant_id, user_id, secret_hash, host, login, external_id, idle_expires_at, expires_at)
				SELECT tenant_id, id, sha256(gen_random_uuid()::text::bytea), 'github.com', 'ada', 7, now() + interval '1 hour', now() + interval '1 day' FROM users`,
			`INSERT INTO audit_log (tenant_id, seq, prev_hash, hash, actor, action, subject_type, subject_id) SELECT tenant, head_seq + 1, head_hash, sha256('x'), 'test', 'tenant.create', 'tenant', '` + name + `' FROM quavon_audit_head()`,
			`INSERT INTO webhook_deliveries (tenant_id, delivery_id, event) VALUES (quavon_current_tenant(), gen_random_uuid()::text, 'ping')`,
			`INSERT INTO fix_run_caps (tenant_id, scope, key, day, count) VALUES (quavon_current_tenant(), 'tenant', '', current_date, 1)`,
			`INSERT INTO llm_budget_days (tenant_id, feature, day, tokens) VALUES (quavon_current_tenant(), 'fix', current_date, 1)`,
			`INSERT INTO webhook_events (tenant_id, delivery_id, app_kind, repository_id, event, action, number, actor_login, actor_id, actor_type)
				VALUES (quavon_current_tenant(), gen_random_uuid()::text, 'review', '` + repo + `', 'pull_request', 'closed', 1, 'ada', 7, 'User')`,
			`INSERT INTO review_runs (tenant_id, repository_id, pr_number, head_sha, trigger) VALUES (quavon_current_tenant(), '` + repo + `', 1, repeat('a', 40), 'opened')`,
			`INSERT INTO review_findings (tenant_id, review_run_id, repository_id, pr_number, fingerprint, source, path, start_line, end_line, severity, title)
				SELECT tenant_id, id, repository_id, pr_number, repeat('b', 32), 'llm', 'a.go', 1, 1, 'high', 't' FROM review_runs`,
			`INSERT INTO finding_feedback (tenant_id, repository_id, pr_number, fingerprint, action, source, actor_login)
				VALUES (quavon_current_tenant(), '` + repo + `', 1, repeat('b', 32), 'dismiss', 'github', 'ada')`,
			`INSERT INTO fix_runs (tenant_id, repository_id, subject, number, delivery, mode, trigger, trigger_actor_login, trigger_actor_id)
				VALUES (quavon_current_tenant(), '` + repo + `', 'issue', 2, 'pr', 'approval', 'label', 'ada', 7)`,
			`INSERT INTO fix_run_steps (tenant_id, fix_run_id, step, tool, arguments_sha256, outcome) SELECT tenant_id, id, 1, 'finish', repeat('c', 64), 'ok' FROM fix_runs`,
			`INSERT INTO sandbox_runs (tenant_id, repository_id, fix_run_id, purpose, image_class) SELECT tenant_id, repository_id, id, 'fix_test', 'go' FROM fix_runs`,
			`INSERT INTO pending_outputs (tenant_id, repository_id, kind, review_run_id, status, payload, payload_sha256)
				SELECT tenant_id, repository_id, 'review', id, 'stored', '{}', repeat('d', 64) FROM review_runs`,
			`INSERT INTO publish_intents (tenant_id, repository_id, pending_output_id, kind, key, marker)
				SELECT tenant_id, repository_id, id, 'review', 'review:' || repository_id || ':' || review_run_id, md5(random()::text) FROM pending_outputs`,
			`INSERT INTO issues (tenant_id, repository_id, number, state, visibility, body, read_at)
				VALUES (quavon_current_tenant(), '` + repo + `', 2, 'open', 'private', '- [ ] it works', now())`,
			`INSERT INTO ac_checks (tenant_id, repository_id, pr_number, head_sha, review_run_id, mode, status, reason)
				SELECT tenant_id, repository_id, pr_number, head_sha, id, 'shadow', 'skipped', 'no_link' FROM review_runs`,
		}
		for _, s := range more {
			if _, err := tx.Exec(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return postgres.TenantID(tid), repo
}

func tenantTables(t *testing.T, e *env) []string {
	t.Helper()
	tables, err := postgres.TenantTables(context.Background(), e.admin)
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) < 10 {
		t.Fatalf("only %d tenant tables: %v", len(tables), tables)
	}
	return tables
}

func count(t *testing.T, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, table string) int {
	t.Helper()
	var n int
	if err := q.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

func TestEveryTenantTableIsForcedRLS(t *testing.T) {
	e := newEnv(t)
	problems, err := postgres.CheckTenancy(context.Background(), e.admin)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Fatalf("tenancy problems:\n%s", strings.Join(problems, "\n"))
	}
}

// The schema check catches a migration that adds a tenant table without
// forced RLS, or with a policy that lets everything through.
func TestCheckTenancyCatchesAnUnprotectedTable(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, c := range []struct{ sql, want string }{
		{"CREATE TABLE bad_plain (tenant_id uuid NOT NULL); ALTER TABLE bad_plain OWNER TO quavon_owner", "bad_plain: row level security not enabled"},
		{"CREATE TABLE bad_unforced (tenant_id uuid NOT NULL); ALTER TABLE bad_unforced ENABLE ROW LEVEL SECURITY; " +
			"CREATE POLICY p ON bad_unforced USING (tenant_id = quavon_current_tenant()) WITH CHECK (tenant_id = quavon_current_tenant()); " +
			"ALTER TABLE bad_unforced OWNER TO quavon_owner", "bad_unforced: row level security not forced"},
		{"CREATE TABLE bad_open (tenant_id uuid NOT NULL); ALTER TABLE bad_open ENABLE ROW LEVEL SECURITY; ALTER TABLE bad_open FORCE ROW LEVEL SECURITY; " +
			"CREATE POLICY p ON bad_open USING (tenant_id = quavon_current_tenant()) WITH CHECK (tenant_id = quavon_current_tenant()); " +
			"CREATE POLICY open ON bad_open USING (true); ALTER TABLE bad_open OWNER TO quavon_owner", "bad_open: no tenant policy"},
	} {
		if _, err := e.admin.Exec(ctx, c.sql); err != nil {
			t.Fatal(err)
		}
		problems, err := postgres.CheckTenancy(ctx, e.admin)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(problems, "\n"), c.want) {
			t.Errorf("CheckTenancy after %q = %v, want %q", c.sql, problems, c.want)
		}
	}
}

// A query outside a tenant transaction sees nothing and can write nothing.
func TestNoTenantSeesNothing(t *testing.T) {
	e := newEnv(t)
	e.tenant(t, "acme")
	ctx := context.Background()
	for _, table := range append(tenantTables(t, e), "tenants") {
		if n := count(t, e.admin, table); n == 0 {
			t.Fatalf("fixture has no row in %s", table)
		}
		if n := count(t, e.app.Pool, table); n != 0 {
			t.Errorf("%s: %d rows visible without a tenant", table, n)
		}
	}
	_, err := e.app.Pool.Exec(ctx, "INSERT INTO audit_log (tenant_id, actor, action, subject_type, subject_id) VALUES (gen_random_uuid(), 'x', 'a.b', 's', 'i')")
	requireCode(t, err, "42501")
}

// Tenant B can neither read nor write tenant A's rows through any table, nor
// point at A's rows with a foreign key.
func TestTenantsAreIsolated(t *testing.T) {
	e := newEnv(t)
	a, repoA := e.tenant(t, "alpha")
	b, _ := e.tenant(t, "beta")
	ctx := context.Background()
	tables := append(tenantTables(t, e), "tenants")
	err := e.app.InTenant(ctx, b, func(tx pgx.Tx) error {
		for _, table := range tables {
			col := "tenant_id"
			if table == "tenants" {
				col = "id"
			}
			var n int
			if err := tx.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM %s WHERE %s = $1", table, col), string(a)).Scan(&n); err != nil {
				return fmt.Errorf("%s: %w", table, err)
			}
			if n != 0 {
				t.Errorf("tenant B reads %d of A's rows in %s", n, table)
			}
			if table == "audit_log" || table == "audit_heads" {
				continue // no UPDATE privilege at all: tested below and in internal/audit
			}
			tag, err := tx.Exec(ctx, fmt.Sprintf("UPDATE %s SET %s = %s WHERE %s = $1", table, col, col, col), string(a))
			if err != nil {
				return fmt.Errorf("update %s: %w", table, err)
			}
			if tag.RowsAffected() != 0 {
				t.Errorf("tenant B updated %d of A's rows in %s", tag.RowsAffected(), table)
			}
			if table == "tenants" {
				continue // no DELETE privilege
			}
			if tag, err = tx.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE %s = $1", table, col), string(a)); err != nil {
				return fmt.Errorf("delete %s: %w", table, err)
			}
			if tag.RowsAffected() != 0 {
				t.Errorf("tenant B deleted %d of A's rows in %s", tag.RowsAffected(), table)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Writing a row for A while acting as B: refused by WITH CHECK.
	err = e.app.InTenant(ctx, b, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO users (tenant_id) VALUES ($1)", string(a))
		return err
	})
	requireCode(t, err, "42501") // new row violates row-level security policy
	// Pointing B's policy row at A's repository: the composite foreign key refuses it.
	err = e.app.InTenant(ctx, b, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO repository_policies (tenant_id, repository_id, document) VALUES (quavon_current_tenant(), $1, '{}')", repoA)
		return err
	})
	requireCode(t, err, "23503")
	// A still has all its rows.
	err = e.app.InTenant(ctx, a, func(tx pgx.Tx) error {
		for _, table := range tables {
			if n := count(t, tx, table); n == 0 {
				t.Errorf("tenant A lost its rows in %s", table)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func requireCode(t *testing.T, err error, code string) {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != code {
		t.Fatalf("err = %v, want SQLSTATE %s", err, code)
	}
}

// FORCE ROW LEVEL SECURITY binds the tables' owner too.
func TestOwnerIsBound(t *testing.T) {
	e := newEnv(t)
	e.tenant(t, "acme")
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, e.admin, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL ROLE quavon_owner"); err != nil {
			return err
		}
		for _, table := range tenantTables(t, e) {
			if n := count(t, tx, table); n != 0 {
				t.Errorf("the owner sees %d rows of %s without a tenant", n, table)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The audit log is append-only for the app role and for the owner.
func TestAuditLogIsAppendOnly(t *testing.T) {
	e := newEnv(t)
	a, _ := e.tenant(t, "acme")
	ctx := context.Background()
	for _, stmt := range []string{"UPDATE audit_log SET actor = 'x'", "DELETE FROM audit_log"} {
		err := e.app.InTenant(ctx, a, func(tx pgx.Tx) error { _, err := tx.Exec(ctx, stmt); return err })
		requireCode(t, err, "42501")
		err = pgx.BeginFunc(ctx, e.admin, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL ROLE quavon_owner"); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "SELECT set_config('quavon.tenant_id', $1, true)", string(a)); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, stmt)
			return err
		})
		requireCode(t, err, "42501")
	}
}

func TestMigrateIsIdempotentAndRefusesANewerSchema(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	res, err := postgres.Migrate(ctx, e.admin)
	if err != nil {
		t.Fatal(err)
	}
	ms, _ := postgres.Migrations()
	if len(res.Applied) != 0 || res.From != len(ms) || res.To != len(ms) {
		t.Fatalf("second Migrate: %+v", res)
	}
	if _, err := e.admin.Exec(ctx, "INSERT INTO quavon_schema_migrations (version, name) VALUES ($1, 'future')", len(ms)+1); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.Migrate(ctx, e.admin); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Migrate against a newer schema: %v", err)
	}
}

// A failing migration leaves nothing behind: all pending steps are one
// transaction.
func TestMigrateIsAtomic(t *testing.T) {
	db := testenv.NewDatabase(t)
	admin := db.AdminPool(t)
	ctx := context.Background()
	ms, _ := postgres.Migrations()
	bad := append(ms, postgres.Migration{Version: len(ms) + 1, Name: "broken", SQL: "CREATE TABLE half (x int); SELECT 1/0"})
	if _, err := postgres.MigrateSteps(ctx, admin, bad); err == nil {
		t.Fatal("a broken migration was applied")
	}
	var n int
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename IN ('half', 'tenants')").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d tables left by a failed migration run", n)
	}
}
