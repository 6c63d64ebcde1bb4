package handle

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/intake"
	"github.com/quavon/quavon/internal/mention"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/repos"
	"github.com/quavon/quavon/internal/review"
	reviewjob "github.com/quavon/quavon/internal/review/job"
)

// LivePullRequests reads what a review command is checked against, live,
// with the review app's read token.
type LivePullRequests interface {
	Comment(ctx context.Context, repo reviewjob.Repo, pr int, id int64) (github.Comment, error)
	Permission(ctx context.Context, repo reviewjob.Repo, login string) (string, error)
	PullRequest(ctx context.Context, repo reviewjob.Repo, pr int) (github.PullRequest, error)
}

// ReviewCommentEventWorker applies the review app's issue_comment events
// (queue review): "@<review-app> review" on an open pull request, by its
// author as GitHub says today, who has write or admin permission on the
// repository, queues a full review of the current head as a new attempt
// (the policy's autoReview, drafts and skipAuthors do not apply; mode off
// does). The comment's text is read live and parsed by internal/mention
// (code, quotes and links are not commands).
type ReviewCommentEventWorker struct {
	river.WorkerDefaults[intake.ReviewCommentEventArgs]
	DB     *postgres.DB
	Parser *mention.Parser
	Live   LivePullRequests
}

// Work applies one event.
func (w *ReviewCommentEventWorker) Work(ctx context.Context, job *river.Job[intake.ReviewCommentEventArgs]) error {
	return handle(ctx, w.DB, intake.EventArgs(job.Args), job, w.apply)
}

func (w *ReviewCommentEventWorker) apply(ctx context.Context, tx pgx.Tx, ev *storedEvent) (string, error) {
	if w.Live == nil || w.Parser == nil {
		return "review commands are not configured on this worker", nil
	}
	if ev.Action != "created" {
		return "", fmt.Errorf("no handler for issue_comment %s", ev.Action)
	}
	if !ev.Data.IsPullRequest || ev.Data.CommentID <= 0 {
		return "not a pull request comment", nil
	}
	repo, err := reviewjob.LoadRepo(ctx, tx, ev.RepositoryID)
	if err != nil {
		return "", err
	}
	c, err := w.Live.Comment(ctx, repo, ev.Number, ev.Data.CommentID)
	if errors.Is(err, reviewjob.ErrNoComment) {
		return "the comment is gone", nil
	}
	if err != nil {
		return "", err
	}
	if ok, err := w.Parser.Has(c.Body, "review"); err != nil || !ok {
		return "no review command", nil
	}
	if c.AuthorType != "User" {
		return "a command by a " + strings.ToLower(c.AuthorType) + " is not acted on", nil
	}
	perm, err := w.Live.Permission(ctx, repo, c.Author)
	if err != nil {
		return "", err
	}
	if !github.CanTrigger(perm) {
		return "the commenter may not trigger reviews (" + perm + ")", nil
	}
	pr, err := w.Live.PullRequest(ctx, repo, ev.Number)
	if err != nil {
		return "", err
	}
	if pr.State != "open" {
		return "the pull request is not open", nil
	}
	doc, _, err := repos.Policy(ctx, tx, ev.RepositoryID, false)
	if err != nil {
		return "", err
	}
	eff := policy.Resolve(doc, policy.RepoFacts{Private: repo.Private})
	if eff.ReviewMode() == policy.ModeOff && eff.SASTMode() == policy.ModeOff {
		return "review off", nil
	}
	run, _, err := review.Create(ctx, tx, review.NewRun{RepositoryID: ev.RepositoryID, PRNumber: ev.Number, HeadSHA: pr.HeadSHA,
		HeadRef: pr.HeadRef, BaseRef: pr.BaseRef, BaseSHA: pr.BaseSHA, HeadRepoExternalID: pr.HeadRepoID, Draft: pr.Draft,
		Author: pr.Author, Trigger: review.TriggerCommand, Actor: review.Actor{Login: c.Author, ID: c.AuthorID}, EventID: ev.ID,
		FullReview: true})
	if err != nil {
		return "", err
	}
	return queueRun(ctx, tx, ev, run)
}

// queueRun supersedes the pull request's other active runs and inserts
// run's job.
func queueRun(ctx context.Context, tx pgx.Tx, ev *storedEvent, run *review.Run) (string, error) {
	superseded, err := review.CancelOthers(ctx, tx, ev.RepositoryID, ev.Number, run.ID, review.ReasonSuperseded)
	if err != nil {
		return "", err
	}
	if err := endReviews(ctx, tx, superseded, review.ReasonSuperseded); err != nil {
		return "", err
	}
	client, err := river.ClientFromContextSafely[pgx.Tx](ctx)
	if err != nil {
		return "", err
	}
	var tenant string
	if err := tx.QueryRow(ctx, `SELECT quavon_current_tenant()::text`).Scan(&tenant); err != nil {
		return "", err
	}
	if _, err := client.InsertTx(ctx, tx, reviewjob.RunArgs{TenantID: tenant, RunID: run.ID}, nil); err != nil {
		return "", fmt.Errorf("the review run's job: %w", err)
	}
	return "review run queued", nil
}
