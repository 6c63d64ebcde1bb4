// Package postgres is Quavon's control-plane storage: embedded, numbered
// migrations (Migrate), River's own tables, and tenancy.
//
// Tenancy is enforced by the database, not by queries: every table with a
// tenant_id column has ENABLE and FORCE ROW LEVEL SECURITY and a policy on
// the transaction setting quavon.tenant_id, and the tables are owned by
// quavon_owner, which services are not. Services connect as a login role
// that is only a member of quavon_app and run each unit of work through
// DB.InTenant, which sets the tenant with SET LOCAL inside its transaction.
// A query outside InTenant sees no tenant row and cannot write one.
package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/quavon/quavon/internal/config"
)

// TenantID is a tenant's uuid in its canonical text form.
type TenantID string

// DB is a pool of connections as a service role.
type DB struct {
	Pool *pgxpool.Pool
}

// Open connects to url (a postgres:// URL or DSN without a password) with
// password, and pings.
func Open(ctx context.Context, url, password string, maxConns int32) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if password != "" {
		cfg.ConnConfig.Password = password
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return &DB{Pool: pool}, nil
}

// Close closes the pool.
func (db *DB) Close() { db.Pool.Close() }

// ErrNoTenant is returned by InTenant for an empty tenant.
var ErrNoTenant = errors.New("postgres: no tenant")

// InTenant runs fn in one transaction with quavon.tenant_id set to tenant
// (SET LOCAL: it ends with the transaction). fn's error rolls back.
func (db *DB) InTenant(ctx context.Context, tenant TenantID, fn func(pgx.Tx) error) error {
	return db.inTenant(ctx, tenant, pgx.TxOptions{}, fn)
}

// InTenantSnapshot is InTenant in a READ ONLY, REPEATABLE READ transaction:
// every statement of fn sees the same snapshot, for reports that must be
// consistent while writers go on (quavon audit verify).
func (db *DB) InTenantSnapshot(ctx context.Context, tenant TenantID, fn func(pgx.Tx) error) error {
	return db.inTenant(ctx, tenant, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, fn)
}

func (db *DB) inTenant(ctx context.Context, tenant TenantID, opts pgx.TxOptions, fn func(pgx.Tx) error) error {
	if tenant == "" {
		return ErrNoTenant
	}
	return pgx.BeginTxFunc(ctx, db.Pool, opts, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT set_config('quavon.tenant_id', $1::uuid::text, true)", string(tenant)); err != nil {
			return fmt.Errorf("postgres: set tenant: %w", err)
		}
		return fn(tx)
	})
}

// OpenConfigured connects with the process's database settings
// (QUAVON_DATABASE_URL and the password in QUAVON_DATABASE_PASSWORD_FILE).
func OpenConfigured(ctx context.Context, cfg config.Database, maxConns int32) (*DB, error) {
	if cfg.URL == "" {
		return nil, errors.New("QUAVON_DATABASE_URL is not set")
	}
	password, err := cfg.Password()
	if err != nil {
		return nil, err
	}
	return Open(ctx, cfg.URL, password, maxConns)
}
