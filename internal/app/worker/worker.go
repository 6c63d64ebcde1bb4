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
//	maintenance  retention_sweep     hourly and at start (internal/retention)
//	             approval_expiry     every minute and at start (internal/fix)
//
// Review runs and fix runs get their job kinds with the review and the fix
// agent; until then intake stores no event they would act on (there is no
// job kind here that does nothing).
//
// Shutdown: when ctx ends, River stops fetching and running jobs get
// QUAVON_WORKER_SHUTDOWN_GRACE to finish; then their contexts are
// cancelled. Every job applies its work in one transaction that also
// completes the job, so an interrupted job rolls back whole and fails with
// the reason (River retries it later): nothing is ever half-applied.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/intake/handle"
	"github.com/quavon/quavon/internal/mention"
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

// hardStopWait bounds the wait for cancelled jobs to return after the
// grace ran out.
const hardStopWait = 30 * time.Second

// Service is quavon-worker.
type Service struct {
	db     *postgres.DB
	client *river.Client[pgx.Tx]
	log    *slog.Logger
	grace  time.Duration
	// release closes what the review runs opened (Valkey).
	release func()
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
	// fromConfig builds Review and Commands from the settings.
	fromConfig bool
}

// workers registers every job kind the worker runs.
func workers(db *postgres.DB, opt Options) *river.Workers {
	w := river.NewWorkers()
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
		if opt, release, err = reviewOptions(ctx, cfg, db, log); err != nil {
			db.Close()
			return nil, fmt.Errorf("worker: review runs: %w", err)
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
		Workers: workers(db, opt),
		PeriodicJobs: []*river.PeriodicJob{
			retention.PeriodicJob(RetentionInterval),
			fix.ExpiryPeriodicJob(ExpiryInterval),
		},
		ErrorHandler: &errorLogger{log: log},
	})
	if err != nil {
		release()
		db.Close()
		return nil, err
	}
	return &Service{db: db, client: client, log: log, grace: wc.ShutdownGrace, release: release}, nil
}

// Run works until ctx ends, then stops: running jobs get the grace to
// finish, then their contexts are cancelled and River waits (bounded) for
// them to return.
func (s *Service) Run(ctx context.Context) error {
	if err := s.client.Start(context.WithoutCancel(ctx)); err != nil {
		return err
	}
	s.log.Info("quavon-worker started", slog.Any("queues", queues.All))
	<-ctx.Done()
	s.log.Info("quavon-worker stopping", slog.Duration("grace", s.grace))
	soft, cancel := context.WithTimeout(context.Background(), s.grace)
	err := s.client.Stop(soft)
	cancel()
	if err == nil {
		return nil
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	s.log.Warn("quavon-worker: jobs still running after the grace; cancelling them")
	hard, cancel := context.WithTimeout(context.Background(), hardStopWait)
	defer cancel()
	return s.client.StopAndCancel(hard)
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
