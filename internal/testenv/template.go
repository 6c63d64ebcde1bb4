package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/quavon/quavon/internal/postgres"
)

// A migrated database is copied from a template rather than migrated anew:
// CREATE DATABASE … TEMPLATE takes about as long as an empty database, the
// migrations another 300 ms, and the suite makes hundreds of control planes.
// The template is made once per server for this binary's schema (its name
// holds a hash of our migrations' and River's SQL), by the first test
// process that needs it, under an advisory lock; no one connects to it
// afterwards, so any number of processes may copy it at once.

var template struct {
	sync.Mutex
	name string
}

// templatePrefix names every template database; older ones (another
// schema) are dropped when a new one is made.
const templatePrefix = "quavon_tpl_"

// migratedTemplate returns the name of the template database holding this
// binary's schema, making it when the server has none.
func migratedTemplate(tb testing.TB) string {
	tb.Helper()
	template.Lock()
	defer template.Unlock()
	if template.name != "" {
		return template.name
	}
	name, err := makeTemplate(PostgresURL(tb))
	if err != nil {
		tb.Fatalf("the migrated template database: %v", err)
	}
	template.name = name
	return name
}

func makeTemplate(base string) (string, error) {
	ms, err := postgres.Migrations()
	if err != nil {
		return "", err
	}
	// The name hashes the SQL that Migrate runs: ours and River's. Not the
	// River modules' versions from the build information: a test binary
	// lists only the River modules it links, so binaries that link River's
	// client hashed differently from those that link its migrator alone,
	// and each maker dropped the other's template as an old schema (a cold
	// CI run failed internal/web's tests with "template database … does
	// not exist").
	h := sha256.New()
	for _, m := range ms {
		fmt.Fprintf(h, "%d %s %d\n%s\n", m.Version, m.Name, len(m.SQL), m.SQL)
	}
	river, err := rivermigrate.New(riverpgxv5.New(nil), nil)
	if err != nil {
		return "", fmt.Errorf("river's migrations: %w", err)
	}
	for _, m := range river.AllVersions() {
		fmt.Fprintf(h, "river %d %s %d\n%s\n", m.Version, m.Name, len(m.SQLUp), m.SQLUp)
	}
	name := templatePrefix + hex.EncodeToString(h.Sum(nil))[:16]

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	// Session lock: one maker at a time across test processes; the others
	// wait, then find the template made.
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock(7311202)"); err != nil {
		return "", err
	}
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock(7311202)")
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	// Made under a scratch name and renamed when complete: a process that
	// died half-way leaves no template that looks finished.
	scratch := randomName("quavon_tplmake_")
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+scratch); err != nil {
		return "", err
	}
	u, err := withDatabase(base, scratch)
	if err != nil {
		return "", err
	}
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		return "", err
	}
	_, err = postgres.Migrate(ctx, pool)
	pool.Close()
	if err != nil {
		conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+scratch+" WITH (FORCE)")
		return "", fmt.Errorf("migrating %s: %w", scratch, err)
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+scratch+" RENAME TO "+name); err != nil {
		return "", err
	}
	// Templates of other schemas (older checkouts of a developer's server)
	// and scratch databases of makers that died. Best effort: one in use
	// stays.
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database
		WHERE (starts_with(datname, $1) OR starts_with(datname, 'quavon_tplmake_')) AND datname <> $2`, templatePrefix, name)
	if err != nil {
		return "", err
	}
	old, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	for _, o := range old {
		conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{o}.Sanitize())
	}
	return name, nil
}
