// Package api is quavon-api's HTTP interface (JSON, /api/v1).
//
// Authentication: `Authorization: Bearer qvn_…` (a per-user API token,
// internal/auth). Every request runs in the token's tenant under row-level
// security. Errors are JSON {"error": {"code", "message", "details"}} with
// stable codes; domain errors map to HTTP statuses in one place (errorOf).
package api

import (
	"github.com/quavon/quavon/internal/intake"
	"github.com/quavon/quavon/internal/repos"

	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/mention"

	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/quavon/quavon/internal/auth"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/postgres"
)

// Server holds the API's dependencies.
type Server struct {
	DB  *postgres.DB
	Log *slog.Logger
	Now func() time.Time
	// WebhookSecrets are the GitHub Apps' webhook secrets; an app without
	// one has no webhook endpoint (404).
	WebhookSecrets map[github.AppKind][]byte
	// Jobs inserts the River jobs of repository events in their
	// transaction (an insert-only River client).
	Jobs intake.Inserter
	// FixerCommands finds "@<fixer> fix" in the Fixer's issue comments;
	// nil: those comments are not handled.
	FixerCommands *mention.Parser
	// Metrics, when not nil, records every webhook delivery.
	Metrics WebhookRecorder
}

// WebhookRecorder records a webhook delivery: the app, the X-GitHub-Event
// header as sent (the recorder keeps only names from its closed set), the
// outcome (internal/metrics' Webhook* names) and the time to the answer.
type WebhookRecorder interface {
	ObserveWebhook(app, event, outcome string, d time.Duration)
}

// MaxBodyBytes caps a request body.
const MaxBodyBytes = policy.MaxDocumentBytes

// Handler routes the API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.Handle("GET /api/v1/repos/{owner}/{repo}/policy", s.authed(s.getPolicy))
	mux.Handle("PUT /api/v1/repos/{owner}/{repo}/policy", s.authed(s.putPolicy))
	mux.HandleFunc("POST /webhooks/github/{app}", s.webhook)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, errNotFound)
	})
	return mux
}

// Domain errors of the API, mapped by errorOf.
var (
	errUnauthenticated      = errors.New("unauthenticated")
	errNotFound             = errors.New("not found")
	errPreconditionFailed   = errors.New("precondition failed")
	errPreconditionRequired = errors.New("precondition required")
	errTooLarge             = errors.New("too large")
	errMediaType            = errors.New("unsupported media type")
	errBadSignature         = errors.New("bad webhook signature")
	errBadRequest           = errors.New("bad request")
)

type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details any    `json:"details,omitempty"`
}

// errorOf is the one mapping from errors to statuses and stable codes.
func errorOf(err error) (int, errorBody) {
	var ve *policy.ValidationError
	switch {
	case errors.Is(err, errUnauthenticated), errors.Is(err, auth.ErrInvalidToken):
		return http.StatusUnauthorized, errorBody{Code: "unauthenticated", Message: "a valid API token is required (Authorization: Bearer qvn_…)"}
	case errors.Is(err, errBadSignature):
		return http.StatusUnauthorized, errorBody{Code: "bad_signature", Message: "X-Hub-Signature-256 does not match the body"}
	case errors.Is(err, errBadRequest):
		return http.StatusBadRequest, errorBody{Code: "bad_request", Message: "the request is malformed"}
	case errors.Is(err, repos.ErrForbidden):
		return http.StatusForbidden, errorBody{Code: "forbidden", Message: "this needs the repo:manage role on the repository"}
	case errors.Is(err, errNotFound), errors.Is(err, repos.ErrNotFound):
		return http.StatusNotFound, errorBody{Code: "not_found", Message: "no such resource"}
	case errors.As(err, &ve):
		return http.StatusUnprocessableEntity, errorBody{Code: "validation_failed", Message: "the policy is not valid", Details: ve.Errors}
	case errors.Is(err, errPreconditionFailed):
		return http.StatusPreconditionFailed, errorBody{Code: "precondition_failed", Message: "the policy changed since it was read: read it again (ETag) and retry"}
	case errors.Is(err, errPreconditionRequired):
		return http.StatusPreconditionRequired, errorBody{Code: "precondition_required", Message: "send If-Match with the ETag of the policy you read"}
	case errors.Is(err, errTooLarge):
		return http.StatusRequestEntityTooLarge, errorBody{Code: "too_large", Message: fmt.Sprintf("the body must be at most %d bytes", MaxBodyBytes)}
	case errors.Is(err, errMediaType):
		return http.StatusUnsupportedMediaType, errorBody{Code: "unsupported_media_type", Message: "send Content-Type: application/json"}
	}
	return http.StatusInternalServerError, errorBody{Code: "internal", Message: "internal error"}
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status, body := errorOf(err)
	if status == http.StatusInternalServerError && s.Log != nil {
		s.Log.Error("api", slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.String("error", err.Error()))
	}
	if status == http.StatusUnauthorized && !errors.Is(err, errBadSignature) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="quavon"`)
	}
	writeJSON(w, status, map[string]errorBody{"error": body})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	enc.Encode(v)
}

// authed resolves the bearer token before h runs.
func (s *Server) authed(h func(http.ResponseWriter, *http.Request, *auth.Principal) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || token == "" {
			s.fail(w, r, errUnauthenticated)
			return
		}
		p, err := auth.Verify(r.Context(), s.DB, token, s.now())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		if err := h(w, r, p); err != nil {
			s.fail(w, r, err)
		}
	})
}

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}
