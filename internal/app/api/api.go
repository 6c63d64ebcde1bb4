// Package api is the one assembly of quavon-api: the database as the
// service role, the webhook secrets, an insert-only River client for the
// jobs of webhook events, the HTTP API (internal/api) and, when
// QUAVON_WEB_PUBLIC_URL is set, the dashboard (internal/web, with the
// review app's read token from the broker for live permission checks) on
// its listener.
package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	httpapi "github.com/quavon/quavon/internal/api"
	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/mention"
	"github.com/quavon/quavon/internal/metrics"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/secretfile"
	"github.com/quavon/quavon/internal/web"
)

// MinWebhookSecret is the shortest webhook secret accepted.
const MinWebhookSecret = github.MinWebhookSecret

// Service is quavon-api.
type Service struct {
	db      *postgres.DB
	ln      net.Listener
	srv     *http.Server
	log     *slog.Logger
	metrics *metrics.Server // nil when QUAVON_API_METRICS_LISTEN is empty
}

// New connects, reads the webhook secrets and listens.
func New(ctx context.Context, cfg config.APIConfig, log *slog.Logger) (*Service, error) {
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	secrets := map[github.AppKind][]byte{}
	for kind, f := range map[github.AppKind]struct{ setting, path string }{
		github.AppReview: {"QUAVON_GITHUB_REVIEW_WEBHOOK_SECRET_FILE", cfg.API.ReviewWebhookSecretFile},
		github.AppFixer:  {"QUAVON_GITHUB_FIXER_WEBHOOK_SECRET_FILE", cfg.API.FixerWebhookSecretFile},
	} {
		if f.path == "" {
			continue
		}
		b, err := secretfile.Read(f.setting, f.path, MinWebhookSecret)
		if err != nil {
			return nil, fmt.Errorf("webhook secret of the %s app: %w", kind, err)
		}
		secrets[kind] = b
	}
	db, err := postgres.OpenConfigured(ctx, cfg.DB, 0)
	if err != nil {
		return nil, err
	}
	// Insert-only: the API puts the jobs of repository events into the
	// event's transaction; quavon-worker works them.
	jobs, err := river.NewClient(riverpgxv5.New(db.Pool), &river.Config{Logger: log})
	if err != nil {
		db.Close()
		return nil, err
	}
	var fixer *mention.Parser
	if cfg.API.FixerSlug != "" {
		if fixer, err = mention.New(cfg.API.FixerSlug); err != nil {
			db.Close()
			return nil, fmt.Errorf("QUAVON_GITHUB_FIXER_APP_SLUG: %w", err)
		}
	}
	reg := metrics.NewRegistry()
	recorder := metrics.NewAPI(reg, []string{string(github.AppReview), string(github.AppFixer)}, github.WebhookEvents())
	var ms *metrics.Server
	if cfg.MetricsListen != "" {
		if ms, err = metrics.Listen(cfg.MetricsListen, reg); err != nil {
			db.Close()
			return nil, err
		}
		log.Info("quavon-api metrics listening", slog.String("addr", ms.Addr()))
	}
	ln, err := net.Listen("tcp", cfg.API.Listen)
	if err != nil {
		if ms != nil {
			ms.Close()
		}
		db.Close()
		return nil, err
	}
	handler, err := routes((&httpapi.Server{DB: db, Log: log, WebhookSecrets: secrets, Jobs: jobs, FixerCommands: fixer, Metrics: recorder}).Handler(), cfg, db, jobs, log)
	if err != nil {
		ln.Close()
		if ms != nil {
			ms.Close()
		}
		db.Close()
		return nil, err
	}
	s := &Service{db: db, ln: ln, log: log, metrics: ms, srv: &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second, // webhook bodies reach 25 MB
		WriteTimeout:      30 * time.Second,
		MaxHeaderBytes:    32 << 10,
	}}
	log.Info("quavon-api listening", slog.String("addr", ln.Addr().String()))
	return s, nil
}

// Addr is the listening address.
func (s *Service) Addr() string { return s.ln.Addr().String() }

// MetricsAddr is the metrics listener's address ("" when off).
func (s *Service) MetricsAddr() string {
	if s.metrics == nil {
		return ""
	}
	return s.metrics.Addr()
}

// Run serves until ctx ends, then shuts down gracefully.
func (s *Service) Run(ctx context.Context) error {
	if s.metrics != nil {
		defer s.metrics.Start(s.log, "quavon-api")()
	}
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

// Close releases the database pool.
func (s *Service) Close() { s.db.Close() }

// routes puts the JSON API under /api/, /webhooks/ and /healthz and the
// dashboard (when configured) everywhere else.
func routes(api http.Handler, cfg config.APIConfig, db *postgres.DB, jobs web.Jobs, log *slog.Logger) (http.Handler, error) {
	if cfg.Web.PublicURL == "" {
		return api, nil
	}
	secret, err := secretfile.Read("QUAVON_GITHUB_REVIEW_CLIENT_SECRET_FILE", cfg.Web.ClientSecretFile, 1)
	if err != nil {
		return nil, err
	}
	cred, err := secretfile.Read("QUAVON_BROKER_CREDENTIAL_FILE", cfg.Broker.CredentialFile, 1)
	if err != nil {
		return nil, err
	}
	broker, err := github.NewBrokerClient(cfg.Broker.Addr, cred)
	if err != nil {
		return nil, err
	}
	conn, err := github.NewConn(github.ConnConfig{APIURL: cfg.GitHub.APIURL, GraphQLURL: cfg.GitHub.GraphQLURL, Tokens: broker, Logger: log})
	if err != nil {
		return nil, err
	}
	admins := make([]web.Admin, len(cfg.Web.Admins))
	for i, a := range cfg.Web.Admins {
		admins[i] = web.Admin{Host: a.Host, ID: a.ID, Login: a.Login}
	}
	dash, err := web.New(web.Config{GitHubURL: cfg.Web.GitHubURL, GitHubAPIURL: cfg.GitHub.APIURL, ClientID: cfg.Web.ClientID,
		ClientSecret: string(secret), PublicURL: cfg.Web.PublicURL, InsecureCookies: cfg.Web.InsecureCookies,
		SessionIdle: cfg.Web.SessionIdle, SessionAbsolute: cfg.Web.SessionAbsolute, Admins: admins}, db, web.GitHubPermissions{Conn: conn}, jobs, log)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", api)
	mux.Handle("/webhooks/", api)
	mux.Handle("/healthz", api)
	mux.Handle("/", dash.Handler())
	return mux, nil
}
