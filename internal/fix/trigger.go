package fix

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/github"
)

// Reasons of ineligible triggers (FX1, FX10).
const (
	ReasonCapIssue       = "cap_issue"
	ReasonCapRepository  = "cap_repository"
	ReasonCapTenant      = "cap_tenant"
	ReasonActorNotUser   = "actor_not_user"
	ReasonActorNoWrite   = "actor_permission"
	ReasonNotAnIssue     = "not_an_issue"
	ReasonIssueNotOpen   = "issue_not_open"
	ReasonIssueNotFound  = "issue_not_found"
	ReasonTriggerInvalid = "trigger_invalid"
)

// TriggerEvent is a label or a "@<fixer> fix" comment, as stored by the
// intake: who did it, on what, never the issue's or the comment's text.
type TriggerEvent struct {
	RepositoryID string
	Number       int
	Trigger      Trigger // TriggerLabel or TriggerComment
	Actor        Actor
	// ActorType is GitHub's sender type: "User", "Bot" or "Organization".
	ActorType string
	Label     string // TriggerLabel: the label added
	CommentID int64  // TriggerComment
	EventID   string
	// OnPullRequest: the event says the issue is a pull request.
	OnPullRequest bool
}

// TriggerPolicy is what eligibility reads from the repository's effective
// policy and the instance's settings.
type TriggerPolicy struct {
	// Mode is the effective fix mode; "" (or anything but approval and
	// auto) means off: no run at all.
	Mode          Mode
	TriggerLabels []string
	Caps          CapLimits
}

// Live is what eligibility asks GitHub when the job runs, never earlier
// (CH5): the actor's collaborator permission ("admin", "write", "read",
// "none"; github.ErrNotCollaborator counts as none) and the issue's state.
type Live interface {
	CollaboratorPermission(ctx context.Context, login string) (string, error)
	Issue(ctx context.Context, number int) (github.Issue, error)
}

// Admission is the outcome of one trigger.
type Admission struct {
	// Run is the recorded run: queued when admitted, ineligible (with its
	// reason) otherwise; nil when the event was no trigger (Ignored).
	Run *Run
	// Ignored says why no run was made (fix off, a label that is not a
	// trigger label).
	Ignored string
}

// Admitted reports whether the run may go on to the agent.
func (a Admission) Admitted() bool { return a.Run != nil && a.Run.Status == StatusQueued }

// Admit decides a trigger (spec FX1, FX10, CH5) in the caller's tenant
// transaction, in this order:
//
//  1. fix off (or an invalid policy, which resolves to off), or a label
//     that is not one of triggerLabels: no run, nothing counted;
//  2. the run is recorded queued, and counted against the daily caps per
//     issue, repository and tenant (AdmitRun): every trigger counts, the
//     ineligible ones too; over a cap it ends ineligible (cap_*);
//  3. an actor that is not a user (a bot, the Fixer app itself, an
//     organization): actor_not_user; an issue that is a pull request:
//     not_an_issue;
//  4. live: the actor's collaborator permission must be admin or write
//     (github.CanTrigger; issue authors get no special rights):
//     actor_permission; the issue must exist, be open and not be a pull
//     request: issue_not_found, issue_not_open, not_an_issue.
//
// An admitted run stays queued for the agent. At most one run of an issue
// runs at a time: Start refuses a second one (the unique index on running
// runs, never a check-then-insert) and the run ends already_running. No model is called here.
// Errors from GitHub other than "not a collaborator" and "not found" are
// returned (the job is retried); the transaction then keeps nothing.
func Admit(ctx context.Context, tx pgx.Tx, ev TriggerEvent, pol TriggerPolicy, live Live, now time.Time) (Admission, error) {
	if pol.Mode != ModeApproval && pol.Mode != ModeAuto {
		return Admission{Ignored: "fix is off for the repository"}, nil
	}
	switch ev.Trigger {
	case TriggerLabel:
		if !isTriggerLabel(ev.Label, pol.TriggerLabels) {
			return Admission{Ignored: "not a trigger label"}, nil
		}
	case TriggerComment:
	default:
		return Admission{}, fmt.Errorf("fix.Admit: %w: trigger %q", ErrInvalid, ev.Trigger)
	}
	run, err := Create(ctx, tx, NewRun{RepositoryID: ev.RepositoryID, Subject: SubjectIssue, Number: ev.Number,
		Delivery: DeliveryPR, Mode: pol.Mode, Trigger: ev.Trigger, Actor: ev.Actor, Label: ev.Label,
		CommentID: ev.CommentID, EventID: ev.EventID})
	if err != nil {
		return Admission{}, fmt.Errorf("fix.Admit: %w", err)
	}
	refuse := func(reason, detail string) (Admission, error) {
		r, err := Transition(ctx, tx, run.ID, StatusIneligible, Why{Reason: reason, Detail: detail})
		if err != nil {
			return Admission{}, fmt.Errorf("fix.Admit: %w", err)
		}
		return Admission{Run: r}, nil
	}
	d, err := AdmitRun(ctx, tx, ev.RepositoryID, ev.Number, pol.Caps, now)
	if err != nil {
		return Admission{}, fmt.Errorf("fix.Admit: %w", err)
	}
	if !d.Admitted {
		return refuse("cap_"+d.Exceeded, fmt.Sprintf("today: %d on the issue, %d on the repository, %d on the tenant",
			d.Issue, d.Repository, d.Tenant))
	}
	if ev.ActorType != "User" {
		return refuse(ReasonActorNotUser, "triggered by a "+clip(ev.ActorType, 20))
	}
	if ev.OnPullRequest {
		return refuse(ReasonNotAnIssue, "a pull request")
	}
	perm, err := live.CollaboratorPermission(ctx, ev.Actor.Login)
	switch {
	case errors.Is(err, github.ErrNotCollaborator):
		perm = github.PermissionNone
	case err != nil:
		return Admission{}, fmt.Errorf("fix.Admit: %w", err)
	}
	if !github.CanTrigger(perm) {
		return refuse(ReasonActorNoWrite, fmt.Sprintf("%s has %q permission; admin or write is needed", ev.Actor.Login, clip(perm, 20)))
	}
	is, err := live.Issue(ctx, ev.Number)
	switch {
	case errors.Is(err, github.ErrNotFound):
		return refuse(ReasonIssueNotFound, "")
	case err != nil:
		return Admission{}, fmt.Errorf("fix.Admit: %w", err)
	case is.IsPullRequest:
		return refuse(ReasonNotAnIssue, "a pull request")
	case is.State != "open":
		return refuse(ReasonIssueNotOpen, "")
	}
	return Admission{Run: run}, nil
}

// isTriggerLabel compares as GitHub does: label names are unique without
// regard to case.
func isTriggerLabel(label string, labels []string) bool {
	for _, l := range labels {
		if label != "" && strings.EqualFold(l, label) {
			return true
		}
	}
	return false
}
