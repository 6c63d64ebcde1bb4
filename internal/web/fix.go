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
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/repos"
)

// sandboxRow is what the fix run page shows of a sandbox run (read here:
// internal/sandboxrun links the sandbox signing package, which quavon-api
// must not).
type sandboxRow struct {
	ID, Purpose, ImageClass, ImageDigest, Status, Reason string
	ExitCode, SetupExitCode                              *int
	DurationMillis                                       *int64
	OutputTruncated                                      bool
}

type fixView struct {
	Repo     repoView
	Run      *fix.Run
	Steps    []fix.StepRow
	Sandbox  []sandboxRow
	Output   *publish.Output
	HasPatch bool
	PatchSHA string
	Executed []patch.ExecutedPath
	Files    []diffFile
	Plain    bool
	// View is the diff view shown: unified, split or plain (diffView).
	View      string
	PolicyNow string
	// Problems say why the approve button is not shown.
	Problems   []string
	CanDecide  bool
	CanReview  bool
	Expired    bool
	ExpiresIn  string
	Budget     string
	DiffLines  int
	DiffCapped bool
	// Stacked offers a refused commit's patch as a stacked pull request
	// (stacked.go).
	Stacked bool
}

// loadFix reads everything the fix run page shows and decides whether it
// may be approved now.
func (s *Server) loadFix(ctx context.Context, tx pgx.Tx, sess *Session, id string, plain bool) (*fixView, error) {
	run, err := fix.Get(ctx, tx, id)
	if errors.Is(err, fix.ErrNotFound) {
		return nil, errNotFound
	}
	if err != nil {
		return nil, err
	}
	rr, err := repoByID(ctx, tx, sess.UserID, run.RepositoryID)
	if err != nil {
		return nil, err
	}
	eff, _, _, err := effectiveOf(ctx, tx, rr)
	if err != nil {
		return nil, err
	}
	v := &fixView{Repo: viewOf(rr, eff), Run: run, Plain: plain, CanReview: rr.has(repos.RoleReview)}
	if v.PolicyNow, err = eff.VerdictsSHA256(); err != nil {
		return nil, err
	}
	if v.Steps, err = fix.Steps(ctx, tx, id); err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, `SELECT id::text, purpose, image_class, coalesce(image_digest, ''), status, coalesce(reason, ''),
			exit_code, setup_exit_code, duration_ms, output_truncated
		FROM sandbox_runs WHERE fix_run_id = $1 ORDER BY started_at, id`, id)
	if err != nil {
		return nil, err
	}
	if v.Sandbox, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (sandboxRow, error) {
		var x sandboxRow
		return x, r.Scan(&x.ID, &x.Purpose, &x.ImageClass, &x.ImageDigest, &x.Status, &x.Reason, &x.ExitCode, &x.SetupExitCode,
			&x.DurationMillis, &x.OutputTruncated)
	}); err != nil {
		return nil, err
	}
	v.Budget = fmt.Sprintf("%d steps, %d sandbox runs, %d input and %d output tokens, $%.4f", run.Steps, run.SandboxRuns,
		run.Usage.InputTokens, run.Usage.OutputTokens, float64(run.Usage.CostMicros)/1e6)
	if run.PatchSHA256 != "" {
		changes, diff, sum, err := fix.Patch(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		v.HasPatch, v.PatchSHA = true, sum
		v.Executed = patch.ExecutedPaths(changes)
		v.Files, v.DiffLines, v.DiffCapped = s.diffs.render(diff, v.Executed, plain)
	}
	outs, err := publish.OutputsOfRun(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	for _, o := range outs {
		if o.Kind == publish.KindFixPR || o.Kind == publish.KindFixCommit {
			v.Output = o
		}
	}
	now := s.now()
	switch {
	case v.Output == nil:
		v.Problems = append(v.Problems, "No output awaits approval for this run.")
	case v.Output.Status != publish.OutputAwaitingApproval:
		v.Problems = append(v.Problems, fmt.Sprintf("The output is %s, not awaiting approval.", v.Output.Status))
	case v.Output.ExpiresAt != nil && !now.Before(*v.Output.ExpiresAt):
		v.Expired = true
		v.Problems = append(v.Problems, "The approval window has closed.")
	}
	if v.Output != nil {
		if v.Output.ExpiresAt != nil && now.Before(*v.Output.ExpiresAt) {
			v.ExpiresIn = v.Output.ExpiresAt.Sub(now).Round(time.Minute).String()
		}
		if v.Output.Bound.PatchSHA256 != v.PatchSHA {
			v.Problems = append(v.Problems, "The output is bound to another patch than the one stored for this run.")
		}
		if v.Output.Bound.PolicySHA256 != "" && v.Output.Bound.PolicySHA256 != v.PolicyNow {
			v.Problems = append(v.Problems, "The repository's policy changed since this patch was made; it cannot be approved under the new policy.")
		}
	}
	if run.Status != fix.StatusAwaitingApproval {
		v.Problems = append(v.Problems, fmt.Sprintf("The run is %s.", run.Status))
	}
	if !v.CanReview {
		v.Problems = append(v.Problems, "Approving needs the repo:review role on this repository.")
	}
	v.CanDecide = len(v.Problems) == 0
	if v.Stacked = v.CanReview && stackedOffered(run); v.Stacked {
		done, err := alreadyStacked(ctx, tx, run)
		if err != nil {
			return nil, err
		}
		v.Stacked = !done
	}
	return v, nil
}

func (s *Server) fixPage(w http.ResponseWriter, r *http.Request, sess *Session) error {
	id := r.PathValue("id")
	if !validID(id) {
		return errNotFound
	}
	var v *fixView
	view := diffView(r.URL.Query().Get("view"))
	err := s.db.InTenant(r.Context(), sess.Tenant, func(tx pgx.Tx) error {
		var err error
		v, err = s.loadFix(r.Context(), tx, sess, id, view == viewPlain)
		return err
	})
	if err != nil {
		return err
	}
	v.View = view
	s.page(w, sess, http.StatusOK, "fix", fmt.Sprintf("Fix run for %s#%d", v.Repo.FullName(), v.Run.Number), "repos", v)
	return nil
}

// ReasonRejected is the fix run's reason when a maintainer rejects its
// patch.
const ReasonRejected = "rejected_by_maintainer"

// fixDecision approves or rejects the exact patch shown. The form carries
// the output's payload hash and its bound hashes as the page showed them;
// any difference from what is stored, a policy that no longer hashes to
// the bound one, a closed window or a missing role or live permission
// refuses the decision. The decision, the publish job of an approved
// output, the run's move and the audit entry commit together.
func (s *Server) fixDecision(w http.ResponseWriter, r *http.Request, sess *Session) error {
	ctx := r.Context()
	id := r.PathValue("id")
	if !validID(id) {
		return errNotFound
	}
	f := r.PostForm
	var approve bool
	switch f.Get("decision") {
	case "approve":
		approve = true
	case "reject":
		if f.Get("note") == "" {
			return userErr(errBadForm, "Say why the patch is rejected.")
		}
	default:
		return userErr(errBadForm, "Unknown decision.")
	}
	shown := publish.Bound{PatchSHA256: f.Get("patch_sha256"), BaseSHA: f.Get("base_sha"), HeadSHA: f.Get("head_sha"), PolicySHA256: f.Get("policy_sha256")}
	outputID := f.Get("output_id")
	if !validID(outputID) {
		return userErr(errBadForm, "The form does not name an output.")
	}
	// First the role and the installation, then the live permission on
	// GitHub outside any transaction, then the decision.
	var repo *repoRow
	err := s.db.InTenant(ctx, sess.Tenant, func(tx pgx.Tx) error {
		run, err := fix.Get(ctx, tx, id)
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
		return userErr(errForbidden, "Approving or rejecting needs the repo:review role on %s.", repo.FullName())
	}
	perm, err := s.liveWrite(ctx, repo, sess, "approving")
	if err != nil {
		return err
	}
	var expired bool
	err = s.db.InTenant(ctx, sess.Tenant, func(tx pgx.Tx) error {
		v, err := s.loadFix(ctx, tx, sess, id, true)
		if err != nil {
			return err
		}
		if v.Output == nil || v.Output.ID != outputID {
			return userErr(errConflict, "This run's output is not the one the page showed; reload it.")
		}
		if shown.PolicySHA256 != v.PolicyNow && v.Output.Bound.PolicySHA256 != "" {
			return userErr(errConflict, "The repository's policy changed since the patch was made (or since the page was shown). Nothing was decided.")
		}
		note := f.Get("note")
		out, err := publish.Decide(ctx, tx, outputID, publish.Decision{Approve: approve, UserID: sess.UserID, Note: note,
			ShownPayloadSHA256: f.Get("payload_sha256"), Shown: shown, Now: s.now()})
		switch {
		case errors.Is(err, publish.ErrExpired):
			expired = true
			if _, err := fix.Transition(ctx, tx, id, fix.StatusExpired, fix.Why{Reason: fix.ReasonApprovalExpired}); err != nil && !errors.Is(err, fix.ErrTerminal) {
				return err
			}
			return nil
		case errors.Is(err, publish.ErrStale):
			return userErr(errConflict, "The patch, its base or its policy changed since the page was shown. Nothing was decided; reload the page to see what is stored now.")
		case errors.Is(err, publish.ErrTerminal), errors.Is(err, publish.ErrTransition):
			return userErr(errConflict, "This patch was already decided (or is no longer awaiting approval).")
		case err != nil:
			return err
		}
		if approve {
			// The publication is queued with the approval: the publisher
			// starts at once instead of at its next sweep.
			if _, err := s.jobs.InsertTx(ctx, tx, publish.Job{Tenant: sess.Tenant, OutputID: out.ID}, nil); err != nil {
				return fmt.Errorf("queue the publication of output %s: %w", out.ID, err)
			}
		}
		to, why := fix.StatusApproved, fix.Why{}
		action := "fix_run.approve"
		if !approve {
			to, why, action = fix.StatusRejected, fix.Why{Reason: ReasonRejected, Detail: note}, "fix_run.reject"
		}
		if _, err := fix.Transition(ctx, tx, id, to, why); err != nil {
			if errors.Is(err, fix.ErrTransition) || errors.Is(err, fix.ErrTerminal) {
				return userErr(errConflict, "The fix run is no longer awaiting approval: %v", err)
			}
			return err
		}
		_, err = audit.Record(ctx, tx, audit.Event{ActorUserID: sess.UserID, Actor: "user:" + sess.UserID, Action: action,
			SubjectType: "fix_run", SubjectID: id, Metadata: map[string]any{
				"repository": repo.FullName(), "number": v.Run.Number, "outputId": out.ID, "payloadSha256": out.PayloadSHA256,
				"patchSha256": out.Bound.PatchSHA256, "baseSha": out.Bound.BaseSHA, "headSha": out.Bound.HeadSHA,
				"policySha256": out.Bound.PolicySHA256, "delivery": string(v.Run.Delivery), "note": note,
				"identity": map[string]any{"host": sess.Host, "login": sess.Login, "id": sess.GitHubID, "permission": perm},
			}})
		return err
	})
	if err != nil {
		return err
	}
	if expired {
		return userErr(errConflict, "The approval window closed before the decision; the run has expired.")
	}
	http.Redirect(w, r, "/fixes/"+id, http.StatusSeeOther)
	return nil
}
