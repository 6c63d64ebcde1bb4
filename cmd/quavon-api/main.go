// Command quavon-api serves Quavon's HTTP API (internal/api): repository
// policies today. It connects to PostgreSQL as a service role (a member of
// quavon_app that owns nothing) and holds no tokens of any code host.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/quavon/quavon/internal/api"
	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/postgres"
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
	cfg, err := config.Load(environ)
	if err != nil {
		return err
	}
	db, err := postgres.OpenConfigured(ctx, cfg.DB, 0)
	if err != nil {
		return err
	}
	defer db.Close()
	secrets := map[api.AppKind][]byte{}
	for kind, file := range map[api.AppKind]string{api.AppReview: cfg.API.ReviewWebhookSecretFile, api.AppFixer: cfg.API.FixerWebhookSecretFile} {
		if file == "" {
			continue
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("webhook secret of the %s app: %w", kind, err)
		}
		if s := strings.TrimRight(string(b), "\r\n"); len(s) >= 16 {
			secrets[kind] = []byte(s)
		} else {
			return fmt.Errorf("webhook secret of the %s app: want at least 16 characters", kind)
		}
	}
	ln, err := net.Listen("tcp", cfg.API.Listen)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           (&api.Server{DB: db, Log: log, WebhookSecrets: secrets}).Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second, // webhook bodies reach 25 MB
		WriteTimeout:      30 * time.Second,
		MaxHeaderBytes:    32 << 10,
	}
	log.Info("quavon-api listening", slog.String("addr", ln.Addr().String()))
	if ready != nil {
		ready <- ln.Addr().String()
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}
