package intake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/queues"
)

// Repository events (pull_request, issues, issue_comment) are stored as a
// webhook_events row and handed to quavon-worker as a River job inserted
// in the same transaction: no job without its row, no row without its
// job. A job carries ids only (River's tables are not tenant tables).
//
// Only events with a handler in the worker are stored: routes lists them.
// The parser knows every action the review and fix features will act on;
// an action gets a route when the code that acts on it exists, so no job
// is ever inserted that nothing works, and no event is stored that nothing
// reads.

// EventArgs is the job of one stored event: its tenant and its
// webhook_events id.
type EventArgs struct {
	TenantID string `json:"tenant_id"`
	EventID  string `json:"event_id"`
}

// PullRequestEventArgs is the job of a pull_request event (queue review).
type PullRequestEventArgs EventArgs

// Kind is River's job kind.
func (PullRequestEventArgs) Kind() string { return "pull_request_event" }

// InsertOpts puts the job on the review queue. An event's job is retried
// (its handler is idempotent: a processed event is not applied again).
func (PullRequestEventArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queues.Review, MaxAttempts: 10}
}

// ReviewCommentEventArgs is the job of an issue_comment event of the
// review app (queue review): "@<review-app> review" on a pull request.
type ReviewCommentEventArgs EventArgs

// Kind is River's job kind.
func (ReviewCommentEventArgs) Kind() string { return "review_comment_event" }

// InsertOpts puts the job on the review queue.
func (ReviewCommentEventArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queues.Review, MaxAttempts: 10}
}

// IssueEventArgs is the job of an issues event (queue fix).
type IssueEventArgs EventArgs

// Kind is River's job kind.
func (IssueEventArgs) Kind() string { return "issue_event" }

// InsertOpts puts the job on the fix queue.
func (IssueEventArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queues.Fix, MaxAttempts: 10}
}

// FixTriggerArgs is the job of a fix trigger: an issues.labeled event or
// an "@<fixer> fix" comment (queue fix). Its handler decides eligibility
// (internal/fix.Admit).
type FixTriggerArgs EventArgs

// Kind is River's job kind.
func (FixTriggerArgs) Kind() string { return "fix_trigger" }

// InsertOpts puts the job on the fix queue.
func (FixTriggerArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queues.Fix, MaxAttempts: 10}
}

// IssueSyncEventArgs is the job of an issues event that only keeps the
// acceptance check's issues table in step (queue review): either app's
// opened, edited, reopened, and the review app's closed, transferred and
// deleted (the Fixer app's go to IssueEventArgs, whose handler does the
// same and ends fix runs).
type IssueSyncEventArgs EventArgs

// Kind is River's job kind.
func (IssueSyncEventArgs) Kind() string { return "issue_sync_event" }

// InsertOpts puts the job on the review queue.
func (IssueSyncEventArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queues.Review, MaxAttempts: 10}
}

// routes are the repository events the worker acts on today, by
// "event.action" and the app that received them, with their job. The
// review app's pull request events queue, end and supersede review runs
// and review-fix commits; its issue comments are "@<review-app> review"
// (read live by the worker). The Fixer app's issue events end the issue's
// fix runs; its labels and its "@<fixer> fix" comments are fix triggers
// (only comments that hold that command are stored, see
// Intake.FixerCommands). Either app's issues events keep the acceptance
// check's issues table in step (no text comes from them; the Fixer's
// issue jobs sync it too).
var routes = map[string]map[github.AppKind]func(a EventArgs) river.JobArgs{
	"pull_request.opened":           {github.AppReview: prJob},
	"pull_request.reopened":         {github.AppReview: prJob},
	"pull_request.ready_for_review": {github.AppReview: prJob},
	"pull_request.synchronize":      {github.AppReview: prJob},
	"pull_request.closed":           {github.AppReview: prJob},
	"issue_comment.created":         {github.AppReview: reviewCommentJob, github.AppFixer: fixTriggerJob},
	"issues.closed":                 {github.AppFixer: issueJob, github.AppReview: issueSyncJob},
	"issues.transferred":            {github.AppFixer: issueJob, github.AppReview: issueSyncJob},
	"issues.deleted":                {github.AppFixer: issueJob, github.AppReview: issueSyncJob},
	"issues.labeled":                {github.AppFixer: fixTriggerJob},
	"issues.opened":                 {github.AppFixer: issueSyncJob, github.AppReview: issueSyncJob},
	"issues.edited":                 {github.AppFixer: issueSyncJob, github.AppReview: issueSyncJob},
	"issues.reopened":               {github.AppFixer: issueSyncJob, github.AppReview: issueSyncJob},
}

func prJob(a EventArgs) river.JobArgs            { return PullRequestEventArgs(a) }
func issueJob(a EventArgs) river.JobArgs         { return IssueEventArgs(a) }
func fixTriggerJob(a EventArgs) river.JobArgs    { return FixTriggerArgs(a) }
func reviewCommentJob(a EventArgs) river.JobArgs { return ReviewCommentEventArgs(a) }
func issueSyncJob(a EventArgs) river.JobArgs     { return IssueSyncEventArgs(a) }

// Routed reports whether app kind's delivery of event.action is stored and
// handed to the worker.
func Routed(kind github.AppKind, event, action string) bool {
	_, ok := routes[event+"."+action][kind]
	return ok
}

