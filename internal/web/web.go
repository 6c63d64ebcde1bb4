package web

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/postgres"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Defaults.
const (
	DefaultSessionIdle     = 12 * time.Hour
	DefaultSessionAbsolute = 7 * 24 * time.Hour
	DefaultHost            = "github.com"
	loginTTL               = 10 * time.Minute
)

// Config configures the dashboard.
type Config struct {
	// GitHubURL is GitHub's web root (the OAuth endpoints live at
	// /login/oauth/…): https://github.com, or a GitHub Enterprise host.
	GitHubURL string
	// GitHubAPIURL is the REST root GET /user is read from.
	GitHubAPIURL string
	// Host is the code host's name in user_identities ("github.com").
	Host string
	// ClientID and ClientSecret are the review app's OAuth credentials.
	ClientID, ClientSecret string
	// PublicURL is where the dashboard is reached (scheme and host); the
	// OAuth callback is PublicURL + /auth/callback.
	PublicURL string
	// InsecureCookies drops Secure and the __Host- prefix: plain-http
	// development only.
	InsecureCookies bool
	// SessionIdle and SessionAbsolute end a session.
	SessionIdle, SessionAbsolute time.Duration
	// Admins are the instance admins: they see the grants page.
	Admins []Admin
}

// Jobs inserts a River job in the caller's transaction (quavon-api's
// insert-only *river.Client[pgx.Tx]): an approval queues its publication
// in the transaction that records it.
type Jobs interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
}

// Permissions answers a code-host identity's live permission on a
// repository (admin, maintain, write, triage, read or none), through the
// review app's read-only installation token.
type Permissions interface {
	Permission(ctx context.Context, installationID int64, repo, login string) (string, error)
	// Collaborator is Permission with the account GitHub answered for
	// (login and id), so the identity can be matched, not only the login.
	Collaborator(ctx context.Context, installationID int64, repo, login string) (github.Collaborator, error)
}

// Server is the dashboard.
type Server struct {
	cfg    Config
	db     *postgres.DB
	perms  Permissions
	jobs   Jobs
	log    *slog.Logger
	now    func() time.Time
	pages  map[string]*template.Template
	static http.Handler
	http   *http.Client
	diffs  *diffCache
}

// Option adjusts a Server (tests).
type Option func(*Server)

// WithClock sets the clock.
func WithClock(now func() time.Time) Option { return func(s *Server) { s.now = now } }

// WithoutDiffCache renders every diff afresh (the benchmark's cold case).
func WithoutDiffCache() Option { return func(s *Server) { s.diffs = nil } }

// WithHTTPClient sets the client for GitHub's OAuth and user endpoints.
func WithHTTPClient(c *http.Client) Option { return func(s *Server) { s.http = c } }

// New validates cfg and builds the dashboard.
func New(cfg Config, db *postgres.DB, perms Permissions, jobs Jobs, log *slog.Logger, opts ...Option) (*Server, error) {
	if cfg.Host == "" {
		cfg.Host = DefaultHost
	}
	if cfg.SessionIdle <= 0 {
		cfg.SessionIdle = DefaultSessionIdle
	}
	if cfg.SessionAbsolute <= 0 {
		cfg.SessionAbsolute = DefaultSessionAbsolute
	}
	switch {
	case cfg.ClientID == "" || cfg.ClientSecret == "":
		return nil, errors.New("web.New: the review app's OAuth client id and secret are required")
	case cfg.SessionIdle > cfg.SessionAbsolute:
		return nil, errors.New("web.New: the idle expiry is longer than the absolute one")
	case db == nil || perms == nil || jobs == nil:
		return nil, errors.New("web.New: a database, a permission source and a job inserter are required")
	}
	for name, v := range map[string]string{"GitHub URL": cfg.GitHubURL, "GitHub API URL": cfg.GitHubAPIURL, "public URL": cfg.PublicURL} {
		u, err := url.Parse(v)
		if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
			return nil, fmt.Errorf("web.New: %s %q: want an absolute http(s) URL", name, v)
		}
	}
	if !cfg.InsecureCookies && !strings.HasPrefix(cfg.PublicURL, "https://") {
		return nil, errors.New("web.New: the public URL must be https (Secure cookies); InsecureCookies is for plain-http development")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.InsecureCookies {
		log.Warn("dashboard cookies without Secure and the __Host- prefix: development only")
	}
	s := &Server{cfg: cfg, db: db, perms: perms, jobs: jobs, log: log, now: time.Now, http: &http.Client{Timeout: 20 * time.Second},
		diffs: newDiffCache(maxCachedDiffs)}
	for _, o := range opts {
		o(s)
	}
	var err error
	if s.pages, err = parsePages(); err != nil {
		return nil, err
	}
	sub, _ := fs.Sub(staticFS, "static")
	s.static = http.StripPrefix("/static/", http.FileServerFS(sub))
	return s, nil
}

