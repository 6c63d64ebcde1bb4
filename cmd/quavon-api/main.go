// Command quavon-api serves Quavon's HTTP API: webhook intake and the
// repository policy API (internal/app/api). It connects to PostgreSQL as a
// service role (a member of quavon_app that owns nothing) and holds no app
// key and no write token.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	apiapp "github.com/quavon/quavon/internal/app/api"
	"github.com/quavon/quavon/internal/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Environ(), os.Stderr, nil)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "quavon-api:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends; ready, when not nil, gets the listening
// address.
func run(ctx context.Context, environ []string, logOut io.Writer, ready chan<- string) error {
	log := slog.New(slog.NewJSONHandler(logOut, nil))
	cfg, err := config.LoadAPI(environ)
	if err != nil {
		return err
	}
	s, err := apiapp.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer s.Close()
	if ready != nil {
		ready <- s.Addr()
	}
	return s.Run(ctx)
}
