// Command quavon-worker runs the control plane's background jobs on River
// (PostgreSQL): the queues review, fix and maintenance, assembled by
// internal/app/worker (which lists the job kinds). SIGINT or SIGTERM stops
// it: running jobs get QUAVON_WORKER_SHUTDOWN_GRACE, then are cancelled
// and roll back.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	workerapp "github.com/quavon/quavon/internal/app/worker"
	"github.com/quavon/quavon/internal/config"
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
	cfg, err := config.LoadWorker(environ)
	if err != nil {
		return err
	}
	s, err := workerapp.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Run(ctx)
}