// JobKinds lists the job kinds intake inserts, for the worker's test that
// it works every one of them.
func JobKinds() []string {
	seen := map[string]bool{}
	var out []string
	for _, byApp := range routes {
		for _, job := range byApp {
			k := job(EventArgs{}).Kind()
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Inserter inserts a River job in the caller's transaction (a
// *river.Client[pgx.Tx]).
type Inserter interface {
	InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
}

// EventData is the typed, capped content of a stored event: what its
// handler reads (never the title, body or comment text, which the worker
// reads live when it needs them).
type EventData struct {
	Action string `json:"action"`
	// pull_request
	HeadSHA    string `json:"headSha,omitempty"`
	HeadRef    string `json:"headRef,omitempty"`
	BaseSHA    string `json:"baseSha,omitempty"`
	BaseRef    string `json:"baseRef,omitempty"`
	HeadRepoID int64  `json:"headRepoId,omitempty"`
	Draft      bool   `json:"draft,omitempty"`
	State      string `json:"state,omitempty"`
	Merged     bool   `json:"merged,omitempty"`
	Author     string `json:"author,omitempty"`
	AuthorID   int64  `json:"authorId,omitempty"`
	Before     string `json:"before,omitempty"`
	After      string `json:"after,omitempty"`
	// issues, issue_comment
	IsPullRequest   bool   `json:"isPullRequest,omitempty"`
	NewRepositoryID int64  `json:"newRepositoryId,omitempty"`
	NewRepository   string `json:"newRepository,omitempty"`
	NewNumber       int    `json:"newNumber,omitempty"`
	// Label is the label added (issues labeled).
	Label string `json:"label,omitempty"`
	// CommentID is the comment of an issue_comment event (its text is
	// read live by the worker); Command is the Fixer's command word when
	// the comment holds "@<fixer> fix" (never the comment's text).
	CommentID int64  `json:"commentId,omitempty"`
	Command   string `json:"command,omitempty"`
}

// repoEvent is what every repository event gives the intake.
type repoEvent struct {
	installationID int64
	repositoryID   int64 // GitHub's
	number         int
	sender         github.Account
	data           EventData
}

func repoEventOf(parsed any) (repoEvent, bool) {
	switch e := parsed.(type) {
	case *github.PullRequestEvent:
		p := e.PullRequest
		return repoEvent{e.InstallationID, e.Repository.ID, e.Number, e.Sender, EventData{Action: e.Action,
			HeadSHA: p.HeadSHA, HeadRef: p.HeadRef, BaseSHA: p.BaseSHA, BaseRef: p.BaseRef, HeadRepoID: p.HeadRepoID,
			Draft: p.Draft, State: p.State, Merged: p.Merged, Author: p.Author, AuthorID: p.AuthorID,
			Before: e.Before, After: e.After}}, true
	case *github.IssuesEvent:
		is := e.Issue
		return repoEvent{e.InstallationID, e.Repository.ID, is.Number, e.Sender, EventData{Action: e.Action,
			State: is.State, Author: is.Author, AuthorID: is.AuthorID, IsPullRequest: is.IsPullRequest,
			NewRepositoryID: e.NewRepository.ID, NewRepository: e.NewRepository.FullName, NewNumber: e.NewNumber,
			Label: e.Label}}, true
	case *github.IssueCommentEvent:
		return repoEvent{e.InstallationID, e.Repository.ID, e.Issue.Number, e.Sender, EventData{Action: e.Action,
			IsPullRequest: e.Issue.IsPullRequest, CommentID: e.Comment.ID}}, true
	}
	return repoEvent{}, false
}

// ErrUnknownRepository: the event names a repository Quavon does not know
// for that app's installation: acknowledged, not stored.
var ErrUnknownRepository = errors.New("unknown repository")

// storeRepoEvent writes the event's row and its job in tx.
func storeRepoEvent(ctx context.Context, tx pgx.Tx, jobs Inserter, tenant string, kind github.AppKind, event, delivery string,
	ev repoEvent) error {
	job := routes[event+"."+ev.data.Action][kind]
	var repoID string
	err := tx.QueryRow(ctx, `SELECT id::text FROM repositories WHERE host = 'github.com' AND external_id = $1
		AND `+installationColumn(kind)+` = $2`, ev.repositoryID, ev.installationID).Scan(&repoID)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrUnknownRepository
	}
	if err != nil {
		return err
	}
	data, err := json.Marshal(ev.data)
	if err != nil {
		return err
	}
	var eventID string
	if err := tx.QueryRow(ctx, `INSERT INTO webhook_events (tenant_id, delivery_id, app_kind, repository_id, event, action, number,
			actor_login, actor_id, actor_type, data)
		VALUES (quavon_current_tenant(), $1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id::text`,
		delivery, string(kind), repoID, event, ev.data.Action, ev.number, ev.sender.Login, ev.sender.ID, ev.sender.Type, data).
		Scan(&eventID); err != nil {
		return fmt.Errorf("webhook_events: %w", err)
	}
	if _, err := jobs.InsertTx(ctx, tx, job(EventArgs{TenantID: tenant, EventID: eventID}), nil); err != nil {
		return fmt.Errorf("the event's job: %w", err)
	}
	return nil
}
