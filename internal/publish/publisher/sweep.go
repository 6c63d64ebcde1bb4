package publisher

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/queues"
)

// SweepAge is how long a review output must have waited before the sweep
// asks for it again (its own job normally publishes it within seconds).
const SweepAge = 10 * time.Minute

// Inserter inserts River jobs in a transaction (a River client).
type Inserter interface {
	InsertManyTx(ctx context.Context, tx pgx.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
}

// Sweep asks again for every review output that has waited longer than
// age to be published (its jobs gave up after their attempts, or were
// never inserted), once per output: the publish job's uniqueness leaves
// out outputs whose job is still waiting or running. It returns how many
// outputs it asked for.
func Sweep(ctx context.Context, db *postgres.DB, jobs Inserter, age time.Duration) (int, error) {
	return sweep(ctx, db, jobs, `SELECT id::text FROM pending_outputs WHERE status IN ('ready', 'approved')
		AND kind IN ('review', 'check_run', 'sarif') AND updated_at < now() - $1::interval ORDER BY updated_at LIMIT 1000`, age.String())
}

// SweepFix asks for every fix_pr and fix_commit output that is ready (auto mode) or
// approved, whatever its age: neither fixrun nor the dashboard's approval
// inserts its publish job, so the sweep is what publishes them (within
// SweepInterval). The job's uniqueness keeps one per output.
func SweepFix(ctx context.Context, db *postgres.DB, jobs Inserter) (int, error) {
	return sweep(ctx, db, jobs, `SELECT id::text FROM pending_outputs WHERE status IN ('ready', 'approved')
		AND kind IN ('fix_pr', 'fix_commit') ORDER BY updated_at LIMIT 1000`)
}

func sweep(ctx context.Context, db *postgres.DB, jobs Inserter, query string, args ...any) (int, error) {
	rows, err := db.Pool.Query(ctx, "SELECT id::text FROM quavon_tenants()")
	if err != nil {
		return 0, fmt.Errorf("publisher.Sweep: %w", err)
	}
	tenants, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("publisher.Sweep: %w", err)
	}
	n := 0
	for _, t := range tenants {
		tid := postgres.TenantID(t)
		err := db.InTenant(ctx, tid, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, query, args...)
			if err != nil {
				return err
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil || len(ids) == 0 {
				return err
			}
			params := make([]river.InsertManyParams, len(ids))
			for i, id := range ids {
				params[i] = river.InsertManyParams{Args: publish.Job{Tenant: tid, OutputID: id}}
			}
			res, err := jobs.InsertManyTx(ctx, tx, params)
			for _, r := range res {
				if !r.UniqueSkippedAsDuplicate {
					n++
				}
			}
			return err
		})
		if err != nil {
			return n, fmt.Errorf("publisher.Sweep tenant %s: %w", t, err)
		}
	}
	return n, nil
}

// SweepArgs is the periodic sweep's job.
type SweepArgs struct{}

// Kind implements river.JobArgs.
func (SweepArgs) Kind() string { return "publish_sweep" }

// InsertOpts puts the sweep on the publish queue.
func (SweepArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queues.Publish, MaxAttempts: 3}
}

// SweepWorker runs Sweep with the River client running it.
type SweepWorker struct {
	river.WorkerDefaults[SweepArgs]
	DB *postgres.DB
	// Fix also sweeps fix_pr outputs (SweepFix): set when the publisher
	// publishes them.
	Fix bool
}

// Work sweeps.
func (w *SweepWorker) Work(ctx context.Context, _ *river.Job[SweepArgs]) error {
	client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return err
	}
	if _, err = Sweep(ctx, w.DB, client, SweepAge); err != nil || !w.Fix {
		return err
	}
	_, err = SweepFix(ctx, w.DB, client)
	return err
}

// SweepPeriodicJob schedules the sweep every interval and once at start.
func SweepPeriodicJob(interval time.Duration) *river.PeriodicJob {
	return river.NewPeriodicJob(river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) { return SweepArgs{}, nil },
		&river.PeriodicJobOpts{RunOnStart: true})
}
