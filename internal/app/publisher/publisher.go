// Package publisher is the one assembly of quavon-publisher: the database
// as the service role, GitHub through the broker's write tokens (the
// publisher's credential), and River working the queue publish
// (QUAVON_PUBLISHER_CONCURRENCY), one job per output (publish.Job,
// internal/publish/publisher), and a sweep every SweepInterval that asks
// again for review outputs whose jobs gave up.
//
// With QUAVON_GITHUB_FIXER_APP_SLUG set it also publishes fix_pr outputs
// (the Fixer's write tokens, the review app's read tokens for the issue
// and the trigger actor, the secret scanner); this is the one place fix
// publication is wired.
//
// /metrics and /healthz are served on QUAVON_PUBLISHER_METRICS_LISTEN (its
// only listener): the publish jobs' outcomes by kind (snoozed: waiting for
// the write spacing), their waits and run times, and the publish queue's
// depth, with metrics.Worker's closed label sets.
//
// It holds no app private key, no model key, no sandbox key and no Valkey
// client (cmd/quavon-publisher/deps_test.go proves what it links).
//
// Shutdown: when ctx ends, River stops fetching; running jobs get
// QUAVON_PUBLISHER_SHUTDOWN_GRACE, then their contexts are cancelled. An
// interrupted job may have written: its intent stays claimed, and the
// retry reconciles before it writes again.
package publisher

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
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/metrics"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/publish/publisher"
	"github.com/quavon/quavon/internal/queues"
	"github.com/quavon/quavon/internal/secret/leaks"
	"github.com/quavon/quavon/internal/secretfile"
)

// SweepInterval is how often the publisher asks again for review outputs
// whose jobs gave up (publisher.Sweep).
const SweepInterval = 5 * time.Minute

// minCredentialBytes matches github.NewBrokerClient's check.
const minCredentialBytes = 32

// Service is quavon-publisher.
type Service struct {
	db     *postgres.DB
	client *river.Client[pgx.Tx]
	log    *slog.Logger
	grace  time.Duration

	// /metrics (QUAVON_PUBLISHER_METRICS_LISTEN): River's job events on
	// the publish queue and its depth. The recorder is metrics.Worker's:
	// the publisher is a River worker of one queue.
	metricsListen string
	reg           *prometheus.Registry
	recorder      *metrics.Worker
	metricsReady  chan string
}

// jobKinds are the publisher's job kinds, the label values /metrics allows.
var jobKinds = []string{publish.JobKind, publisher.SweepArgs{}.Kind()}

// publishQueueCounts reads the publish queue's depth by River state at
// scrape time (River's table; no tenant data).
func publishQueueCounts(db *postgres.DB) metrics.QueueCounter {
	return func(ctx context.Context) ([]metrics.QueueCount, error) {
		rows, err := db.Pool.Query(ctx, `SELECT queue, state::text, count(*) FROM river_job WHERE queue = $1 GROUP BY queue, state`, queues.Publish)
		if err != nil {
			return nil, fmt.Errorf("publisher queue depths: %w", err)
		}
		return pgx.CollectRows(rows, func(r pgx.CollectableRow) (metrics.QueueCount, error) {
			var q metrics.QueueCount
			err := r.Scan(&q.Queue, &q.State, &q.Jobs)
			return q, err
		})
	}
}

// Options replace parts of the assembly for tests: the GitHub transport
// (to record or fault requests). The zero value is production.
type Options struct {
	HTTP github.TransportConfig
}

// New connects and builds the service.
func New(ctx context.Context, cfg config.PublisherConfig, log *slog.Logger, opt Options) (*Service, error) {
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	pc := cfg.Publisher
	if pc.Concurrency < 1 || pc.ShutdownGrace < 0 || pc.WriteSpacing < 0 {
		return nil, fmt.Errorf("publisher: invalid settings %+v", pc)
	}
	cred, err := secretfile.Read("QUAVON_BROKER_CREDENTIAL_FILE", cfg.Broker.CredentialFile, minCredentialBytes)
	if err != nil {
		return nil, fmt.Errorf("publisher: %w", err)
	}
	tokens, err := github.NewBrokerClient(cfg.Broker.Addr, cred)
	if err != nil {
		return nil, fmt.Errorf("publisher: %w", err)
	}
	conn, err := github.NewConn(github.ConnConfig{APIURL: cfg.GitHub.APIURL, GraphQLURL: cfg.GitHub.GraphQLURL, Tokens: tokens,
		HTTP: opt.HTTP, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("publisher: %w", err)
	}
	db, err := postgres.OpenConfigured(ctx, cfg.DB, int32(2*pc.Concurrency+6))
	if err != nil {
		return nil, err
	}
	pcfg := publisher.Config{ReviewAppSlug: pc.ReviewAppSlug}
	if pc.FixerAppSlug != "" {
		// Fix pull requests: the Fixer's write set, the review app's read
		// set for the issue and the actor, gitleaks plus Quavon's patterns.
		scanner, err := leaks.NewScanner()
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("publisher: %w", err)
		}
		pcfg.Fix = &publisher.FixConfig{AppSlug: pc.FixerAppSlug, Fixers: publisher.ConnFixers(conn),
			Readers: publisher.ConnReaders(conn), Scanner: scanner}
	} else {
		log.Warn("QUAVON_GITHUB_FIXER_APP_SLUG is empty: fix pull requests are not published")
	}
	pub, err := publisher.New(db, publisher.ConnReviewers(conn), pcfg, publisher.NewSpacer(pc.WriteSpacing, nil), log)
	if err != nil {
		db.Close()
		return nil, err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &publisher.Worker{Publisher: pub})
	river.AddWorker(workers, &publisher.SweepWorker{DB: db, Fix: pcfg.Fix != nil})
	client, err := river.NewClient(riverpgxv5.New(db.Pool), &river.Config{
		Logger:       log,
		Queues:       map[string]river.QueueConfig{queues.Publish: {MaxWorkers: pc.Concurrency}},
		Workers:      workers,
		PeriodicJobs: []*river.PeriodicJob{publisher.SweepPeriodicJob(SweepInterval)},
		ErrorHandler: &errorLogger{log: log},
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	reg := metrics.NewRegistry()
	return &Service{db: db, client: client, log: log, grace: pc.ShutdownGrace, metricsListen: cfg.MetricsListen, reg: reg,
		recorder: metrics.NewWorker(reg, []string{queues.Publish}, jobKinds, publishQueueCounts(db)), metricsReady: make(chan string, 1)}, nil
}

// MetricsReady gets the metrics listener's address once Run has opened it
// (nothing when QUAVON_PUBLISHER_METRICS_LISTEN is empty).
func (s *Service) MetricsReady() <-chan string { return s.metricsReady }

// Run works until ctx ends, then stops as the package doc says.
func (s *Service) Run(ctx context.Context) error {
	if s.metricsListen != "" {
		ms, err := metrics.Listen(s.metricsListen, s.reg)
		if err != nil {
			return err
		}
		s.metricsReady <- ms.Addr()
		s.log.Info("quavon-publisher metrics listening", slog.String("addr", ms.Addr()))
		defer ms.Start(s.log, "quavon-publisher")()
	}
	return riverrun.Run(ctx, s.client, s.recorder, s.grace, s.log, "quavon-publisher", slog.String("queue", queues.Publish))
}

// Close releases the database pool.
func (s *Service) Close() { s.db.Close() }

// errorLogger logs failed jobs once; arguments are ids, errors the
// publisher's own (tokens are never in them).
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
