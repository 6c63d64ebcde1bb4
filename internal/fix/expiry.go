package fix

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/queues"
)

// ExpireApprovals expires, tenant by tenant, every output awaiting
// approval whose expiry is at or before now, and moves its fix run from
// awaiting_approval to expired (ReasonApprovalExpired). A run that moved
// on meanwhile keeps its state. It returns how many outputs expired.
func ExpireApprovals(ctx context.Context, db *postgres.DB, now time.Time) (int, error) {
	rows, err := db.Pool.Query(ctx, "SELECT id::text FROM quavon_tenants()")
	if err != nil {
		return 0, fmt.Errorf("fix.ExpireApprovals: %w", err)
	}
	tenants, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("fix.ExpireApprovals: %w", err)
	}
	total := 0
	for _, t := range tenants {
		err := db.InTenant(ctx, postgres.TenantID(t), func(tx pgx.Tx) error {
			expired, err := publish.ExpireDue(ctx, tx, now)
			if err != nil {
				return err
			}
			total += len(expired)
			for _, o := range expired {
				if o.FixRunID == "" {
					continue
				}
				_, err := Transition(ctx, tx, o.FixRunID, StatusExpired, Why{Reason: ReasonApprovalExpired})
				if err != nil && !errors.Is(err, ErrTerminal) && !errors.Is(err, ErrTransition) {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return total, fmt.Errorf("fix.ExpireApprovals: tenant %s: %w", t, err)
		}
	}
	return total, nil
}

// ExpiryArgs is the periodic approval-expiry job.
type ExpiryArgs struct{}

// Kind is River's job kind.
func (ExpiryArgs) Kind() string { return "approval_expiry" }

// InsertOpts puts it on the maintenance queue.
func (ExpiryArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: queues.Maintenance} }

// ExpiryWorker runs ExpireApprovals.
type ExpiryWorker struct {
	river.WorkerDefaults[ExpiryArgs]
	DB  *postgres.DB
	Now func() time.Time
}

// Work expires once.
func (w *ExpiryWorker) Work(ctx context.Context, _ *river.Job[ExpiryArgs]) error {
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	_, err := ExpireApprovals(ctx, w.DB, now())
	return err
}

// ExpiryPeriodicJob schedules the expiry every interval and once at start.
func ExpiryPeriodicJob(interval time.Duration) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return ExpiryArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true})
}
