package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/postgres"
)

// Webhook intake: POST /webhooks/github/{app}, app = review or fixer, each
// with its own secret. In order:
//  1. the body is read up to github.MaxWebhookPayload (more: 413);
//  2. X-Hub-Signature-256 is verified in constant time before anything
//     else looks at the body (401 otherwise; nothing is stored);
//  3. events and actions Quavon does not process are acknowledged with 202
//     and not stored; so are events of installations it does not know;
//  4. the event is routed to its tenant, and its delivery id is stored in
//     the same transaction that applies it: a redelivery is acknowledged
//     (200, "duplicate") and not applied twice; a failure rolls both back,
//     so GitHub's redelivery can retry.

var deliveryIDRE = regexp.MustCompile(`^[A-Za-z0-9-]{1,100}$`)

type webhookResult struct {
	Status string `json:"status"` // processed, duplicate, ignored
}

func (s *Server) webhook(w http.ResponseWriter, r *http.Request) {
	kind := github.AppKind(r.PathValue("app"))
	secret, ok := s.WebhookSecrets[kind]
	if !ok || len(secret) == 0 {
		s.fail(w, r, errNotFound)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, github.MaxWebhookPayload+1))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if len(body) > github.MaxWebhookPayload {
		s.fail(w, r, errTooLarge)
		return
	}
	if !github.VerifyWebhookSignature(secret, body, r.Header.Get("X-Hub-Signature-256")) {
		s.fail(w, r, errBadSignature)
		return
	}
	event, delivery := r.Header.Get("X-GitHub-Event"), r.Header.Get("X-GitHub-Delivery")
	if event == "" || !deliveryIDRE.MatchString(delivery) {
		s.fail(w, r, errBadRequest)
		return
	}
	parsed, err := github.ParseWebhook(event, body)
	switch {
	case errors.Is(err, github.ErrUnsupportedEvent):
		writeJSON(w, http.StatusAccepted, webhookResult{Status: "ignored"})
		return
	case err != nil:
		s.fail(w, r, errBadRequest)
		return
	}
	status, err := s.applyWebhook(r.Context(), kind, event, delivery, parsed)
	switch {
	case errors.Is(err, errUnroutable):
		writeJSON(w, http.StatusAccepted, webhookResult{Status: "ignored"})
	case err != nil:
		s.fail(w, r, err)
	default:
		writeJSON(w, http.StatusOK, webhookResult{Status: status})
	}
}

// applyWebhook routes, records the delivery once and applies the event.
func (s *Server) applyWebhook(ctx context.Context, kind github.AppKind, event, delivery string, parsed any) (string, error) {
	var installationID int64
	var newInstallation *Installation
	switch e := parsed.(type) {
	case *github.InstallationEvent:
		installationID = e.InstallationID
		if e.Action == "created" {
			newInstallation = &Installation{ID: e.InstallationID, Account: accountOf(e.Account), Permissions: e.Permissions,
				Selection: e.RepositorySelection}
		}
	case *github.InstallationRepositoriesEvent:
		installationID = e.InstallationID
	case *github.RepositoryEvent:
		installationID = e.InstallationID
	default:
		return "", errors.New("webhook: unexpected parsed event")
	}
	if installationID <= 0 {
		return "", errUnroutable
	}
	var tenant postgres.TenantID
	var err error
	if newInstallation != nil {
		tenant, err = routeNewInstallation(ctx, s.DB, kind, *newInstallation)
	} else {
		tenant, err = routeInstallation(ctx, s.DB, kind, installationID)
	}
	if err != nil {
		return "", err
	}
	status := "processed"
	err = s.DB.InTenant(ctx, tenant, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (tenant_id, delivery_id, event, processed_at)
			VALUES (quavon_current_tenant(), $1, $2, now()) ON CONFLICT (delivery_id) DO NOTHING`, delivery, event)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			status = "duplicate"
			return nil
		}
		return apply(ctx, tx, kind, parsed, s.now())
	})
	return status, err
}

func accountOf(a github.Account) Account { return Account{ID: a.ID, Login: a.Login, Type: a.Type} }

func reposOf(refs []github.RepositoryRef) ([]Repo, error) {
	out := make([]Repo, 0, len(refs))
	for _, r := range refs {
		owner, name, ok := splitFullName(r.FullName)
		if !ok {
			return nil, errBadRequest
		}
		out = append(out, Repo{ID: r.ID, Owner: owner, Name: name, Private: r.Private})
	}
	return out, nil
}

func repoIDs(refs []github.RepositoryRef) []int64 {
	ids := make([]int64, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
	return ids
}

// apply changes the installations and repositories tables as the event
// says.
func apply(ctx context.Context, tx pgx.Tx, kind github.AppKind, parsed any, now time.Time) error {
	switch e := parsed.(type) {
	case *github.InstallationEvent:
		in := Installation{ID: e.InstallationID, Account: accountOf(e.Account), Permissions: e.Permissions, Selection: e.RepositorySelection}
		switch e.Action {
		case "created":
			if err := upsertInstallation(ctx, tx, kind, in); err != nil {
				return err
			}
			repos, err := reposOf(e.Repositories)
			if err != nil {
				return err
			}
			return addRepositories(ctx, tx, kind, e.InstallationID, repos)
		case "new_permissions_accepted":
			return upsertInstallation(ctx, tx, kind, in)
		case "deleted":
			return deleteInstallation(ctx, tx, kind, e.InstallationID)
		case "suspend":
			return setSuspended(ctx, tx, kind, e.InstallationID, &now)
		case "unsuspend":
			return setSuspended(ctx, tx, kind, e.InstallationID, nil)
		}
	case *github.InstallationRepositoriesEvent:
		added, err := reposOf(e.Added)
		if err != nil {
			return err
		}
		if err := addRepositories(ctx, tx, kind, e.InstallationID, added); err != nil {
			return err
		}
		return removeRepositories(ctx, tx, kind, e.InstallationID, repoIDs(e.Removed))
	case *github.RepositoryEvent:
		owner, name, ok := splitFullName(e.Repository.FullName)
		if !ok {
			return errBadRequest
		}
		switch e.Action {
		case "deleted":
			return deleteRepository(ctx, tx, e.Repository.ID)
		default: // renamed, transferred, privatized, publicized, archived, unarchived
			return updateRepository(ctx, tx, Repo{ID: e.Repository.ID, Owner: owner, Name: name, Private: e.Repository.Private,
				Visibility: e.Visibility, Archived: e.Archived})
		}
	}
	return nil
}
