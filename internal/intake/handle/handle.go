// Package handle is the worker's side of webhook intake: the River
// workers that apply the events internal/intake stored. It is apart from
// intake so that quavon-api, which stores events and inserts their jobs,
// links none of the run stores.
package handle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/quavon/quavon/internal/acceptance/check"
	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/intake"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/repos"
	"github.com/quavon/quavon/internal/review"
)

// Each handler applies its event in one
// tenant transaction that also completes the River job (JobCompleteTx):
// the event is applied exactly once, or not at all. A handler interrupted
// (shutdown, a lost connection) rolls back whole and its job fails with
// the reason, to be retried; an event already processed is not applied
// again.
//
// What they do is end work whose subject went away, in the order events
// arrive (the workers of review and fix runs, and the publisher, check the
// live state again before they act, which covers reordered deliveries):
//
//	pull_request synchronize  review runs of the old head (before) are
//	                          cancelled (superseded); review fixes to be
//	                          committed on it end with head_moved (FX16)
//	pull_request closed       the pull request's queued and running review
//	                          runs are cancelled; its review fixes end
//	issues closed,            the issue's unfinished fix runs end
//	transferred, deleted      (issue_closed, issue_transferred,
//	                          issue_deleted)
//	issues (either app)       the issues table of the acceptance check:
//	                          opened, edited, closed, reopened make the
//	                          stored text stale; transferred and deleted
//	                          clear it for good
//
// Runs they end take their unpublished outputs with them.

// storedEvent is a webhook_events row.
type storedEvent struct {
	ID           string
	RepositoryID string
	Event        string
	Action       string
	Number       int
	Data         intake.EventData
	Processed    bool
	// The sender.
	ActorLogin string
	ActorID    int64
	ActorType  string
}

var errNoEvent = errors.New("the event is gone")

func loadEvent(ctx context.Context, tx pgx.Tx, id string) (*storedEvent, error) {
	var ev storedEvent
	var data []byte
	var processed *time.Time
	err := tx.QueryRow(ctx, `SELECT id::text, repository_id::text, event, action, number, data, processed_at,
			actor_login, actor_id, actor_type
		FROM webhook_events WHERE id = $1 FOR UPDATE`, id).Scan(&ev.ID, &ev.RepositoryID, &ev.Event, &ev.Action, &ev.Number, &data,
		&processed, &ev.ActorLogin, &ev.ActorID, &ev.ActorType)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNoEvent
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &ev.Data); err != nil {
		return nil, fmt.Errorf("event %s: data: %w", id, err)
	}
	ev.Processed = processed != nil
	return &ev, nil
}

