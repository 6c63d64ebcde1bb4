// Package tokenbroker is the token broker (quavon-token-broker): the only
// process that holds the GitHub Apps' private keys. It mints installation
// tokens for exactly one repository and one named permission set
// (github.TokenSet) per request, and hands each caller only the sets its
// line in the callers file grants, within what its role allows (RoleSets):
// the API and the worker the read set, the publisher the write sets.
//
// Protocol: POST /v1/tokens with "Authorization: Bearer <credential>" and a
// github.TokenRequest as JSON; the answer is a github.BrokerToken, or an
// error body {"code", "message"} whose code the client maps back to
// github's sentinel errors. GET /v1/apps (any caller) answers each app's
// installations as GitHub reports them, permissions and events, for quavon
// doctor ([]github.BrokerApp; no token). Nothing else is served.
//
// Callers authenticate with a random credential from their own file; the
// broker knows only its SHA-256 (the callers file), compared in constant
// time. Every grant is logged (caller role, installation, repository, set)
// and every refusal with its reason; a token value never is.
//
// The broker has no database connection, no model key and no sandbox key,
// and listens on a Unix socket or a loopback or private address only
// (Listen). Token caching and the check of GitHub's answer against the
// request are appauth's.
package tokenbroker

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/quavon/quavon/internal/github"
)

// MaxRequestBytes bounds a token request body.
const MaxRequestBytes = 4 << 10

// Minter mints tokens for one app: appauth.App in production. This package
// does not import appauth, so linking it (the CLI does, for credentials)
// gives no key code.
type Minter interface {
	Token(ctx context.Context, installationID int64, repo string, perms github.Permissions) (*github.InstallationToken, error)
	Forget(installationID int64, repo string, perms github.Permissions, digest string)
	// Installations lists the app's installations (GET /app/installations).
	Installations(ctx context.Context) ([]github.AppInstallation, error)
}

// Config configures New.
type Config struct {
	// Apps are the apps this broker holds keys of. A request for a set of
	// an app that is missing is refused (app_not_configured).
	Apps map[github.AppKind]Minter
	// Callers is the parsed callers file (ParseCallers).
	Callers []Caller
	Log     *slog.Logger
}

// Server is the broker's HTTP handler.
type Server struct {
	apps    map[github.AppKind]Minter
	callers []Caller
	log     *slog.Logger
}

// New validates cfg: at least one app, at least one caller, a logger.
func New(cfg Config) (*Server, error) {
	if len(cfg.Apps) == 0 || len(cfg.Callers) == 0 || cfg.Log == nil {
		return nil, errors.New("tokenbroker.New: apps, callers and a logger are required")
	}
	for k, m := range cfg.Apps {
		if !k.Valid() || m == nil {
			return nil, fmt.Errorf("tokenbroker.New: bad app %q", k)
		}
	}
	return &Server{apps: cfg.Apps, callers: cfg.Callers, log: cfg.Log}, nil
}

// Handler serves POST /v1/tokens and GET /v1/apps and refuses everything
// else.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/tokens", s.token)
	mux.HandleFunc("GET /v1/apps", s.listApps)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		refuse(w, http.StatusNotFound, github.BrokerBadRequest, "not found")
	})
	return mux
}

