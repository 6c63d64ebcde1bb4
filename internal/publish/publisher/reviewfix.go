package publisher

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/github/writer"
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/publish/render"
	"github.com/quavon/quavon/internal/review"
	"github.com/quavon/quavon/internal/sast"
)

// Refusal reasons of review fixes (spec §7 item 4, §7b), on the intent,
// the output and the run.
const (
	// ReasonReviewFixesOff: fix.reviewFixes is off (stacked_pr), or not
	// commit (commit).
	ReasonReviewFixesOff = "review_fixes_off"
	// ReasonPRClosed: the reviewed pull request is closed or merged.
	ReasonPRClosed = fix.ReasonPRClosed
	// ReasonFork: the pull request's head repository is not the
	// repository (a missing head repository counts as a fork).
	ReasonFork = "fork"
	// ReasonHeadBranchChanged: the pull request's head branch is no
	// longer the branch the fix was made for.
	ReasonHeadBranchChanged = "head_branch_changed"
	// ReasonDefaultBranch: the head branch is the live default branch.
	ReasonDefaultBranch = "default_branch"
	// ReasonHeadMoved: the head branch does not point at the reviewed
	// head: createCommitOnBranch refused the compare-and-swap, or a retry
	// found a head that is not this fix's commit (FX16).
	ReasonHeadMoved = fix.ReasonHeadMoved
	// ReasonSecretInMessage: the rendered commit message matched the
	// secret scan (§7b item 7).
	ReasonSecretInMessage = "secret_in_message"
	// ReasonPullRequestGone: the pull request is not in the repository.
	ReasonPullRequestGone = "pull_request_gone"
)

// decodeTarget reads a fix output's target: a fix_pr's as it is, a
// fix_commit's with the pull request as Issue, the head branch as BaseRef
// and the expected head as BaseSHA (what the run records as its base).
func decodeTarget(o *publish.Output) (publish.FixPRTarget, error) {
	if o.Kind == publish.KindFixCommit {
		c, _, err := publish.DecodeFixCommitTarget(o)
		return publish.FixPRTarget{RepositoryID: c.RepositoryID, FixRunID: c.FixRunID, Issue: c.PullRequest, BaseRef: c.HeadRef,
			BaseSHA: c.ExpectedHeadSHA, PatchSHA256: c.PatchSHA256, Files: c.Files}, err
	}
	t, _, err := publish.DecodeFixPRTarget(o)
	return t, err
}

// runFindings are the findings a review fix addresses: the run's finding
// ids, or every finding of its review run when it names none.
func runFindings(ctx context.Context, tx pgx.Tx, run *fix.Run) ([]review.StoredFinding, error) {
	all, err := review.Findings(ctx, tx, run.ReviewRunID)
	if err != nil {
		return nil, fmt.Errorf("findings: %w", err)
	}
	if len(run.FindingIDs) == 0 {
		return all, nil
	}
	var out []review.StoredFinding
	for _, f := range all {
		if slices.Contains(run.FindingIDs, f.ID) {
			out = append(out, f)
		}
	}
	return out, nil
}