// handle loads the event of a, applies it once and completes the job, all
// in one tenant transaction.
func handle[T river.JobArgs](ctx context.Context, db *postgres.DB, a intake.EventArgs, job *river.Job[T],
	apply func(context.Context, pgx.Tx, *storedEvent) (string, error)) error {
	if a.TenantID == "" || a.EventID == "" {
		return river.JobCancel(errors.New("job without tenant or event"))
	}
	err := db.InTenant(ctx, postgres.TenantID(a.TenantID), func(tx pgx.Tx) error {
		ev, err := loadEvent(ctx, tx, a.EventID)
		switch {
		case errors.Is(err, errNoEvent):
			// Swept by retention, or its repository was deleted: nothing to do.
		case err != nil:
			return err
		case !ev.Processed:
			outcome, err := apply(ctx, tx, ev)
			if err != nil {
				return fmt.Errorf("%s %s #%d: %w", ev.Event, ev.Action, ev.Number, err)
			}
			if _, err := tx.Exec(ctx, `UPDATE webhook_events SET processed_at = now(), outcome = $2 WHERE id = $1`,
				ev.ID, clipOutcome(outcome)); err != nil {
				return err
			}
		}
		_, err = river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	if err != nil && ctx.Err() != nil {
		// Not wrapped: River records this attempt as failed with the
		// reason (and retries it), rather than silently requeueing it.
		return fmt.Errorf("interrupted (%v) before the event was applied; nothing of it was kept (%v)", context.Cause(ctx), err)
	}
	return err
}

func clipOutcome(s string) string {
	if len(s) > 200 {
		return s[:200]
	}
	return s
}

// endFixes ends the fix runs f selects, and their outputs.
func endFixes(ctx context.Context, tx pgx.Tx, f fix.EndFilter, reason string) (int, error) {
	ended, err := fix.EndActive(ctx, tx, f, reason, "")
	if err != nil {
		return 0, err
	}
	for _, r := range ended {
		if _, err := publish.EndOutputsOfRun(ctx, tx, r.ID, reason); err != nil {
			return 0, err
		}
	}
	return len(ended), nil
}

// endReviews ends the outputs of cancelled review runs.
func endReviews(ctx context.Context, tx pgx.Tx, ids []string, reason string) error {
	for _, id := range ids {
		if _, err := publish.EndOutputsOfRun(ctx, tx, id, reason); err != nil {
			return err
		}
	}
	return nil
}

// PullRequestEventWorker applies pull_request events (queue review).
type PullRequestEventWorker struct {
	river.WorkerDefaults[intake.PullRequestEventArgs]
	DB *postgres.DB
	// Reviews is true when this worker runs review runs (review_run jobs):
	// only then do opened, reopened, ready_for_review and synchronize
	// queue one.
	Reviews bool
}

// Work applies one event.
func (w *PullRequestEventWorker) Work(ctx context.Context, job *river.Job[intake.PullRequestEventArgs]) error {
	return handle(ctx, w.DB, intake.EventArgs(job.Args), job, func(ctx context.Context, tx pgx.Tx, ev *storedEvent) (string, error) {
		out, err := applyPullRequest(ctx, tx, ev)
		if err != nil || ev.Action == "closed" {
			return out, err
		}
		started, err := w.startReview(ctx, tx, ev)
		if err != nil {
			return "", err
		}
		if out == "" {
			return started, nil
		}
		return out + "; " + started, nil
	})
}

var reviewTriggers = map[string]review.Trigger{
	"opened": review.TriggerOpened, "reopened": review.TriggerReopened, "ready_for_review": review.TriggerReadyForReview,
	"synchronize": review.TriggerSynchronize,
}

// startReview records the review run of the event's head and inserts its
// job, when the effective policy asks for an automatic review: mode not
// off, autoReview, not a draft (unless reviewDrafts), an author not in
// skipAuthors. A head that has a run already gets none (redeliveries,
// the same head from two events). Runs of other heads are superseded.
func (w *PullRequestEventWorker) startReview(ctx context.Context, tx pgx.Tx, ev *storedEvent) (string, error) {
	trigger, ok := reviewTriggers[ev.Action]
	switch {
	case !ok:
		return "no review", nil
	case !w.Reviews:
		return "review runs are not configured on this worker", nil
	case ev.Data.State == "closed":
		return "closed: no review", nil
	}
	var visibility string
	if err := tx.QueryRow(ctx, `SELECT visibility FROM repositories WHERE id = $1`, ev.RepositoryID).Scan(&visibility); err != nil {
		return "", err
	}
	doc, _, err := repos.Policy(ctx, tx, ev.RepositoryID, false)
	if err != nil {
		return "", err
	}
	eff := policy.Resolve(doc, policy.RepoFacts{Private: visibility != "public"})
	rp := eff.Policy.Features.Review
	switch {
	case eff.ReviewMode() == policy.ModeOff && eff.SASTMode() == policy.ModeOff:
		return "review off", nil
	case !rp.AutoReview:
		return "autoReview off", nil
	case ev.Data.Draft && !rp.ReviewDrafts:
		return "draft: not reviewed", nil
	case slices.ContainsFunc(rp.SkipAuthors, func(l string) bool { return strings.EqualFold(l, ev.Data.Author) }):
		return "author skipped", nil
	}
	run, created, err := review.Create(ctx, tx, review.NewRun{RepositoryID: ev.RepositoryID, PRNumber: ev.Number,
		HeadSHA: ev.Data.HeadSHA, HeadRef: ev.Data.HeadRef, BaseRef: ev.Data.BaseRef, BaseSHA: ev.Data.BaseSHA,
		HeadRepoExternalID: ev.Data.HeadRepoID, Draft: ev.Data.Draft, Author: ev.Data.Author, Trigger: trigger, EventID: ev.ID})
	if err != nil {
		return "", err
	}
	if !created {
		return "the head has a review run", nil
	}
	return queueRun(ctx, tx, ev, run)
}

func applyPullRequest(ctx context.Context, tx pgx.Tx, ev *storedEvent) (string, error) {
	var cancelled []string
	var fixes int
	var err error
	switch ev.Action {
	case "opened", "reopened", "ready_for_review":
		return "", nil
	case "synchronize":
		if cancelled, err = review.CancelHead(ctx, tx, ev.RepositoryID, ev.Number, ev.Data.Before, review.ReasonSuperseded, ""); err != nil {
			return "", err
		}
		if err := endReviews(ctx, tx, cancelled, review.ReasonSuperseded); err != nil {
			return "", err
		}
		fixes, err = endFixes(ctx, tx, fix.EndFilter{RepositoryID: ev.RepositoryID, Number: ev.Number, Subject: fix.SubjectPullRequest,
			Delivery: fix.DeliveryCommit, ReviewedHead: ev.Data.Before}, fix.ReasonHeadMoved)
	case "closed":
		if cancelled, err = review.CancelActive(ctx, tx, ev.RepositoryID, ev.Number, "", review.ReasonPRClosed, ""); err != nil {
			return "", err
		}
		if err := endReviews(ctx, tx, cancelled, review.ReasonPRClosed); err != nil {
			return "", err
		}
		fixes, err = endFixes(ctx, tx, fix.EndFilter{RepositoryID: ev.RepositoryID, Number: ev.Number, Subject: fix.SubjectPullRequest},
			fix.ReasonPRClosed)
	default:
		return "", fmt.Errorf("no handler for pull_request %s", ev.Action)
	}
	if err != nil {
		return "", err
	}
	return outcome(len(cancelled), "review run", fixes), nil
}

// IssueEventWorker applies issues events (queue fix).
type IssueEventWorker struct {
	river.WorkerDefaults[intake.IssueEventArgs]
	DB *postgres.DB
}

// Work applies one event.
func (w *IssueEventWorker) Work(ctx context.Context, job *river.Job[intake.IssueEventArgs]) error {
	return handle(ctx, w.DB, intake.EventArgs(job.Args), job, applyIssue)
}

var issueReasons = map[string]string{
	"closed":      fix.ReasonIssueClosed,
	"transferred": fix.ReasonIssueTransferred,
	"deleted":     fix.ReasonIssueDeleted,
}

func applyIssue(ctx context.Context, tx pgx.Tx, ev *storedEvent) (string, error) {
	reason, ok := issueReasons[ev.Action]
	if !ok {
		return "", fmt.Errorf("no handler for issues %s", ev.Action)
	}
	if err := syncIssue(ctx, tx, ev); err != nil {
		return "", err
	}
	fixes, err := endFixes(ctx, tx, fix.EndFilter{RepositoryID: ev.RepositoryID, Number: ev.Number, Subject: fix.SubjectIssue}, reason)
	if err != nil {
		return "", err
	}
	return outcome(0, "", fixes), nil
}

// IssueSyncEventWorker applies issues events that only keep the issues
// table in step (queue review).
type IssueSyncEventWorker struct {
	river.WorkerDefaults[intake.IssueSyncEventArgs]
	DB *postgres.DB
}

// Work applies one event.
func (w *IssueSyncEventWorker) Work(ctx context.Context, job *river.Job[intake.IssueSyncEventArgs]) error {
	return handle(ctx, w.DB, intake.EventArgs(job.Args), job, func(ctx context.Context, tx pgx.Tx, ev *storedEvent) (string, error) {
		if err := syncIssue(ctx, tx, ev); err != nil {
			return "", err
		}
		return "issue row in step", nil
	})
}

var issueSync = map[string]check.Event{
	"opened": check.EventChanged, "edited": check.EventChanged, "closed": check.EventChanged, "reopened": check.EventChanged,
	"transferred": check.EventTransferred, "deleted": check.EventDeleted,
}

// syncIssue keeps the issue's row of the issues table in step with ev.
func syncIssue(ctx context.Context, tx pgx.Tx, ev *storedEvent) error {
	e, ok := issueSync[ev.Action]
	if !ok {
		return fmt.Errorf("no issue sync for issues %s", ev.Action)
	}
	return check.Observe(ctx, tx, ev.RepositoryID, ev.Number, ev.Data.State, ev.Data.IsPullRequest, e)
}

func outcome(runs int, what string, fixes int) string {
	var parts []string
	if what != "" {
		parts = append(parts, fmt.Sprintf("%d %s(s) cancelled", runs, what))
	}
	parts = append(parts, fmt.Sprintf("%d fix run(s) ended", fixes))
	return strings.Join(parts, ", ")
}
