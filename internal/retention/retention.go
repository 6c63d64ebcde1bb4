// Package retention deletes tenant data older than the tenant's retention
// (spec DT5, tenants.retention_days), as a River periodic job.
//
// The audit log is not swept: it is append-only for every role (see
// internal/audit) and leaves only with its tenant.
package retention

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/queues"
)

// Swept is one table the sweep covers and the column that dates a row. A
// row whose date is NULL is kept: runs are dated by finished_at, so a run
// that has not ended (a fix awaiting approval for longer than the
// retention, say) is never swept from under its worker.
// Later features add their tables here (and their tests to retention_test).
type Swept struct {
	Table, Column string
}

// Tables are the tenant tables with retained data.
var Tables = []Swept{
	{"webhook_deliveries", "received_at"},
	{"fix_run_caps", "day"},
	{"llm_budget_days", "day"},
	{"webhook_events", "received_at"},
	{"review_runs", "finished_at"},
	{"finding_feedback", "created_at"},
	{"fix_runs", "finished_at"},
	{"issues", "updated_at"},
	{"ac_checks", "created_at"},
}

// Cascaded are the tenant tables whose rows go with a swept row they
// belong to (ON DELETE CASCADE), so they are not swept on their own dates:
// a child must not go before its run does.
var Cascaded = map[string]string{
	"review_findings": "review_runs",
	"fix_run_steps":   "fix_runs",
	"sandbox_runs":    "review_runs, fix_runs",
	"pending_outputs": "review_runs, fix_runs",
	"publish_intents": "pending_outputs",
}

// Kept are the tenant tables the sweep never touches, and why.
var Kept = map[string]string{
	"installations":       "configuration: goes with the installation",
	"repositories":        "configuration: goes when no app covers it",
	"repository_policies": "configuration",
	"users":               "accounts",
	"user_identities":     "accounts",
	"role_grants":         "configuration",
	"api_tokens":          "credentials: expire and are revoked on their own",
	"web_sessions":        "credentials: end within QUAVON_WEB_SESSION_ABSOLUTE; a user's ended sessions are deleted at their next sign-in",
	"audit_log":           "append-only for every role; leaves with its tenant",
	"audit_heads":         "one row per tenant: the head of its audit hash chain, kept with audit_log",
}

// Result counts deleted rows per table over all tenants.
type Result map[string]int64

// Sweep deletes, in each tenant's own transaction, every row of Tables
// older than now minus the tenant's retention. Tenants are listed by
// quavon_tenants(), the only way to see them without a tenant.
func Sweep(ctx context.Context, db *postgres.DB, now time.Time) (Result, error) {
	rows, err := db.Pool.Query(ctx, "SELECT id::text, retention_days FROM quavon_tenants()")
	if err != nil {
		return nil, fmt.Errorf("retention: %w", err)
	}
	type tenant struct {
		id   string
		days int
	}
	tenants, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (tenant, error) {
		var t tenant
		return t, r.Scan(&t.id, &t.days)
	})
	if err != nil {
		return nil, fmt.Errorf("retention: %w", err)
	}
	res := Result{}
	for _, t := range tenants {
		cutoff := now.Add(-time.Duration(t.days) * 24 * time.Hour)
		err := db.InTenant(ctx, postgres.TenantID(t.id), func(tx pgx.Tx) error {
			for _, s := range Tables {
				tag, err := tx.Exec(ctx, fmt.Sprintf("DELETE FROM %s WHERE %s < $1", pgx.Identifier{s.Table}.Sanitize(),
					pgx.Identifier{s.Column}.Sanitize()), cutoff)
				if err != nil {
					return fmt.Errorf("%s: %w", s.Table, err)
				}
				res[s.Table] += tag.RowsAffected()
			}
			return nil
		})
		if err != nil {
			return res, fmt.Errorf("retention: tenant %s: %w", t.id, err)
		}
	}
	return res, nil
}

// Args is the periodic job.
type Args struct{}

// Kind is River's job kind.
func (Args) Kind() string { return "retention_sweep" }

// InsertOpts puts the sweep on the maintenance queue.
func (Args) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: queues.Maintenance} }

// Worker runs Sweep.
type Worker struct {
	river.WorkerDefaults[Args]
	DB  *postgres.DB
	Now func() time.Time
}

// Work sweeps once.
func (w *Worker) Work(ctx context.Context, _ *river.Job[Args]) error {
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	_, err := Sweep(ctx, w.DB, now())
	return err
}

// PeriodicJob schedules the sweep every interval and once at start.
func PeriodicJob(interval time.Duration) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return Args{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true})
}
