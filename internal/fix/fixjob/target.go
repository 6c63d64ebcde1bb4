package fixjob

import (
	"context"
	"errors"
	"log/slog"

	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/fix/fixagent"
	"github.com/quavon/quavon/internal/github"
)

// target is what the agent works on: the prompt's subject and the branch
// whose tip is its base.
type target struct {
	issue  fixagent.Issue
	review *fixagent.Review
	// branch is fetched; its tip is the run's base.
	branch string
	// want is the commit branch must be at ("" any): a review fix's
	// reviewed head.
	want string
	// headRepo is a review fix's pull request head repository.
	headRepo int64
	// private: the repository is private or internal (auto is allowed).
	private bool
}

// refusal ends a queued run before the agent: to (failed or ineligible)
// with the reason.
type refusal struct {
	to             fix.Status
	reason, detail string
}

// issueTarget reads an issue fix's subject live: the issue still open and
// not a pull request, the repository's default branch, and the prompt.
func (w *Worker) issueTarget(ctx context.Context, rd github.Reader, run *fix.Run, log *slog.Logger) (*target, *refusal, error) {
	failed := func(reason, detail string) (*target, *refusal, error) {
		return nil, &refusal{to: fix.StatusFailed, reason: reason, detail: detail}, nil
	}
	is, err := rd.Issue(ctx, run.Number)
	switch {
	case errors.Is(err, github.ErrNotFound):
		return failed(fix.ReasonIssueNotFound, "the issue is gone")
	case err != nil:
		return nil, nil, err
	case is.IsPullRequest:
		return failed(fix.ReasonNotAnIssue, "a pull request")
	case is.State != "open":
		return failed(fix.ReasonIssueNotOpen, "the issue was closed before the run started")
	}
	ghRepo, err := rd.Repository(ctx)
	if err != nil {
		return nil, nil, err
	}
	issue, err := w.issuePrompt(ctx, rd, is, log)
	if err != nil {
		return nil, nil, err
	}
	return &target{issue: issue, branch: ghRepo.DefaultBranch, private: ghRepo.Private || ghRepo.Visibility == "internal"}, nil, nil
}
