// Command quavon-worker runs the control plane's background jobs on River
// (PostgreSQL): today the retention sweep (spec DT5), hourly and at start.
// Review and fix runs arrive with their issues.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/retention"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Environ(), os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "quavon-worker:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, environ []string, logOut io.Writer) error {
	log := slog.New(slog.NewJSONHandler(logOut, nil))
	cfg, err := config.Load(environ)
	if err != nil {
		return err
	}
	db, err := postgres.OpenConfigured(ctx, cfg.DB, 0)
	if err != nil {
		return err
	}
	defer db.Close()
	workers := river.NewWorkers()
	river.AddWorker(workers, &retention.Worker{DB: db})
	client, err := river.NewClient(riverpgxv5.New(db.Pool), &river.Config{
		Logger:       log,
		Queues:       map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 4}},
		Workers:      workers,
		PeriodicJobs: []*river.PeriodicJob{retention.PeriodicJob(time.Hour)},
	})
	if err != nil {
		return err
	}
	if err := client.Start(ctx); err != nil {
		return err
	}
	log.Info("quavon-worker started")
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return client.Stop(sctx)
}
