package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/audit"
	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/repos"
	"github.com/quavon/quavon/internal/review"
)

// AuditReviewFixRequest is the audit action of a review-fix request (FX17).
const AuditReviewFixRequest = "repository.review_fix.request"

// reviewFixView is what the review page shows of review fixes.
type reviewFixView struct {
	// CanRequest: the user may press "Apply fixes" and "Fix" (the gate,
	// the policy and the role allow it; the live permission is checked
	// on the request).
	CanRequest bool
	// Off says why review fixes are not offered ("" when they are).
	Off string
	// Delivery is the delivery a request gets (stacked_pr or commit).
	Delivery string
	// Fixable are the ids of the findings a fix may be asked for.
	Fixable map[string]bool
}

// reviewFixOf decides what the review page offers for run: nothing but the
// reason while review fixes are off (the gate, the policy), a note without
// the repo:manage role or for a fork, the buttons otherwise.
func reviewFixOf(ctx context.Context, tx pgx.Tx, rr *repoRow, eff policy.Effective, run *review.Run) (reviewFixView, error) {
	v := reviewFixView{Fixable: map[string]bool{}}
	d := eff.ReviewFixDelivery()
	switch {
	case !policy.ReviewFixesSignedOff():
		v.Off = "Review fixes are off in this build: they await their threat-analysis sign-off (REVIEW_FIX_SIGNED_OFF is false)."
		return v, nil
	case d == policy.ReviewFixesOff:
		v.Off = "Review fixes are off for this repository: " + fix.ReviewFixesOffWhy(eff) + "."
		return v, nil
	case !rr.has(repos.RoleManage):
		v.Off = "Requesting review fixes needs the repo:manage role on " + rr.FullName() + "."
		return v, nil
	}
	v.Delivery = string(d)
	fork, err := isFork(ctx, tx, rr, run)
	if err != nil {
		return v, err
	}
	if fork {
		v.Off = "This pull request comes from a fork (or its head repository is unknown): review fixes work on same-repository pull requests only."
		return v, nil
	}
	_, fs, err := fix.FixableFindings(ctx, tx, run.ID)
	if err != nil {
		return v, err
	}
	for _, f := range fs {
		v.Fixable[f.ID] = true
	}
	if len(fs) == 0 {
		v.Off = "No finding of this run is published or pending publication, so there is nothing to fix."
		return v, nil
	}
	v.CanRequest = true
	return v, nil
}

// isFork reports whether the reviewed pull request's head repository is
// another repository or unknown (a missing id counts as a fork, FX13).
func isFork(ctx context.Context, tx pgx.Tx, rr *repoRow, run *review.Run) (bool, error) {
	var ext int64
	if err := tx.QueryRow(ctx, `SELECT external_id FROM repositories WHERE id = $1`, rr.ID).Scan(&ext); err != nil {
		return false, err
	}
	return run.HeadRepoExternalID == 0 || run.HeadRepoExternalID != ext, nil
}

