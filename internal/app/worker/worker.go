// Package worker is the one assembly of quavon-worker: the database as the
// service role and River with the control plane's jobs (today the retention
// sweep, hourly and at start).
package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/retention"
)

// Service is quavon-worker.
type Service struct {
	db     *postgres.DB
	client *river.Client[pgx.Tx]
	log    *slog.Logger
}

// New connects and builds the River client.
func New(ctx context.Context, cfg config.WorkerConfig, log *slog.Logger) (*Service, error) {
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	db, err := postgres.OpenConfigured(ctx, cfg.DB, 0)
	if err != nil {
		return nil, err
	}
	workers := river.NewWorkers()
	river.AddWorker(workers, &retention.Worker{DB: db})
	client, err := river.NewClient(riverpgxv5.New(db.Pool), &river.Config{
		Logger:       log,
		Queues:       map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 4}},
		Workers:      workers,
		PeriodicJobs: []*river.PeriodicJob{retention.PeriodicJob(time.Hour)},
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &Service{db: db, client: client, log: log}, nil
}

// Run works until ctx ends, then stops River (running jobs get 30 s).
func (s *Service) Run(ctx context.Context) error {
	if err := s.client.Start(ctx); err != nil {
		return err
	}
	s.log.Info("quavon-worker started")
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.client.Stop(sctx)
}

// Close releases the database pool.
func (s *Service) Close() { s.db.Close() }
