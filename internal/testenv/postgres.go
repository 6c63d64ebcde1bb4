package testenv

import (
	"github.com/quavon/quavon/internal/devenv"

	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PostgresURL is the superuser URL scripts/test exported
// (QUAVON_TEST_DATABASE_URL).
func PostgresURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(devenv.VarDatabaseURL)
	if u == "" {
		unavailable(tb, "PostgreSQL (QUAVON_TEST_DATABASE_URL)")
	}
	return u
}

// TestDatabase is a fresh database on the test server, dropped at cleanup.
type TestDatabase struct {
	// AdminURL connects as the server's superuser (migrations, fixtures).
	AdminURL string
	Name     string
}

func randomName(prefix string) string {
	var b [6]byte
	rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// NewDatabase creates an empty database.
func NewDatabase(tb testing.TB) *TestDatabase {
	tb.Helper()
	return newDatabase(tb, "")
}

// newDatabase creates a database, a copy of template when it is not "".
func newDatabase(tb testing.TB, template string) *TestDatabase {
	tb.Helper()
	base := PostgresURL(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		unavailable(tb, "PostgreSQL ("+err.Error()+")")
	}
	defer conn.Close(ctx)
	name := randomName("quavon_t_")
	create := "CREATE DATABASE " + name
	if template != "" {
		// FILE_COPY copies the template's files after a checkpoint, which
		// costs little on the test server (fsync off): half of WAL_LOG's
		// time for the migrated schema.
		create += " TEMPLATE " + template + " STRATEGY FILE_COPY"
	}
	if _, err := conn.Exec(ctx, create); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	u, err := withDatabase(base, name)
	if err != nil {
		tb.Fatal(err)
	}
	return &TestDatabase{AdminURL: u, Name: name}
}

// withDatabase is the server URL base with the database name.
func withDatabase(base, name string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// AdminPool connects to the database as the superuser.
func (d *TestDatabase) AdminPool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	p, err := pgxpool.New(context.Background(), d.AdminURL)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Close)
	return p
}

// LoginRole creates a login role with a random name and password that is a
// member of memberOf (e.g. quavon_app) and returns the URL to connect as it
// and its name. It is dropped at cleanup.
func (d *TestDatabase) LoginRole(tb testing.TB, memberOf string) (string, string) {
	tb.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, d.AdminURL)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	role := randomName("quavon_login_")
	password := randomName("pw")
	if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD '%s' IN ROLE %s", role, password, memberOf)); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), d.AdminURL)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		// The database goes first (its cleanup ran after this was registered, LIFO), so
		// nothing is left owned by the role; DROP OWNED covers the rest.
		c.Exec(context.Background(), "DROP OWNED BY "+role)
		c.Exec(context.Background(), "DROP ROLE IF EXISTS "+role)
	})
	u, _ := url.Parse(d.AdminURL)
	u.User = url.UserPassword(role, password)
	return u.String(), role
}
