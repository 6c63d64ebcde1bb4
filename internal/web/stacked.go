package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/audit"
	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/repos"
)

// The one-click stacked pull request (spec FX16): a review fix delivered
// as a commit fails with head_moved when the author pushed after the
// review, because GitHub refused createCommitOnBranch's compare-and-swap.
// Its page then offers to deliver the same patch as a stacked draft pull
// request on the new head instead. The click is an approval of that exact
// patch (the form binds its hash) with the approval's checks: the
// repo:review role, the live write or admin permission of the user's
// GitHub identity, the session's form token. The patch must still apply
// to the new head (every changed file's blob at the new head is the one
// the patch was made against, every created file absent); the publisher
// validates it in full against a fresh read of that head before it writes
// (spec §7 item 5). When it no longer applies, a new review fix is the way.

// stackedApprovalTTL is how long the stacked output stays approvable: the
// click approves it at once, so this bounds only a run the publisher has
// not picked up (fixrun.DefaultApprovalTTL for a worker's run).
const stackedApprovalTTL = 7 * 24 * time.Hour

// pullReader is what the offer reads on GitHub with the review app's
// read token: the pull request's live head and the tree at it.
// GitHubPermissions implements it.
type pullReader interface {
	PullRequest(ctx context.Context, installationID int64, repo string, number int) (github.PullRequest, error)
	Tree(ctx context.Context, installationID int64, repo, ref string) (github.Tree, error)
}

// PullRequest implements pullReader.
func (g GitHubPermissions) PullRequest(ctx context.Context, installationID int64, repo string, number int) (github.PullRequest, error) {
	if installationID == 0 {
		return github.PullRequest{}, errors.New("web: the review app does not cover the repository")
	}
	rd, err := github.NewReader(ctx, g.Conn, installationID, repo)
	if err != nil {
		return github.PullRequest{}, err
	}
	return rd.PullRequest(ctx, number)
}

// Tree implements pullReader.
func (g GitHubPermissions) Tree(ctx context.Context, installationID int64, repo, ref string) (github.Tree, error) {
	if installationID == 0 {
		return github.Tree{}, errors.New("web: the review app does not cover the repository")
	}
	rd, err := github.NewReader(ctx, g.Conn, installationID, repo)
	if err != nil {
		return github.Tree{}, err
	}
	return rd.Tree(ctx, ref)
}

// stackedOffered reports whether run's page offers the stacked pull
// request: a review fix delivered as a commit that GitHub refused because
// the head moved, while review fixes are signed off.
func stackedOffered(run *fix.Run) bool {
	return policy.ReviewFixesSignedOff() && run.Subject == fix.SubjectPullRequest && run.Delivery == fix.DeliveryCommit &&
		run.Status == fix.StatusFailed && run.Reason == fix.ReasonHeadMoved && run.PatchSHA256 != ""
}

