// Command quavon-token-broker is the only process that holds the GitHub
// Apps' private keys (internal/tokenbroker, assembled by
// internal/app/broker). It mints installation tokens for one repository and
// one named permission set per request and hands each caller only the sets
// its line of the callers file allows. It has no database connection, no
// model key and no sandbox key, and listens on a Unix socket or a loopback
// or private address only.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	brokerapp "github.com/quavon/quavon/internal/app/broker"
	"github.com/quavon/quavon/internal/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Environ(), os.Stderr, nil)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "quavon-token-broker:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends; ready, when not nil, gets the address.
func run(ctx context.Context, environ []string, logOut io.Writer, ready chan<- string) error {
	log := slog.New(slog.NewJSONHandler(logOut, nil))
	cfg, err := config.LoadBroker(environ)
	if err != nil {
		return err
	}
	s, err := brokerapp.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	if ready != nil {
		ready <- s.Addr()
	}
	return s.Run(ctx)
}