// liveReviewChecks re-checks a review fix on GitHub before anything is
// written (spec §7 item 4 for stacked_pr, §7b items 4–7 for commit): the
// repository, the pull request (open, same repository, head branch
// unchanged and not the default branch), the trigger actor's permission,
// the patch against a fresh read of the reviewed head, the rendered text
// and its secret scan, and the rules (and, for a commit, the protection)
// of the branch written. A non-nil error is transient.
func (p *Publisher) liveReviewChecks(ctx context.Context, fx *writer.Fixer, rd github.Reader, f fixFacts, branch string,
	marker render.Marker) (w fixWrite, reason, detail string, err error) {
	t := f.target
	repo, err := rd.Repository(ctx)
	if err != nil {
		return w, "", "", fmt.Errorf("repository: %w", err)
	}
	switch {
	case repo.Archived:
		return w, ReasonRepositoryArchived, "", nil
	case repo.DefaultBranch == t.BaseRef:
		return w, ReasonDefaultBranch, t.BaseRef + " is the default branch", nil
	case f.out.Status == publish.OutputReady && repo.Visibility == "public":
		return w, ReasonApprovalRequired, "the repository is public now", nil
	}
	pr, err := rd.PullRequest(ctx, t.Issue)
	switch {
	case errors.Is(err, github.ErrNotFound):
		return w, ReasonPullRequestGone, "", nil
	case err != nil:
		return w, "", "", fmt.Errorf("pull request: %w", err)
	case pr.Number != t.Issue:
		return w, ReasonPullRequestGone, "", nil
	case pr.State != "open" || pr.Merged:
		return w, ReasonPRClosed, "", nil
	case pr.HeadRepoID == 0 || pr.HeadRepoID != repo.ID:
		// A missing head repository (a deleted fork) counts as a fork.
		return w, ReasonFork, "the head repository is " + clipText(pr.HeadRepo, 200), nil
	case pr.HeadRef != t.BaseRef:
		return w, ReasonHeadBranchChanged, "the head branch is " + clipText(pr.HeadRef, 255), nil
	}
	perm, err := rd.CollaboratorPermission(ctx, f.run.Actor.Login)
	switch {
	case errors.Is(err, github.ErrNotCollaborator):
		return w, ReasonActorNotPermitted, "the trigger actor is no collaborator", nil
	case err != nil:
		return w, "", "", fmt.Errorf("permission: %w", err)
	case !github.CanTrigger(perm):
		return w, ReasonActorNotPermitted, "the trigger actor's permission is " + perm, nil
	}
	// The patch against a fresh read of the reviewed head commit.
	if reason, detail, err := p.validateAt(ctx, fx, f, t.BaseSHA); err != nil || reason != "" {
		return w, reason, detail, err
	}
	var titles []string
	var refs []render.FindingRef
	for _, fd := range f.findings {
		titles = append(titles, fd.Title)
		refs = append(refs, render.FindingRef{Severity: sast.Severity(fd.Severity), Title: fd.Title, Path: fd.Path, Line: fd.StartLine})
	}
	msg, err := render.FixCommitMessage(render.FixCommit{Marker: marker, FindingTitles: titles})
	if err != nil {
		return w, ReasonInvalidPayload, err.Error(), nil
	}
	if hits := p.cfg.Fix.Scanner.ScanFile("commit-message.txt", msg.String()); len(hits) > 0 {
		return w, ReasonSecretInMessage, "the rendered commit message matched " + hits[0].Rule, nil
	}
	w = fixWrite{branch: branch, message: msg.String(), headline: msg.Headline, body: msg.Body}
	if !f.commit {
		rend, err := render.New(render.Repo{Host: f.repo.host, Owner: f.repo.owner, Name: f.repo.name})
		if err != nil {
			return w, "", "", err
		}
		added, deleted := diffSize(f.diff)
		w.pr, err = rend.ReviewFixPullRequest(render.ReviewFixPR{PullRequest: t.Issue, Marker: marker, Model: f.run.Usage.Model,
			Plan: f.run.Summary, Findings: refs, Change: render.Change{Files: len(f.changes), Added: added, Deleted: deleted},
			Runs: commandRuns(f.run.TestResults, f.eff.Policy.Features.Fix), Verified: render.Verified{Against: t.BaseSHA, ApprovedBy: f.approver}})
		if err != nil {
			return w, ReasonInvalidPayload, err.Error(), nil
		}
		if hits := p.cfg.Fix.Scanner.ScanFile("pull-request.md", w.pr.Title+"\n"+w.pr.Body); len(hits) > 0 {
			return w, ReasonSecretInBody, "the rendered pull request matched " + hits[0].Rule, nil
		}
	} else {
		// The human branch itself: not protected (classic protection),
		// and its rules evaluated as for a bot branch (FX7, FX13).
		b, err := fx.Branch(ctx, branch)
		switch {
		case errors.Is(err, github.ErrNotFound):
			return w, ReasonHeadBranchChanged, branch + " no longer exists", nil
		case err != nil:
			return w, "", "", fmt.Errorf("branch: %w", err)
		case b.Protected:
			return w, ReasonBranchProtected, branch + " is protected", nil
		}
	}
	if w.signed, reason, detail, err = branchRules(ctx, fx, branch); err != nil || reason != "" {
		return w, reason, detail, err
	}
	w.treeChanges(f.changes)
	return w, "", "", nil
}

// pushCommit writes the one commit of a commit delivery: createCommitOnBranch
// on the head branch with expectedHeadOid = the reviewed head, so GitHub
// applies it only as a fast-forward of exactly that head (never force,
// never a second commit: once it landed the head is no longer the
// expected one). GitHub signs it and authors it as the Fixer app.
func (p *Publisher) pushCommit(ctx context.Context, fx *writer.Fixer, f fixFacts, w fixWrite) (publish.External, string, string, error) {
	in := writer.CommitOnBranch{Branch: w.branch, ExpectedHeadOID: f.target.BaseSHA, Headline: w.headline, Body: w.body}
	for _, c := range f.changes {
		if c.Operation == patch.OpDelete {
			in.Deletions = append(in.Deletions, c.Path)
			continue
		}
		in.Additions = append(in.Additions, writer.FileAddition{Path: c.Path, Contents: []byte(c.NewContent)})
	}
	oid, err := fx.CommitOnBranch(ctx, in)
	if errors.Is(err, writer.ErrHeadMoved) {
		return publish.External{}, ReasonHeadMoved, "the pull request's head moved since the review, so GitHub refused the commit; " +
			"a stacked pull request can carry the fix instead", nil
	}
	if err != nil {
		return publish.External{}, "", "", err
	}
	return publish.External{ID: oid, Number: f.target.Issue, CommitSHA: oid, Branch: w.branch}, "", "", nil
}

// commitState is what the reconcile of a commit delivery found.
type commitState int

const (
	commitAbsent  commitState = iota // the head is still the expected head: nothing was written
	commitFound                      // the head is this intent's commit
	commitForeign                    // the head is something else: refused
)

// findFixCommit reconciles a commit delivery after an attempt whose
// outcome is unknown (a lost GraphQL response, a crash): the head
// branch's head counts as this intent's commit only when its single
// parent is the expected head and its message carries the marker's
// reference line (FX16, §7b item 9). Anyone with write access can copy
// the reference line into a commit of their own; see the package doc.
func findFixCommit(ctx context.Context, fx *writer.Fixer, t publish.FixPRTarget, marker render.Marker) (publish.External, commitState, error) {
	head, err := fx.BranchHead(ctx, t.BaseRef)
	if errors.Is(err, github.ErrNotFound) {
		return publish.External{}, commitForeign, nil
	}
	if err != nil {
		return publish.External{}, 0, err
	}
	if head == t.BaseSHA {
		return publish.External{}, commitAbsent, nil
	}
	c, err := fx.Commit(ctx, head)
	if err != nil {
		return publish.External{}, 0, err
	}
	ext := publish.External{ID: head, Number: t.Issue, CommitSHA: head, Branch: t.BaseRef}
	if len(c.Parents) == 1 && c.Parents[0] == t.BaseSHA && render.CommitHasMarker(c.Message, marker) {
		return ext, commitFound, nil
	}
	return ext, commitForeign, nil
}
