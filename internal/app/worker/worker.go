// Package worker is the one assembly of quavon-worker: the database as the
// service role and River running the queues review, fix and maintenance,
// each with its own concurrency (QUAVON_WORKER_*_CONCURRENCY).
//
// The jobs it works today:
//
//	review       pull_request_event  pull_request opened, reopened, ready_for_review, synchronize
//	                                 and closed (internal/intake/handle): queue and supersede review runs
//	             review_run          one review run (internal/review/job), with Options.Review
//	fix          issue_event         issues closed, transferred, deleted (internal/intake/handle)
//	             fix_trigger         issues labeled, "@<fixer> fix" comments: eligibility and caps (fix.Admit)
//	             fix_run             one admitted fix run (internal/fix/fixjob), with Options.Fix
//	maintenance  retention_sweep     hourly and at start (internal/retention)
//	             approval_expiry     every minute and at start (internal/fix)
//
// Review and fix runs share one set of parts built from the settings
// (parts.go): one broker client, GitHub connection, git cache and sandbox
// client.
//
// Shutdown: when ctx ends, River stops fetching and running jobs get
// QUAVON_WORKER_SHUTDOWN_GRACE to finish; then their contexts are
// cancelled. Every event job applies its work in one transaction that also
// completes the job, so an interrupted job rolls back whole and fails with
// the reason (River retries it later): nothing is ever half-applied. A run
// job (review_run, fix_run) writes its run in short transactions; a fix
// run interrupted while its agent ran is failed by the retry, never run
// twice (internal/fix/fixjob).
package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/quavon/quavon/internal/app/riverrun"
	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/fix/fixjob"
	"github.com/quavon/quavon/internal/intake"
	"github.com/quavon/quavon/internal/intake/handle"
	"github.com/quavon/quavon/internal/mention"
	"github.com/quavon/quavon/internal/metrics"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/queues"
	"github.com/quavon/quavon/internal/retention"
	reviewjob "github.com/quavon/quavon/internal/review/job"
)

// Intervals of the periodic maintenance jobs.
const (
	RetentionInterval = time.Hour
	ExpiryInterval    = time.Minute
)

// Service is quavon-worker.
type Service struct {
	db      *postgres.DB
	client  *river.Client[pgx.Tx]
	log     *slog.Logger
	grace   time.Duration
	metrics *workerMetrics
	// release closes what the review runs opened (Valkey).
	release func()
}

// workerMetrics are the worker's /metrics: River's job events and the
// queue depths, served on QUAVON_WORKER_METRICS_LISTEN from Run on.
type workerMetrics struct {
	listen   string
	reg      *prometheus.Registry
	recorder *metrics.Worker
	ready    chan string // the listening address, once
}

// kinds are the job kinds the worker registers (the closed set of the
// kind label).
var kinds = []string{retention.Args{}.Kind(), fix.ExpiryArgs{}.Kind(), intake.PullRequestEventArgs{}.Kind(), intake.IssueEventArgs{}.Kind(),
	intake.ReviewCommentEventArgs{}.Kind(), intake.FixTriggerArgs{}.Kind(), reviewjob.RunArgs{}.Kind(), fixjob.RunArgs{}.Kind()}

// queueCounts reads the queue depths for /metrics: one grouped count over
// River's table (the worker's role may read it; no tenant data).
func queueCounts(db *postgres.DB) metrics.QueueCounter {
	return func(ctx context.Context) ([]metrics.QueueCount, error) {
		rows, err := db.Pool.Query(ctx, `SELECT queue, state::text, count(*) FROM river_job GROUP BY queue, state`)
		if err != nil {
			return nil, fmt.Errorf("worker queue depths: %w", err)
		}
		return pgx.CollectRows(rows, func(r pgx.CollectableRow) (metrics.QueueCount, error) {
			var q metrics.QueueCount
			err := r.Scan(&q.Queue, &q.State, &q.Jobs)
			return q, err
		})
	}
}

// Options are the parts of the worker that need more than the database.
type Options struct {
	// Review runs review runs (review_run jobs) with these collaborators;
	// nil: pull request events queue no review run.
	Review *reviewjob.Deps
	// Commands, with Review, acts on "@<ReviewAppSlug> review" comments,
	// reading them and the commenter's permission live.
	Commands      handle.LivePullRequests
	ReviewAppSlug string
	parser        *mention.Parser
	// Live reads GitHub for fix triggers' eligibility (nil: triggers fail
	// and are retried until the worker can read GitHub).
	Live handle.LiveSource
	// Fix runs admitted fix runs (fix_run jobs) with these collaborators;
	// nil: admitted runs stay queued.
	Fix *fixjob.Deps
	// fromConfig builds Review, Commands, Live and Fix from the settings,
	// sharing one set of parts (parts.go).
	fromConfig bool
}

// workers registers every job kind the worker runs.
func workers(db *postgres.DB, opt Options, perTenant int) *river.Workers {
	w := river.NewWorkers()
	river.AddWorker(w, &handle.FixTriggerWorker{DB: db, Live: opt.Live, PerTenant: perTenant, Runs: opt.Fix != nil})
	if opt.Fix != nil {
		river.AddWorker(w, &fixjob.Worker{DB: db, Deps: *opt.Fix})
	}
	river.AddWorker(w, &retention.Worker{DB: db})
	river.AddWorker(w, &fix.ExpiryWorker{DB: db})
	river.AddWorker(w, &handle.PullRequestEventWorker{DB: db, Reviews: opt.Review != nil})
	if opt.Review != nil {
		river.AddWorker(w, &reviewjob.Worker{DB: db, Deps: *opt.Review})
	}
	if opt.Review != nil && opt.Commands != nil {
		river.AddWorker(w, &handle.ReviewCommentEventWorker{DB: db, Parser: opt.parser, Live: opt.Commands})
	} else {
		river.AddWorker(w, &handle.ReviewCommentEventWorker{DB: db})
	}
	river.AddWorker(w, &handle.IssueEventWorker{DB: db})
	river.AddWorker(w, &handle.IssueSyncEventWorker{DB: db})
	return w
}

