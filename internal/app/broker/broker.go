// Package broker is the one assembly of quavon-token-broker: the callers
// file, the apps' private keys (the only place any process reads them), and
// the broker (internal/tokenbroker) on its Unix socket or loopback/private
// address.
package broker

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/github/appauth"
	"github.com/quavon/quavon/internal/secretfile"
	"github.com/quavon/quavon/internal/tokenbroker"
)

var _ tokenbroker.Minter = (*appauth.App)(nil)

// Service is quavon-token-broker.
type Service struct {
	ln  net.Listener
	srv *http.Server
}

// New reads the callers file and the keys, and listens.
func New(ctx context.Context, cfg config.BrokerConfig, log *slog.Logger) (*Service, error) {
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	// Not a secret, but whoever can write it can grant themselves tokens.
	raw, err := secretfile.Read("QUAVON_BROKER_CALLERS_FILE", cfg.Broker.CallersFile, 1)
	if err != nil {
		return nil, err
	}
	callers, err := tokenbroker.ParseCallers(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	apps := map[github.AppKind]tokenbroker.Minter{}
	for kind, a := range map[github.AppKind]config.App{github.AppReview: cfg.Broker.Review, github.AppFixer: cfg.Broker.Fixer} {
		if a.ID == 0 {
			continue
		}
		setting := "QUAVON_GITHUB_REVIEW_PRIVATE_KEY_FILE"
		if kind == github.AppFixer {
			setting = "QUAVON_GITHUB_FIXER_PRIVATE_KEY_FILE"
		}
		pem, err := secretfile.Read(setting, a.PrivateKeyFile, 1)
		if err != nil {
			return nil, err
		}
		app, err := appauth.NewApp(appauth.AppConfig{ID: a.ID, PrivateKeyPEM: pem, APIURL: cfg.GitHub.APIURL, Logger: log})
		if err != nil {
			return nil, err
		}
		apps[kind] = app
	}
	s, err := tokenbroker.New(tokenbroker.Config{Apps: apps, Callers: callers, Log: log})
	if err != nil {
		return nil, err
	}
	ln, err := tokenbroker.Listen(cfg.Broker.Listen)
	if err != nil {
		return nil, err
	}
	log.Info("token broker listening", slog.String("addr", cfg.Broker.Listen), slog.Int("callers", len(callers)),
		slog.Bool("review_app", apps[github.AppReview] != nil), slog.Bool("fixer_app", apps[github.AppFixer] != nil))
	return &Service{ln: ln, srv: &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		// A mint may wait out a GitHub rate limit (github.DefaultMaxWait).
		WriteTimeout:   3 * time.Minute,
		MaxHeaderBytes: 8 << 10,
	}}, nil
}

// Addr is the listening address.
func (s *Service) Addr() string { return s.ln.Addr().String() }

// Run serves until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
