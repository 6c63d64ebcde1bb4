package api

import (
	"github.com/quavon/quavon/internal/intake"

	"errors"
	"io"
	"net/http"
	"regexp"
	"time"

	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/metrics"
)

// Webhook intake: POST /webhooks/github/{app}, app = review or fixer, each
// with its own secret. In order:
//  1. the body is read up to github.MaxWebhookPayload (more: 413);
//  2. X-Hub-Signature-256 is verified in constant time before anything
//     else looks at the body (401 otherwise; nothing is stored);
//  3. events and actions Quavon does not process are acknowledged with 202
//     and not stored; so are events of installations it does not know, of
//     repositories that installation does not cover, and repository events
//     no worker acts on yet (intake.Routed);
//  4. the event is routed to its tenant, and its delivery id is stored in
//     the same transaction that applies it: an installation event changes
//     installations and repositories, a repository event is stored with
//     its River job (intake.Intake): a redelivery is acknowledged (200,
//     "duplicate") and not applied twice; a failure rolls everything back
//     (500), so GitHub's redelivery can retry.

var deliveryIDRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,100}$`)

type webhookResult struct {
	Status string `json:"status"` // processed, duplicate, ignored
}

func (s *Server) webhook(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	kind := github.AppKind(r.PathValue("app"))
	event, outcome := "", metrics.WebhookError
	if s.Metrics != nil {
		defer func() { s.Metrics.ObserveWebhook(string(kind), event, outcome, time.Since(start)) }()
	}
	secret, ok := s.WebhookSecrets[kind]
	if !ok || len(secret) == 0 {
		outcome = metrics.WebhookNotFound
		s.fail(w, r, errNotFound)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, github.MaxWebhookPayload+1))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if len(body) > github.MaxWebhookPayload {
		outcome = metrics.WebhookTooLarge
		s.fail(w, r, errTooLarge)
		return
	}
	if !github.VerifyWebhookSignature(secret, body, r.Header.Get("X-Hub-Signature-256")) {
		outcome = metrics.WebhookBadSignature
		s.fail(w, r, errBadSignature)
		return
	}
	event = r.Header.Get("X-GitHub-Event")
	delivery := r.Header.Get("X-GitHub-Delivery")
	if event == "" || !deliveryIDRE.MatchString(delivery) {
		outcome = metrics.WebhookBadRequest
		s.fail(w, r, errBadRequest)
		return
	}
	parsed, err := github.ParseWebhook(event, body)
	switch {
	case errors.Is(err, github.ErrUnsupportedEvent):
		outcome = metrics.WebhookIgnored
		writeJSON(w, http.StatusAccepted, webhookResult{Status: "ignored"})
		return
	case err != nil:
		outcome = metrics.WebhookBadRequest
		s.fail(w, r, errBadRequest)
		return
	}
	status, err := (&intake.Intake{DB: s.DB, Jobs: s.Jobs, FixerCommands: s.FixerCommands}).Apply(r.Context(), kind, event, delivery, parsed, s.now())
	switch {
	case errors.Is(err, intake.ErrUnroutable), errors.Is(err, intake.ErrUnknownRepository), errors.Is(err, intake.ErrNotHandled):
		outcome = metrics.WebhookIgnored
		writeJSON(w, http.StatusAccepted, webhookResult{Status: "ignored"})
	case errors.Is(err, intake.ErrMalformed):
		outcome = metrics.WebhookBadRequest
		s.fail(w, r, errBadRequest)
	case err != nil:
		s.fail(w, r, err)
	default:
		outcome = metrics.WebhookProcessed
		if status == "duplicate" {
			outcome = metrics.WebhookDuplicate
		}
		writeJSON(w, http.StatusOK, webhookResult{Status: status})
	}
}
