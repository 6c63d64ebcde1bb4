// Package intake applies verified webhook events to the control plane's
// tables: installations and the repositories they cover, routed to their
// tenant, each delivery recorded once in the transaction that applies it;
// and the repository events the worker acts on, each stored with its River
// job in that same transaction (events.go). quavon-api's webhook handler
// verifies and parses; everything it writes to the database is here. The
// worker's handlers of the stored events are internal/intake/handle.
package intake

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/mention"
	"github.com/quavon/quavon/internal/postgres"
)

// ErrMalformed: the event parsed but names something that cannot be
// applied (a repository without owner or name).
var ErrMalformed = errors.New("malformed event")

// ErrNotHandled: a repository event no worker acts on (no route):
// acknowledged, not stored.
var ErrNotHandled = errors.New("event not handled")

// recordDelivery stores the delivery id; false when it was seen before.
func recordDelivery(ctx context.Context, tx pgx.Tx, delivery, event string) (bool, error) {
	tag, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (tenant_id, delivery_id, event, processed_at)
		VALUES (quavon_current_tenant(), $1, $2, now()) ON CONFLICT (delivery_id) DO NOTHING`, delivery, event)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// Intake applies verified webhook events.
type Intake struct {
	DB *postgres.DB
	// Jobs inserts the jobs of repository events in the event's
	// transaction (the API's River client).
	Jobs Inserter
	// FixerCommands finds "@<fixer> fix" in issue comments the Fixer app
	// receives (its slug). Only comments holding that command are stored:
	// without it, the Fixer's issue_comment events are not handled.
	FixerCommands *mention.Parser
}

// FixCommand is the Fixer's command word.
const FixCommand = "fix"

// Apply routes a verified, parsed webhook event to its tenant, records the
// delivery once and applies the event in the same transaction: an
// installation event changes installations and repositories; a routed
// repository event is stored with its job. It returns "processed", or
// "duplicate" for a redelivery (nothing applied twice); ErrUnroutable for
// an installation Quavon does not know, ErrUnknownRepository for a
// repository that installation does not cover here, ErrNotHandled for a
// repository event without a route, ErrMalformed for an event whose
// content cannot be applied. A failure rolls everything back, so GitHub's
// redelivery can retry.
func (in *Intake) Apply(ctx context.Context, kind github.AppKind, event, delivery string, parsed any, now time.Time) (string, error) {
	var installationID int64
	var newInstallation *Installation
	repoEv, isRepoEvent := repoEventOf(parsed)
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
		if !isRepoEvent {
			return "", errors.New("webhook: unexpected parsed event")
		}
		if !Routed(kind, event, repoEv.data.Action) {
			return "", ErrNotHandled
		}
		if c, ok := parsed.(*github.IssueCommentEvent); ok && kind == github.AppFixer {
			if !in.fixCommand(kind, c) {
				return "", ErrNotHandled
			}
			repoEv.data.Command = FixCommand
		}
		if in.Jobs == nil {
			return "", errors.New("webhook: no job inserter for repository events")
		}
		installationID = repoEv.installationID
	}
	if installationID <= 0 {
		return "", ErrUnroutable
	}
	var tenant postgres.TenantID
	var err error
	if newInstallation != nil {
		tenant, err = routeNewInstallation(ctx, in.DB, kind, *newInstallation)
	} else {
		tenant, err = routeInstallation(ctx, in.DB, kind, installationID)
	}
	if err != nil {
		return "", err
	}
	status := "processed"
	err = in.DB.InTenant(ctx, tenant, func(tx pgx.Tx) error {
		fresh, err := recordDelivery(ctx, tx, delivery, event)
		if err != nil || !fresh {
			status = "duplicate"
			return err
		}
		if isRepoEvent {
			return storeRepoEvent(ctx, tx, in.Jobs, string(tenant), kind, event, delivery, repoEv)
		}
		return apply(ctx, tx, kind, parsed, now)
	})
	return status, err
}

// fixCommand reports whether a comment the app received is "@<fixer> fix"
// for the Fixer app. A comment the parser refuses (too large, too deeply
// nested) is no command.
func (in *Intake) fixCommand(kind github.AppKind, c *github.IssueCommentEvent) bool {
	if kind != github.AppFixer || in.FixerCommands == nil {
		return false
	}
	ok, err := in.FixerCommands.Has(c.Comment.Body, FixCommand)
	return err == nil && ok
}

func accountOf(a github.Account) Account { return Account{ID: a.ID, Login: a.Login, Type: a.Type} }

func reposOf(refs []github.RepositoryRef) ([]Repo, error) {
	out := make([]Repo, 0, len(refs))
	for _, r := range refs {
		owner, name, ok := splitFullName(r.FullName)
		if !ok {
			return nil, ErrMalformed
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
			return ErrMalformed
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