// New connects and builds the River client, with review runs when the
// settings enable them (QUAVON_BROKER_CREDENTIAL_FILE).
func New(ctx context.Context, cfg config.WorkerConfig, log *slog.Logger) (*Service, error) {
	return NewWith(ctx, cfg, log, Options{fromConfig: true})
}

// NewWith is New with opt's parts.
func NewWith(ctx context.Context, cfg config.WorkerConfig, log *slog.Logger, opt Options) (*Service, error) {
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	wc := cfg.Worker
	if wc.ReviewConcurrency < 1 || wc.FixConcurrency < 1 || wc.MaintenanceConcurrency < 1 || wc.ShutdownGrace < 0 {
		return nil, fmt.Errorf("worker: invalid queue settings %+v", wc)
	}
	// A connection per running job, and River's own (leader, notifier,
	// producers, completer).
	conns := int32(wc.ReviewConcurrency + wc.FixConcurrency + wc.MaintenanceConcurrency + 6)
	db, err := postgres.OpenConfigured(ctx, cfg.DB, conns)
	if err != nil {
		return nil, err
	}
	release := func() {}
	if opt.fromConfig {
		if opt, release, err = optionsFromConfig(ctx, cfg, db, log); err != nil {
			db.Close()
			return nil, fmt.Errorf("worker: %w", err)
		}
	}
	if opt.Commands != nil {
		p, err := mention.New(opt.ReviewAppSlug)
		if err != nil {
			release()
			db.Close()
			return nil, fmt.Errorf("worker: the review app's slug: %w", err)
		}
		opt.parser = p
	}
	client, err := river.NewClient(riverpgxv5.New(db.Pool), &river.Config{
		Logger: log,
		Queues: map[string]river.QueueConfig{
			queues.Review:      {MaxWorkers: wc.ReviewConcurrency},
			queues.Fix:         {MaxWorkers: wc.FixConcurrency},
			queues.Maintenance: {MaxWorkers: wc.MaintenanceConcurrency},
		},
		Workers: workers(db, opt, cfg.MaxFixRunsPerTenantPerDay),
		// Review runs insert publish jobs, which quavon-publisher works.
		SkipUnknownJobCheck: true,
		PeriodicJobs: []*river.PeriodicJob{
			retention.PeriodicJob(RetentionInterval),
			fix.ExpiryPeriodicJob(ExpiryInterval),
		},
		ErrorHandler: &errorLogger{log: log},
		// Beyond the longest job's timeout (a fix run's, fixjob.Worker):
		// a job still running is never rescued and run a second time.
		RescueStuckJobsAfter: 90 * time.Minute,
	})
	if err != nil {
		release()
		db.Close()
		return nil, err
	}
	reg := metrics.NewRegistry()
	m := &workerMetrics{listen: cfg.MetricsListen, reg: reg, ready: make(chan string, 1),
		recorder: metrics.NewWorker(reg, queues.All, kinds, queueCounts(db))}
	return &Service{db: db, client: client, log: log, grace: wc.ShutdownGrace, metrics: m, release: release}, nil
}

// MetricsReady gets the metrics listener's address once Run has opened it
// (nothing when QUAVON_WORKER_METRICS_LISTEN is empty).
func (s *Service) MetricsReady() <-chan string { return s.metrics.ready }

// Run works until ctx ends, then stops: running jobs get the grace to
// finish, then their contexts are cancelled and River waits (bounded) for
// them to return.
func (s *Service) Run(ctx context.Context) error {
	if s.metrics.listen != "" {
		ms, err := metrics.Listen(s.metrics.listen, s.metrics.reg)
		if err != nil {
			return err
		}
		s.metrics.ready <- ms.Addr()
		s.log.Info("quavon-worker metrics listening", slog.String("addr", ms.Addr()))
		defer ms.Start(s.log, "quavon-worker")()
	}
	return riverrun.Run(ctx, s.client, s.metrics.recorder, s.grace, s.log, "quavon-worker", slog.Any("queues", queues.All))
}

// InsertTx inserts a job in tx as this worker's client does (it refuses
// kinds the worker has no worker for).
func (s *Service) InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	return s.client.InsertTx(ctx, tx, args, opts)
}

// Close releases the database pool.
func (s *Service) Close() {
	if s.release != nil {
		s.release()
	}
	s.db.Close()
}

// errorLogger logs failed jobs once, with their kind, queue and attempt;
// job arguments are ids only, and error texts are the handlers' own (no
// output, no secrets).
type errorLogger struct{ log *slog.Logger }

func (e *errorLogger) HandleError(ctx context.Context, job *rivertype.JobRow, err error) *river.ErrorHandlerResult {
	e.log.Warn("job failed", slog.String("kind", job.Kind), slog.String("queue", job.Queue), slog.Int64("job", job.ID),
		slog.Int("attempt", job.Attempt), slog.Int("max_attempts", job.MaxAttempts), slog.String("error", err.Error()))
	return nil
}

func (e *errorLogger) HandlePanic(ctx context.Context, job *rivertype.JobRow, panicVal any, trace string) *river.ErrorHandlerResult {
	e.log.Error("job panicked", slog.String("kind", job.Kind), slog.String("queue", job.Queue), slog.Int64("job", job.ID),
		slog.Int("attempt", job.Attempt), slog.String("panic", fmt.Sprint(panicVal)))
	return nil
}
