package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Migration is one embedded schema step.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

var migrationName = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+)\.sql$`)

// Migrations lists the embedded migrations in order. Versions are 1, 2, 3 …
// without gaps.
func Migrations() ([]Migration, error) {
	return loadMigrations(migrationFS, "migrations")
}

func loadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration %q: want NNNN_name.sql", e.Name())
		}
		v, _ := strconv.Atoi(m[1])
		data, err := fs.ReadFile(fsys, dir+"/"+e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: m[2], SQL: string(data)})
	}
	slices.SortFunc(out, func(a, b Migration) int { return a.Version - b.Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migration versions must be 1..%d without gaps; found %d at position %d", len(out), m.Version, i+1)
		}
	}
	return out, nil
}

// MigrateResult says what Migrate did.
type MigrateResult struct {
	From, To int
	Applied  []Migration
}

// Migrate applies the pending migrations in one transaction, under an
// advisory lock (concurrent migrators wait, then find nothing to do), and
// refuses a database whose schema is newer than this binary's. Then River's
// own migrations run and quavon_app is granted River's tables. It must run
// as a role that may create roles and tables (the operator's, never a
// service's).
func Migrate(ctx context.Context, pool *pgxpool.Pool) (*MigrateResult, error) {
	ms, err := Migrations()
	if err != nil {
		return nil, err
	}
	return migrate(ctx, pool, ms)
}

const migrationsTable = "quavon_schema_migrations"

func migrate(ctx context.Context, pool *pgxpool.Pool, ms []Migration) (*MigrateResult, error) {
	res := &MigrateResult{}
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// One lock id for Quavon's migrator.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(7311201)"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+migrationsTable+` (
			version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM "+migrationsTable).Scan(&res.From); err != nil {
			return err
		}
		latest := len(ms)
		if res.From > latest {
			return fmt.Errorf("the database schema is at version %d, newer than this binary's %d: run a newer quavon", res.From, latest)
		}
		res.To = res.From
		for _, m := range ms[res.From:] {
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %04d_%s: %w", m.Version, m.Name, err)
			}
			if _, err := tx.Exec(ctx, "INSERT INTO "+migrationsTable+" (version, name) VALUES ($1, $2)", m.Version, m.Name); err != nil {
				return err
			}
			res.Applied = append(res.Applied, m)
			res.To = m.Version
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), nil)
	if err != nil {
		return nil, err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, fmt.Errorf("river migrations: %w", err)
	}
	// River's tables are not tenant tables (job arguments carry ids, never tenant data).
	if _, err := pool.Exec(ctx, `DO $$
		DECLARE t text;
		BEGIN
			FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE 'river\_%' LOOP
				EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO quavon_app', t);
			END LOOP;
			GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO quavon_app;
			GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO quavon_app;
		END $$`); err != nil {
		return nil, fmt.Errorf("grants on river tables: %w", err)
	}
	return res, nil
}