// alreadyStacked reports whether run's patch was delivered as a stacked
// pull request already (a later stacked run of the same pull request with
// the same patch), so the offer is made once.
func alreadyStacked(ctx context.Context, tx pgx.Tx, run *fix.Run) (bool, error) {
	var done bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM fix_runs WHERE repository_id = $1 AND number = $2 AND subject = 'pull_request'
		AND delivery = 'stacked_pr' AND patch_sha256 = $3 AND created_at >= $4 AND id <> $5)`,
		run.RepositoryID, run.Number, run.PatchSHA256, run.CreatedAt, run.ID).Scan(&done)
	return done, err
}

// applies reports whether changes still apply to tree: the blob of every
// modified or deleted file is the one the patch was made against, no
// created file exists. It returns the first path that does not.
func applies(changes []patch.FixFileChange, tree github.Tree) (string, bool) {
	blobs := make(map[string]string, len(tree.Entries))
	for _, e := range tree.Entries {
		if e.Type == "blob" || e.Type == "commit" {
			blobs[e.Path] = e.SHA
		}
	}
	for _, c := range changes {
		sha, ok := blobs[c.Path]
		switch c.Operation {
		case patch.OpCreate:
			if ok {
				return c.Path, false
			}
		default:
			if !ok || sha != c.BaseBlobSHA {
				return c.Path, false
			}
		}
	}
	return "", true
}

// fixStacked is POST /fixes/{id}/stacked.
func (s *Server) fixStacked(w http.ResponseWriter, r *http.Request, sess *Session) error {
	ctx := r.Context()
	id := r.PathValue("id")
	if !validID(id) {
		return errNotFound
	}
	if !policy.ReviewFixesSignedOff() {
		return userErr(errForbidden, "Review fixes are off in this build: they await their threat-analysis sign-off (REVIEW_FIX_SIGNED_OFF is false).")
	}
	pr, ok := s.perms.(pullReader)
	if !ok {
		return errors.New("web: the dashboard cannot read pull requests")
	}
	var (
		run  *fix.Run
		repo *repoRow
	)
	err := s.db.InTenant(ctx, sess.Tenant, func(tx pgx.Tx) error {
		var err error
		run, err = fix.Get(ctx, tx, id)
		if errors.Is(err, fix.ErrNotFound) {
			return errNotFound
		}
		if err != nil {
			return err
		}
		repo, err = repoByID(ctx, tx, sess.UserID, run.RepositoryID)
		return err
	})
	if err != nil {
		return err
	}
	if !repo.has(repos.RoleReview) {
		return userErr(errForbidden, "A stacked pull request is an approval: it needs the repo:review role on %s.", repo.FullName())
	}
	if !stackedOffered(run) {
		return userErr(errConflict, "This run is not a commit GitHub refused because the pull request moved; nothing to deliver as a stacked pull request.")
	}
	if shown := r.PostForm.Get("patch_sha256"); shown != run.PatchSHA256 {
		return userErr(errConflict, "The patch is not the one the page showed; reload it.")
	}
	perm, err := s.liveWrite(ctx, repo, sess, "a stacked pull request")
	if err != nil {
		return err
	}
	// The pull request now: open, of this repository, on the same branch.
	live, err := pr.PullRequest(ctx, repo.ReviewInstallation, repo.FullName(), run.Number)
	if err != nil {
		return fmt.Errorf("read pull request #%d: %w", run.Number, err)
	}
	switch {
	case live.State != "open" || live.Merged:
		return userErr(errConflict, "Pull request #%d is closed; nothing was delivered.", run.Number)
	case live.HeadRef != run.BaseRef:
		return userErr(errConflict, "Pull request #%d's head branch is now %s, not %s; request a new review fix.", run.Number, live.HeadRef, run.BaseRef)
	case live.HeadSHA == run.BaseSHA:
		return userErr(errConflict, "Pull request #%d's head is still the reviewed commit; nothing was delivered.", run.Number)
	}
	tree, err := pr.Tree(ctx, repo.ReviewInstallation, repo.FullName(), live.HeadSHA)
	if err != nil {
		return fmt.Errorf("read the tree of %s: %w", live.HeadSHA, err)
	}
	if tree.Truncated {
		return userErr(errConflict, "The repository's tree at %s is too large to check the patch against; request a new review fix.", live.HeadSHA)
	}
	var newID string
	err = s.db.InTenant(ctx, sess.Tenant, func(tx pgx.Tx) error {
		cur, err := fix.Get(ctx, tx, id)
		if err != nil {
			return err
		}
		if !stackedOffered(cur) {
			return userErr(errConflict, "This run changed since the page was shown; reload it.")
		}
		// One stacked pull request per refused commit: the lock on the
		// refused run serialises two clicks.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM fix_runs WHERE id = $1 FOR UPDATE`, id); err != nil {
			return err
		}
		if done, err := alreadyStacked(ctx, tx, cur); err != nil || done {
			if err != nil {
				return err
			}
			return userErr(errConflict, "This patch was already sent as a stacked pull request.")
		}
		eff, _, _, err := effectiveOf(ctx, tx, repo)
		if err != nil {
			return err
		}
		if eff.Invalid != nil || !eff.FixEnabled() || eff.ReviewFixDelivery() == policy.ReviewFixesOff {
			return userErr(errConflict, "The repository's policy has review fixes off now; nothing was delivered.")
		}
		verdicts, err := eff.VerdictsSHA256()
		if err != nil {
			return err
		}
		changes, diff, sum, err := fix.Patch(ctx, tx, id)
		if err != nil {
			return err
		}
		if path, ok := applies(changes, tree); !ok {
			return userErr(errConflict, "The patch no longer applies to the pull request's new head (%s changed); request a new review fix.", path)
		}
		nr, err := fix.Create(ctx, tx, fix.NewRun{RepositoryID: cur.RepositoryID, Subject: fix.SubjectPullRequest, Number: cur.Number,
			ReviewRunID: cur.ReviewRunID, FindingIDs: cur.FindingIDs, Delivery: fix.DeliveryStackedPR, Mode: fix.ModeApproval,
			Trigger: fix.TriggerDashboard, Actor: fix.Actor{Login: sess.Login, ID: sess.GitHubID}, RequestedBy: sess.UserID})
		if err != nil {
			return err
		}
		newID = nr.ID
		if _, err := fix.Start(ctx, tx, nr.ID, fix.Base{SHA: live.HeadSHA, Ref: live.HeadRef, HeadRepoExternalID: live.HeadRepoID}); err != nil {
			if errors.Is(err, fix.ErrAlreadyRunning) {
				return userErr(errConflict, "Another fix of pull request #%d is running; try again when it is done.", cur.Number)
			}
			return err
		}
		if _, err := fix.RecordPatch(ctx, tx, nr.ID, changes, diff, cur.Summary); err != nil {
			return err
		}
		if _, err := fix.Transition(ctx, tx, nr.ID, fix.StatusAwaitingApproval, fix.Why{}); err != nil {
			return err
		}
		out, err := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: cur.RepositoryID, Kind: publish.KindFixPR, FixRunID: nr.ID,
			Status: publish.OutputAwaitingApproval, ExpiresAt: s.now().Add(stackedApprovalTTL),
			Payload: publish.FixPRPayload{Issue: cur.Number, BaseRef: live.HeadRef, BaseSHA: live.HeadSHA, Files: len(changes), Summary: cur.Summary},
			Bound:   publish.Bound{PatchSHA256: sum, BaseSHA: live.HeadSHA, PolicySHA256: verdicts}})
		if err != nil {
			return err
		}
		if _, err := publish.Decide(ctx, tx, out.ID, publish.Decision{Approve: true, UserID: sess.UserID, Note: "stacked instead of refused commit " + id,
			ShownPayloadSHA256: out.PayloadSHA256, Shown: out.Bound, Now: s.now()}); err != nil {
			return err
		}
		if _, err := fix.Transition(ctx, tx, nr.ID, fix.StatusApproved, fix.Why{}); err != nil {
			return err
		}
		if _, err := s.jobs.InsertTx(ctx, tx, publish.Job{Tenant: sess.Tenant, OutputID: out.ID}, nil); err != nil {
			return fmt.Errorf("queue the publication of output %s: %w", out.ID, err)
		}
		_, err = audit.Record(ctx, tx, audit.Event{ActorUserID: sess.UserID, Actor: "user:" + sess.UserID, Action: "fix_run.stacked_instead",
			SubjectType: "fix_run", SubjectID: nr.ID, Metadata: map[string]any{
				"repository": repo.FullName(), "number": cur.Number, "refusedRun": id, "outputId": out.ID, "payloadSha256": out.PayloadSHA256,
				"patchSha256": sum, "baseSha": live.HeadSHA, "reviewedHead": cur.BaseSHA, "policySha256": verdicts, "delivery": string(fix.DeliveryStackedPR),
				"identity": map[string]any{"host": sess.Host, "login": sess.Login, "id": sess.GitHubID, "permission": perm},
			}})
		return err
	})
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/fixes/"+newID, http.StatusSeeOther)
	return nil
}
