// Command quavon-publisher is the only writer to GitHub: it publishes the
// review outputs of review runs (reviews, check runs, SARIF uploads) from
// River's queue publish, with write tokens from the token broker. It is
// assembled by internal/app/publisher. SIGINT or SIGTERM stops it: running
// jobs get QUAVON_PUBLISHER_SHUTDOWN_GRACE, then are cancelled (their
// retries reconcile before writing).
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	publisherapp "github.com/quavon/quavon/internal/app/publisher"
	"github.com/quavon/quavon/internal/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Environ(), os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "quavon-publisher:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, environ []string, logOut io.Writer) error {
	log := slog.New(slog.NewJSONHandler(logOut, nil))
	cfg, err := config.LoadPublisher(environ)
	if err != nil {
		return err
	}
	s, err := publisherapp.New(ctx, cfg, log, publisherapp.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Run(ctx)
}