// reviewFixRequest is "Apply fixes" (every fixable finding, the most
// severe 20) or "Fix" (form field finding) on a review run (spec §7b,
// FX13, FX14, FX17). While policy.ReviewFixesSignedOff() is false (as
// shipped) every request is refused with 403 and the reason, before
// anything is read or recorded. Otherwise: the repo:manage role;
// fix.reviewFixes not off in the effective policy (the reason when it is);
// a same-repository pull request; findings of this run that are published
// or pending publication (fix.Create checks them again); the signed-in
// identity (host, login and id) with write or admin permission live on
// GitHub. The queued fix run (subject pull_request, the policy's delivery
// unless stacked_pr is asked for), its fix_run job and the audit entry
// commit together.
func (s *Server) reviewFixRequest(w http.ResponseWriter, r *http.Request, sess *Session) error {
	if !policy.ReviewFixesSignedOff() {
		return userErr(errForbidden, "Review fixes are off in this build: they await their threat-analysis sign-off (REVIEW_FIX_SIGNED_OFF is false). No fix run was recorded.")
	}
	ctx := r.Context()
	id := r.PathValue("id")
	if !validID(id) {
		return errNotFound
	}
	f := r.PostForm
	one := f.Get("finding")
	if one != "" && !validID(one) {
		return userErr(errBadForm, "The form names no valid finding.")
	}
	if one == "" && f.Get("all") != "1" {
		return userErr(errBadForm, "Say which finding to fix, or apply fixes for all of them.")
	}
	asked := f.Get("delivery")
	if asked != "" && asked != string(fix.DeliveryStackedPR) && asked != string(fix.DeliveryCommit) {
		return userErr(errBadForm, "Unknown delivery %q.", clip(asked, 40))
	}

	// The role, the policy and the findings; then the live permission on
	// GitHub outside any transaction; then the request.
	var run *review.Run
	var repo *repoRow
	var nr fix.NewRun
	err := s.db.InTenant(ctx, sess.Tenant, func(tx pgx.Tx) error {
		var err error
		run, err = review.Get(ctx, tx, id)
		if errors.Is(err, review.ErrNotFound) {
			return errNotFound
		}
		if err != nil {
			return err
		}
		if repo, err = repoByID(ctx, tx, sess.UserID, run.RepositoryID); err != nil {
			return err
		}
		if !repo.has(repos.RoleManage) {
			return userErr(errForbidden, "Requesting review fixes needs the repo:manage role on %s.", repo.FullName())
		}
		eff, _, _, err := effectiveOf(ctx, tx, repo)
		if err != nil {
			return err
		}
		d := eff.ReviewFixDelivery()
		if d == policy.ReviewFixesOff {
			return userErr(errForbidden, "Review fixes are off for %s: %s. No fix run was recorded.", repo.FullName(), fix.ReviewFixesOffWhy(eff))
		}
		delivery := fix.Delivery(d)
		switch {
		case asked == string(fix.DeliveryCommit) && d != policy.ReviewFixesCommit:
			return userErr(errForbidden, "The commit delivery needs fix.reviewFixes: commit in the repository's policy; it says %s.", d)
		case asked != "":
			delivery = fix.Delivery(asked)
		}
		mode := fix.ModeApproval
		if eff.FixMode() == policy.FixAuto {
			mode = fix.ModeAuto
		}
		fork, err := isFork(ctx, tx, repo, run)
		if err != nil {
			return err
		}
		if fork {
			return userErr(errConflict, "Pull request #%d comes from a fork (or its head repository is unknown): review fixes work on same-repository pull requests only.", run.PRNumber)
		}
		_, fs, err := fix.FixableFindings(ctx, tx, run.ID)
		if err != nil {
			return err
		}
		var ids []string
		for _, x := range fs {
			if (one == "" || x.ID == one) && len(ids) < fix.MaxFindings {
				ids = append(ids, x.ID)
			}
		}
		switch {
		case one != "" && len(ids) == 0:
			return userErr(errConflict, "That finding is not a published or pending finding of this review run (dismissed, resolved, only stored, or of another run).")
		case len(ids) == 0:
			return userErr(errConflict, "No finding of this review run is published or pending publication: there is nothing to fix.")
		}
		nr = fix.NewRun{RepositoryID: repo.ID, Subject: fix.SubjectPullRequest, Number: run.PRNumber, ReviewRunID: run.ID,
			FindingIDs: ids, Delivery: delivery, Mode: mode, Trigger: fix.TriggerDashboard,
			Actor: fix.Actor{Login: sess.Login, ID: sess.GitHubID}, RequestedBy: sess.UserID}
		return nil
	})
	if err != nil {
		return err
	}
	perm, err := s.liveWrite(ctx, repo, sess, "requesting review fixes")
	if err != nil {
		return err
	}
	var runID string
	err = s.db.InTenant(ctx, sess.Tenant, func(tx pgx.Tx) error {
		fr, err := fix.Create(ctx, tx, nr)
		if errors.Is(err, fix.ErrInvalid) {
			return userErr(errConflict, "The request was refused: %v. Reload the review to see what is stored now.", err)
		}
		if err != nil {
			return err
		}
		runID = fr.ID
		if _, err := s.jobs.InsertTx(ctx, tx, fix.RunJob{TenantID: string(sess.Tenant), RunID: fr.ID}, nil); err != nil {
			return fmt.Errorf("queue fix run %s: %w", fr.ID, err)
		}
		_, err = audit.Record(ctx, tx, audit.Event{ActorUserID: sess.UserID, Actor: "user:" + sess.UserID, Action: AuditReviewFixRequest,
			SubjectType: "fix_run", SubjectID: fr.ID, Metadata: map[string]any{
				"repository": repo.FullName(), "pullRequest": run.PRNumber, "reviewRunId": run.ID, "headSha": run.HeadSHA,
				"findingIds": nr.FindingIDs, "delivery": string(nr.Delivery), "mode": string(nr.Mode),
				"identity": map[string]any{"host": sess.Host, "login": sess.Login, "id": sess.GitHubID, "permission": perm},
			}})
		return err
	})
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/fixes/"+runID, http.StatusSeeOther)
	return nil
}