// pageNames are the templates rendered inside layout.html.
var pageNames = []string{"signin", "error", "repos", "policy", "reviews", "review", "fixes", "fix", "audit", "grants", "tenants"}

func parsePages() (map[string]*template.Template, error) {
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("web: layout: %w", err)
	}
	out := map[string]*template.Template{}
	for _, n := range pageNames {
		t, err := template.Must(base.Clone()).ParseFS(templateFS, "templates/"+n+".html")
		if err != nil {
			return nil, fmt.Errorf("web: %s: %w", n, err)
		}
		out[n] = t
	}
	return out, nil
}

// ContentSecurityPolicy is the one Content-Security-Policy of every answer.
const ContentSecurityPolicy = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Handler routes the dashboard. Every answer carries the security headers;
// every state-changing request passes cross-origin protection and the
// form token (checked in the handlers, with the session).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /static/highlight.css", s.serveHighlightCSS)
	mux.Handle("GET /static/", s.static)
	mux.HandleFunc("GET /auth/login", s.login)
	mux.HandleFunc("GET /auth/callback", s.callback)
	mux.Handle("POST /auth/logout", s.signedIn(s.logout))
	mux.Handle("GET /{$}", s.signedIn(s.home))
	mux.Handle("GET /repos", s.signedIn(s.reposPage))
	mux.Handle("GET /repos/{owner}/{name}/policy", s.signedIn(s.policyPage))
	mux.Handle("POST /repos/{owner}/{name}/policy", s.signedIn(s.policySave))
	mux.Handle("GET /repos/{owner}/{name}/reviews", s.signedIn(s.reviewsPage))
	mux.Handle("GET /repos/{owner}/{name}/fixes", s.signedIn(s.fixesPage))
	mux.Handle("GET /reviews/{id}", s.signedIn(s.reviewPage))
	mux.Handle("POST /reviews/{id}/findings/{finding}/feedback", s.signedIn(s.findingFeedback))
	mux.Handle("POST /reviews/{id}/fix", s.signedIn(s.reviewFixRequest))
	mux.Handle("GET /fixes/{id}", s.signedIn(s.fixPage))
	mux.Handle("POST /fixes/{id}/decision", s.signedIn(s.fixDecision))
	mux.Handle("POST /fixes/{id}/stacked", s.signedIn(s.fixStacked))
	mux.Handle("GET /audit", s.signedIn(s.auditPage))
	s.tenantRoutes(mux)
	s.adminRoutes(mux)
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.renderError(w, r, http.StatusForbidden, "This request came from another site and was refused (cross-origin protection).")
	}))
	h := cop.Handler(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", ContentSecurityPolicy)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Cross-Origin-Opener-Policy", "same-origin")
		if !strings.HasPrefix(r.URL.Path, "/static/") {
			hd.Set("Cache-Control", "no-store")
		}
		h.ServeHTTP(w, r)
	})
}

// pageData is what every page template gets.
type pageData struct {
	Title    string
	User     *Session
	FormTok  string
	Content  any
	Status   int
	Message  string
	Nav      string
	Redirect string
}

func (s *Server) render(w http.ResponseWriter, status int, page string, d pageData) {
	var buf bytes.Buffer
	if err := s.pages[page].ExecuteTemplate(&buf, "layout.html", d); err != nil {
		s.log.Error("web: render", slog.String("page", page), slog.String("error", err.Error()))
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func (s *Server) renderError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	sess, _ := r.Context().Value(sessionKey{}).(*Session)
	d := pageData{Title: http.StatusText(status), User: sess, Status: status, Message: msg}
	if sess != nil {
		d.FormTok = sess.formToken
	}
	s.render(w, status, "error", d)
}

// Domain outcomes of a handler, mapped to statuses in one place (fail).
var (
	errForbidden = errors.New("forbidden")
	errNotFound  = errors.New("not found")
	errBadForm   = errors.New("bad form")
	errConflict  = errors.New("conflict")
)

// userError carries a message meant for the person at the browser.
type userError struct {
	kind error
	msg  string
}

func (e *userError) Error() string { return e.msg }
func (e *userError) Unwrap() error { return e.kind }

func userErr(kind error, format string, args ...any) error {
	return &userError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ue *userError
	msg := ""
	if errors.As(err, &ue) {
		msg = ue.msg
	}
	switch {
	case errors.Is(err, errForbidden):
		s.renderError(w, r, http.StatusForbidden, cmpOr(msg, "You do not have the role this needs on this repository."))
	case errors.Is(err, errNotFound):
		s.renderError(w, r, http.StatusNotFound, cmpOr(msg, "There is no such page."))
	case errors.Is(err, errBadForm):
		s.renderError(w, r, http.StatusBadRequest, cmpOr(msg, "The form was not valid."))
	case errors.Is(err, errConflict):
		s.renderError(w, r, http.StatusConflict, msg)
	default:
		s.log.Error("web", slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("error", err.Error()))
		s.renderError(w, r, http.StatusInternalServerError, "Something went wrong on our side; it was logged.")
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
