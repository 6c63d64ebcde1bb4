package fixjob

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/fix/fixagent"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/review"
)

// Reasons a review fix (spec §7b) is refused before the agent: the run
// ends ineligible and nothing is run.
const (
	// ReasonReviewFixesOff: fix.reviewFixes is off in the effective policy
	// (stored off, fix off, or the sign-off).
	ReasonReviewFixesOff = "review_fixes_off"
	// ReasonDeliveryNotAllowed: a commit delivery while the policy no
	// longer says fix.reviewFixes: commit.
	ReasonDeliveryNotAllowed = "delivery_not_allowed"
	// ReasonReviewRunGone: the review run was deleted.
	ReasonReviewRunGone = "review_run_gone"
	// ReasonNoFindings: none of the findings is published or pending
	// publication any more (dismissed, say).
	ReasonNoFindings = "no_findings"
	// ReasonFork: the pull request comes from another repository, or its
	// head repository is unknown (a missing headRepoExternalId counts as a
	// fork, FX13).
	ReasonFork = "fork"
	// ReasonPRNotFound: the pull request is gone.
	ReasonPRNotFound = "pull_request_not_found"
	// ReasonDefaultBranch: the pull request's head branch is the
	// repository's default branch.
	ReasonDefaultBranch = "default_branch"
)

// reviewedRun is a review fix's review run and the findings to fix.
type reviewedRun struct {
	run      *review.Run
	findings []review.StoredFinding
}

func ineligible(reason, detail string) *refusal {
	return &refusal{to: fix.StatusIneligible, reason: reason, detail: detail}
}

// reviewOf checks what the database knows of a review fix: the effective
// policy still allows review fixes and the run's delivery, the review run
// exists, its head repository is the repository itself, and the findings
// are still fixable (fix.FixableFindings; those that are not any more are
// left out).
func (w *Worker) reviewOf(ctx context.Context, tenant postgres.TenantID, run *fix.Run, repo Repo, eff policy.Effective) (*reviewedRun, *refusal, error) {
	switch d := eff.ReviewFixDelivery(); {
	case d == policy.ReviewFixesOff:
		return nil, ineligible(ReasonReviewFixesOff, fix.ReviewFixesOffWhy(eff)), nil
	case run.Delivery == fix.DeliveryCommit && d != policy.ReviewFixesCommit:
		return nil, ineligible(ReasonDeliveryNotAllowed, fmt.Sprintf("the commit delivery needs fix.reviewFixes: commit; the policy now says %s", d)), nil
	}
	if run.ReviewRunID == "" {
		return nil, ineligible(ReasonReviewRunGone, "the review run was deleted"), nil
	}
	var rv reviewedRun
	err := w.DB.InTenant(ctx, tenant, func(tx pgx.Tx) error {
		rr, fixable, err := fix.FixableFindings(ctx, tx, run.ReviewRunID)
		if err != nil {
			return err
		}
		rv.run = rr
		for _, f := range fixable {
			if slices.Contains(run.FindingIDs, f.ID) {
				rv.findings = append(rv.findings, f)
			}
		}
		return nil
	})
	switch {
	case errors.Is(err, fix.ErrNotFound):
		return nil, ineligible(ReasonReviewRunGone, "the review run was deleted"), nil
	case err != nil:
		return nil, nil, err
	case rv.run.RepositoryID != run.RepositoryID || rv.run.PRNumber != run.Number:
		return nil, nil, fmt.Errorf("review run %s is not of the run's pull request", rv.run.ID)
	case rv.run.HeadRepoExternalID == 0 || rv.run.HeadRepoExternalID != repo.ExternalID:
		return nil, ineligible(ReasonFork, "the reviewed pull request comes from a fork (or its head repository is unknown); review fixes work on same-repository pull requests only"), nil
	case len(rv.findings) == 0:
		return nil, ineligible(ReasonNoFindings, "none of the findings is published or pending publication any more (dismissed or resolved)"), nil
	}
	return &rv, nil, nil
}

// reviewTarget reads a review fix's subject live (FX13, FX16, CH5): the
// pull request is open, its head repository is the repository itself (a
// missing one counts as a fork), its head is still the reviewed head and
// its head branch is not the default branch; the requesting identity
// (the same login and account id) still has write or admin permission. The findings are rendered from
// their typed fields by fixagent.
func (w *Worker) reviewTarget(ctx context.Context, rd github.Reader, run *fix.Run, repo Repo, rv *reviewedRun) (*target, *refusal, error) {
	pr, err := rd.PullRequest(ctx, run.Number)
	switch {
	case errors.Is(err, github.ErrNotFound):
		return nil, ineligible(ReasonPRNotFound, "the pull request is gone"), nil
	case err != nil:
		return nil, nil, err
	case pr.State != "open":
		return nil, ineligible(fix.ReasonPRClosed, "the pull request is closed"), nil
	case pr.HeadRepoID == 0 || pr.HeadRepoID != repo.ExternalID:
		return nil, ineligible(ReasonFork, "the pull request's head repository is not the repository itself (a fork, or deleted); review fixes work on same-repository pull requests only"), nil
	case pr.HeadSHA != rv.run.HeadSHA:
		return nil, ineligible(fix.ReasonHeadMoved, headMoved(rv.run.HeadSHA, pr.HeadSHA)), nil
	}
	c, err := rd.Collaborator(ctx, run.Actor.Login)
	switch {
	case errors.Is(err, github.ErrNotCollaborator):
		c.Permission = github.PermissionNone
	case err != nil:
		return nil, nil, err
	case c.ID != run.Actor.ID:
		// The login now names another account: the requester is gone.
		return nil, ineligible(fix.ReasonActorNoWrite, fmt.Sprintf("the login %s now names another GitHub account than the one that asked", run.Actor.Login)), nil
	}
	if !github.CanTrigger(c.Permission) {
		return nil, ineligible(fix.ReasonActorNoWrite, fmt.Sprintf("%s has %q permission; admin or write is needed", run.Actor.Login, clipDetail(c.Permission, 20))), nil
	}
	ghRepo, err := rd.Repository(ctx)
	if err != nil {
		return nil, nil, err
	}
	if pr.HeadRef == ghRepo.DefaultBranch {
		return nil, ineligible(ReasonDefaultBranch, "the pull request's head branch is the default branch"), nil
	}
	r := &fixagent.Review{PullRequest: run.Number}
	for _, f := range rv.findings {
		r.Findings = append(r.Findings, fixagent.Finding{Path: f.Path, StartLine: f.StartLine, EndLine: f.EndLine,
			Severity: f.Severity, Title: f.Title, Body: f.Body})
	}
	return &target{review: r, branch: pr.HeadRef, want: rv.run.HeadSHA, headRepo: pr.HeadRepoID,
		private: ghRepo.Private || ghRepo.Visibility == "internal"}, nil, nil
}

// headMoved is the detail of a head_moved refusal (FX16).
func headMoved(reviewed, now string) string {
	return fmt.Sprintf("the pull request's head moved from %s (reviewed) to %s: re-run the review first", short(reviewed), short(now))
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func clipDetail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