// caller finds the caller whose credential digest matches, comparing with
// every caller in constant time.
func (s *Server) caller(r *http.Request) (Caller, bool) {
	cred, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || cred == "" {
		return Caller{}, false
	}
	sum := sha256.Sum256([]byte(cred))
	var found Caller
	hit := 0
	for _, c := range s.callers {
		if subtle.ConstantTimeCompare(sum[:], c.Digest[:]) == 1 {
			found, hit = c, 1
		}
	}
	return found, hit == 1
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c, ok := s.caller(r)
	if !ok {
		s.log.LogAttrs(ctx, slog.LevelWarn, "token broker: refused", slog.String("reason", "unknown credential"))
		refuse(w, http.StatusUnauthorized, github.BrokerUnauthorized, "unknown credential")
		return
	}
	var req github.TokenRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, MaxRequestBytes+1))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || dec.More() {
		s.refused(ctx, c, req, "malformed request")
		refuse(w, http.StatusBadRequest, github.BrokerBadRequest, "malformed request")
		return
	}
	if err := req.Validate(); err != nil {
		s.refused(ctx, c, req, "invalid request")
		refuse(w, http.StatusBadRequest, github.BrokerBadRequest, err.Error())
		return
	}
	if !c.Allows(req.Set) {
		s.refused(ctx, c, req, "set not allowed for this caller")
		refuse(w, http.StatusForbidden, github.BrokerSetNotAllowed, fmt.Sprintf("the %s caller may not have the %s set", c.Role, req.Set))
		return
	}
	app := s.apps[req.Set.App()]
	if app == nil {
		s.refused(ctx, c, req, "app not configured")
		refuse(w, http.StatusServiceUnavailable, github.BrokerAppNotConfigured, fmt.Sprintf("the broker holds no key of the %s app", req.Set.App()))
		return
	}
	perms := req.Set.Permissions()
	if req.Stale != "" {
		app.Forget(req.InstallationID, req.Repo, perms, req.Stale)
	}
	tok, err := app.Token(ctx, req.InstallationID, req.Repo, perms)
	if err != nil {
		code, status := github.BrokerCodeOf(err)
		s.log.LogAttrs(ctx, slog.LevelWarn, "token broker: mint failed", slog.String("caller", string(c.Role)),
			slog.Int64("installation", req.InstallationID), slog.String("repo", req.Repo), slog.String("set", string(req.Set)),
			slog.String("code", code))
		refuse(w, status, code, err.Error())
		return
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "token broker: granted", slog.String("caller", string(c.Role)),
		slog.Int64("installation", req.InstallationID), slog.String("repo", req.Repo), slog.String("set", string(req.Set)),
		slog.Bool("refreshed", req.Stale != ""), slog.Time("expires_at", tok.ExpiresAt))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(github.BrokerToken{
		Token: tok.Secret(), ExpiresAt: tok.ExpiresAt, InstallationID: tok.InstallationID, Repo: tok.Repo,
		Set: req.Set, Permissions: tok.Permissions,
	})
}

// listApps answers each app's installations, in a fixed order (review,
// fixer); an app GitHub refused to list carries the error instead.
func (s *Server) listApps(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c, ok := s.caller(r)
	if !ok {
		s.log.LogAttrs(ctx, slog.LevelWarn, "token broker: refused", slog.String("reason", "unknown credential"))
		refuse(w, http.StatusUnauthorized, github.BrokerUnauthorized, "unknown credential")
		return
	}
	out := []github.BrokerApp{}
	for _, kind := range []github.AppKind{github.AppReview, github.AppFixer} {
		m := s.apps[kind]
		if m == nil {
			continue
		}
		a := github.BrokerApp{Kind: kind, Installations: []github.AppInstallation{}}
		ins, err := m.Installations(ctx)
		if err != nil {
			a.Error = clip(err.Error())
		} else {
			a.Installations = ins
		}
		out = append(out, a)
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "token broker: apps listed", slog.String("caller", string(c.Role)))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(out)
}

func (s *Server) refused(ctx context.Context, c Caller, req github.TokenRequest, reason string) {
	s.log.LogAttrs(ctx, slog.LevelWarn, "token broker: refused", slog.String("caller", string(c.Role)),
		slog.Int64("installation", req.InstallationID), slog.String("repo", clip(req.Repo)), slog.String("set", clip(string(req.Set))),
		slog.String("reason", reason))
}

func clip(s string) string {
	if len(s) > 140 {
		return s[:140]
	}
	return s
}

func refuse(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(github.BrokerError{Code: code, Message: clip(msg)})
}
