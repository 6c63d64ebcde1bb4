package publisher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/github/writer"
	"github.com/quavon/quavon/internal/gitrepo"
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/publish/render"
	"github.com/quavon/quavon/internal/repos"
	"github.com/quavon/quavon/internal/review"
)

// Refusal reasons of a fix_pr output (spec §7 items 1–9), stored on the
// intent, the output and the fix run.
const (
	ReasonFixRunNotApproved = "fix_run_not_approved"
	ReasonFixRunMismatch    = "fix_run_mismatch"
	// ReasonNotSignedOff: a review fix while review fixes await their
	// sign-off (policy.ReviewFixSignedOff false).
	ReasonNotSignedOff           = string(policy.ReasonNotSignedOff)
	ReasonPatchChanged           = "patch_changed"
	ReasonApprovalRequired       = "approval_required"
	ReasonPolicyInvalid          = "policy_invalid"
	ReasonPolicyChanged          = "policy_changed"
	ReasonFixOff                 = "fix_off"
	ReasonFixerNotInstalled      = "fixer_not_installed"
	ReasonFixerSuspended         = "fixer_suspended"
	ReasonFixerPermissionMissing = "fixer_permission_missing"
	ReasonIssueClosed            = fix.ReasonIssueClosed
	ReasonIssueTransferred       = fix.ReasonIssueTransferred
	ReasonIssueIsPullRequest     = "issue_is_pull_request"
	ReasonActorNotPermitted      = "actor_not_permitted"
	ReasonBaseBranchChanged      = "base_branch_changed"
	ReasonBaseMoved              = "base_moved"
	ReasonPatchRejected          = "patch_rejected"
	ReasonSecretInPatch          = "secret_in_patch"
	ReasonSecretInBody           = "secret_in_body"
	ReasonRuleBlocks             = "rule_blocks"
	ReasonSignatureUnverified    = "signature_unverified"
	ReasonBranchProtected        = "branch_protected"
	ReasonBranchExists           = "branch_exists"
)

// FixConfig turns the publication of fix_pr outputs on. Without it (no
// Fixer app slug configured) they are left untouched (fix_not_handled).
type FixConfig struct {
	// AppSlug is the Fixer app's slug: reconcile trusts only pull
	// requests by "<slug>[bot]".
	AppSlug string
	Fixers  Fixers
	// Readers read the issue and the trigger actor's permission with the
	// review app's read token (the Fixer has no issues permission).
	Readers Readers
	// Scanner is the secret scan of the patch and the body
	// (*leaks.Scanner: gitleaks' rules plus Quavon's patterns).
	Scanner patch.SecretScanner
}

// Fixers makes the Fixer app's writer for a repository.
type Fixers func(ctx context.Context, installationID int64, repo string) (*writer.Fixer, error)

// Readers makes the review app's reader for a repository.
type Readers func(ctx context.Context, installationID int64, repo string) (github.Reader, error)

// ConnFixers returns Fixers over conn (tokens of exactly github.SetFixer).
func ConnFixers(conn *github.Conn) Fixers {
	return func(ctx context.Context, installationID int64, repo string) (*writer.Fixer, error) {
		return writer.NewFixer(ctx, conn, installationID, repo)
	}
}

// ConnReaders returns Readers over conn (github.SetReviewRead).
func ConnReaders(conn *github.Conn) Readers {
	return func(ctx context.Context, installationID int64, repo string) (github.Reader, error) {
		return github.NewReader(ctx, conn, installationID, repo)
	}
}

func (c *FixConfig) validate() error {
	if c.AppSlug == "" || c.Fixers == nil || c.Readers == nil || c.Scanner == nil {
		return errors.New("publisher.New: fix publication needs the Fixer app's slug, Fixers, Readers and a secret scanner")
	}
	return nil
}

// maxInlineBytes is the most file content sent inline in one CreateTree
// request; a larger patch sends a blob per file first.
const maxInlineBytes = 8 << 20

// fixFacts is what the fix re-checks and the write need.
type fixFacts struct {
	out      *publish.Output
	intent   *publish.Intent
	target   publish.FixPRTarget
	run      *fix.Run
	changes  []patch.FixFileChange
	diff     string
	repo     repoRow
	fixer    int64
	eff      policy.Effective
	approver string
	// review: a review fix (subject pull_request): stacked_pr as a fix_pr
	// output, or commit (commit true) as a fix_commit output (spec §7b).
	review, commit bool
	// findings are the review findings the fix addresses (review fixes).
	findings []review.StoredFinding
}

// publishFix publishes a fix_pr output: one bot branch with one commit
// and one draft pull request (see the package doc).
func (p *Publisher) publishFix(ctx context.Context, tenant postgres.TenantID, outputID string) (Result, error) {
	var (
		f       fixFacts
		res     Result
		done    bool
		refusal string
	)
	err := p.db.InTenant(ctx, tenant, func(tx pgx.Tx) error {
		f, res, done, refusal = fixFacts{}, Result{}, false, ""
		o, err := publish.GetOutput(ctx, tx, outputID)
		if err != nil {
			return err
		}
		f.out = o
		if r, ok := settled(o); ok {
			res, done = r, true
			return nil
		}
		in, _, err := publish.EnsureIntent(ctx, tx, o.ID)
		if err != nil {
			return err
		}
		f.intent = in
		if refusal, err = p.readFixFacts(ctx, tx, &f); err != nil {
			return err
		}
		if refusal != "" && in.Attempts == 0 {
			res, done = Result{Outcome: OutcomeFailed, Reason: refusal}, true
			return failFix(ctx, tx, in.ID, o.FixRunID, refusal, "refused at publish time")
		}
		if refusal == "" && p.spacer != nil {
			if wait := p.spacer.Reserve(f.fixer); wait > 0 {
				return &SpacedError{Wait: wait}
			}
		}
		if _, _, err := publish.Claim(ctx, tx, in.ID); err != nil {
			return err
		}
		if f.run != nil && f.run.Status == fix.StatusApproved {
			if f.run, err = fix.Transition(ctx, tx, f.run.ID, fix.StatusPublishing, fix.Why{}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrSpaced) {
			return Result{}, err
		}
		return Result{}, fmt.Errorf("publisher.Publish %s: %w", outputID, err)
	}
	if !done {
		res, err = p.writeFix(ctx, tenant, f, refusal)
		if err != nil {
			return res, fmt.Errorf("publisher.Publish %s: %w", outputID, err)
		}
	}
	p.log.Info("publish", "outcome", string(res.Outcome), "reason", res.Reason, "output", outputID, "kind", string(f.out.Kind),
		"external_id", res.External, "reconciled", res.Reconciled)
	return res, nil
}

// failFix ends the intent, its output and the fix run with reason.
func failFix(ctx context.Context, tx pgx.Tx, intentID, runID, reason, detail string) error {
	if _, err := publish.Fail(ctx, tx, intentID, reason, detail); err != nil {
		return err
	}
	if runID == "" {
		return nil
	}
	_, err := fix.Transition(ctx, tx, runID, fix.StatusFailed, fix.Why{Reason: reason, Detail: detail})
	if errors.Is(err, fix.ErrTerminal) || errors.Is(err, fix.ErrTransition) {
		return nil
	}
	return err
}

// readFixFacts reads and re-checks what the database knows (spec §7
// items 1–4, 9): the target, the run and its approval, the patch, the
// policy, the Fixer installation. It returns the refusal or "".
func (p *Publisher) readFixFacts(ctx context.Context, tx pgx.Tx, f *fixFacts) (string, error) {
	o := f.out
	if !policy.ReviewFixesSignedOff() {
		// Review fixes await their threat-analysis sign-off (spec §7b):
		// the feature is off, whatever the output and its run say.
		if o.Kind == publish.KindFixCommit {
			return ReasonNotSignedOff, nil
		}
		run, err := fix.Get(ctx, tx, o.FixRunID)
		if err != nil && !errors.Is(err, fix.ErrNotFound) {
			return "", err
		}
		if run != nil && run.Subject == fix.SubjectPullRequest {
			return ReasonNotSignedOff, nil
		}
	}
	t, err := decodeTarget(o)
	if err != nil {
		return ReasonInvalidPayload, nil
	}
	f.target, f.commit = t, o.Kind == publish.KindFixCommit
	run, err := fix.Get(ctx, tx, t.FixRunID)
	if errors.Is(err, fix.ErrNotFound) {
		return ReasonFixRunMismatch, nil
	}
	if err != nil {
		return "", err
	}
	f.run = run
	var inst, fixer *int64
	err = tx.QueryRow(ctx, `SELECT host, owner, name, visibility, archived, review_installation_id, fixer_installation_id
		FROM repositories WHERE id = $1`, o.RepositoryID).Scan(&f.repo.host, &f.repo.owner, &f.repo.name, &f.repo.visibility,
		&f.repo.archived, &inst, &fixer)
	if err != nil {
		return "", fmt.Errorf("repository: %w", err)
	}
	if inst != nil {
		f.repo.installation = *inst
	}
	f.review = run.Subject == fix.SubjectPullRequest
	subject, delivery := fix.SubjectIssue, fix.DeliveryPR
	switch {
	case f.commit:
		subject, delivery = fix.SubjectPullRequest, fix.DeliveryCommit
	case f.review:
		subject, delivery = fix.SubjectPullRequest, fix.DeliveryStackedPR
	}
	switch {
	case run.RepositoryID != t.RepositoryID || run.Subject != subject || run.Delivery != delivery ||
		run.Number != t.Issue || run.BaseSHA != t.BaseSHA || f.review && run.BaseRef != t.BaseRef:
		return ReasonFixRunMismatch, nil
	case run.Status != fix.StatusApproved && run.Status != fix.StatusPublishing:
		return ReasonFixRunNotApproved, nil
	case o.Status == publish.OutputApproved && o.DecidedBy == "":
		return ReasonFixRunNotApproved, nil
	}
	// The patch: the run's stored changes hash to the bound patch.
	changes, diff, sum, err := fix.Patch(ctx, tx, run.ID)
	if err != nil {
		return ReasonPatchChanged, nil
	}
	if sum != t.PatchSHA256 || run.PatchSHA256 != t.PatchSHA256 || patch.PatchSHA256(changes) != t.PatchSHA256 {
		return ReasonPatchChanged, nil
	}
	f.changes, f.diff = changes, diff
	if o.DecidedBy != "" {
		// The approver's login on the repository's host, for the label; a
		// user without one is named by no login.
		err := tx.QueryRow(ctx, `SELECT login FROM user_identities WHERE user_id = $1 AND host = $2 ORDER BY external_id LIMIT 1`,
			o.DecidedBy, f.repo.host).Scan(&f.approver)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return "", fmt.Errorf("approver: %w", err)
		}
	}
	doc, _, err := repos.Policy(ctx, tx, o.RepositoryID, false)
	if err != nil {
		return "", fmt.Errorf("policy: %w", err)
	}
	f.eff = policy.Resolve(doc, policy.RepoFacts{Private: f.repo.visibility != "public"})
	switch {
	case f.eff.Invalid != nil:
		return ReasonPolicyInvalid, nil
	case !f.eff.FixEnabled():
		return ReasonFixOff, nil
	case f.review && f.eff.ReviewFixDelivery() == policy.ReviewFixesOff,
		f.commit && f.eff.ReviewFixDelivery() != policy.ReviewFixesCommit:
		// A stacked pull request needs review fixes on; a commit on the
		// head branch needs their explicit commit opt-in (FX13).
		return ReasonReviewFixesOff, nil
	case o.Bound.PolicySHA256 != "" && !sameVerdicts(f.eff, o.Bound.PolicySHA256):
		// The approval was given under other policy verdicts.
		return ReasonPolicyChanged, nil
	case o.Status == publish.OutputReady && (f.eff.FixMode() != policy.FixAuto || run.Mode != fix.ModeAuto):
		// Published without approval only in auto mode, which a public
		// repository downgrades to approval.
		return ReasonApprovalRequired, nil
	case f.repo.archived:
		return ReasonRepositoryArchived, nil
	case f.repo.installation == 0:
		return ReasonRepositoryNotCovered, nil
	case fixer == nil:
		return ReasonFixerNotInstalled, nil
	}
	f.fixer = *fixer
	var suspended bool
	var perms []byte
	err = tx.QueryRow(ctx, `SELECT suspended_at IS NOT NULL, permissions FROM installations
		WHERE app_kind = 'fixer' AND external_id = $1`, f.fixer).Scan(&suspended, &perms)
	if errors.Is(err, pgx.ErrNoRows) {
		return ReasonFixerNotInstalled, nil
	}
	if err != nil {
		return "", fmt.Errorf("fixer installation: %w", err)
	}
	var granted github.Permissions
	if err := json.Unmarshal(perms, &granted); err != nil {
		return "", fmt.Errorf("fixer installation permissions: %w", err)
	}
	switch {
	case suspended:
		return ReasonFixerSuspended, nil
	case granted["contents"] != github.LevelWrite || granted["pull_requests"] != github.LevelWrite:
		return ReasonFixerPermissionMissing, nil
	}
	if f.review {
		if f.findings, err = runFindings(ctx, tx, run); err != nil {
			return "", err
		}
	}
	return "", nil
}

// fixWrite is what the live re-checks prepared for the write.
type fixWrite struct {
	branch  string
	message string
	pr      render.PullRequest
	changes []writer.TreeChange
	inline  bool
	signed  bool // a required_signatures rule applies to the branch
	// headline and body are the message's parts (createCommitOnBranch).
	headline, body string
}

// writeFix is the second transaction: lock the intent, reconcile, re-check
// live on GitHub, write at most once, record.
func (p *Publisher) writeFix(ctx context.Context, tenant postgres.TenantID, f fixFacts, refusal string) (Result, error) {
	var res Result
	var attemptErr error
	err := p.db.InTenant(ctx, tenant, func(tx pgx.Tx) error {
		res, attemptErr = Result{}, nil
		in, err := lockIntent(ctx, tx, f.intent.ID)
		if err != nil {
			return err
		}
		if in.Status.Terminal() {
			res = Result{Outcome: OutcomeAlready, External: in.External.ID}
			return nil
		}
		if in.Status != publish.IntentInFlight {
			return fmt.Errorf("intent %s is %s, not in flight", in.ID, in.Status)
		}
		retry := func(e error) error {
			attemptErr = e
			return publish.RecordAttemptError(ctx, tx, in.ID, e.Error())
		}
		refuse := func(reason, detail string) error {
			res = Result{Outcome: OutcomeFailed, Reason: reason}
			return failFix(ctx, tx, in.ID, f.out.FixRunID, reason, detail)
		}
		if f.target.Issue <= 0 || len(in.Marker) < 8 {
			// A payload that did not decode: nothing can be reconciled.
			return refuse(refusalOr(refusal, ReasonInvalidPayload), "refused at publish time")
		}
		wctx, cancel := context.WithTimeout(ctx, p.cfg.WriteTimeout)
		defer cancel()
		full := f.repo.owner + "/" + f.repo.name
		branch := publish.FixBranch(f.target.Issue, in.Marker)
		if f.commit {
			branch = f.target.BaseRef // the pull request's head branch
		}
		marker := render.Marker(in.Marker)
		var fx *writer.Fixer
		if f.fixer != 0 {
			if fx, err = p.cfg.Fix.Fixers(wctx, f.fixer, full); err != nil {
				if refusal != "" {
					return refuse(refusal, "refused at publish time")
				}
				return retry(fmt.Errorf("fixer: %w", err))
			}
		}
		// Reconcile: a pull request of the bot branch, by the Fixer's bot,
		// carrying this intent's marker, is this intent's write.
		if in.Attempts > 1 && fx != nil && f.commit {
			// Reconcile a commit (FX16): only a head whose single parent
			// is the expected head and whose message carries the marker.
			ext, state, err := findFixCommit(wctx, fx, f.target, marker)
			switch {
			case err != nil:
				return retry(fmt.Errorf("reconcile: %w", err))
			case state == commitFound:
				res = Result{Outcome: OutcomePublished, External: ext.ID, Reconciled: true}
				return p.recordFix(ctx, tx, f, in.ID, ext)
			case state == commitForeign:
				return refuse(ReasonHeadMoved, "the head branch moved to "+ext.CommitSHA+", which is not this fix's commit")
			}
		}
		if in.Attempts > 1 && fx != nil && !f.commit {
			pr, found, err := p.findFixPR(wctx, fx, branch, marker)
			if err != nil {
				return retry(fmt.Errorf("reconcile: %w", err))
			}
			if found {
				res = Result{Outcome: OutcomePublished, External: itoa(int64(pr.Number)), Reconciled: true}
				return p.recordFix(ctx, tx, f, in.ID, publish.External{ID: itoa(int64(pr.Number)), Number: pr.Number, Branch: branch})
			}
		}
		if refusal != "" {
			return refuse(refusal, "refused at publish time")
		}
		rd, err := p.cfg.Fix.Readers(wctx, f.repo.installation, full)
		if err != nil {
			return retry(fmt.Errorf("reader: %w", err))
		}
		check := p.liveChecks
		if f.review {
			check = p.liveReviewChecks
		}
		w, reason, detail, err := check(wctx, fx, rd, f, branch, marker)
		if err != nil {
			return retry(err)
		}
		if reason != "" {
			return refuse(reason, detail)
		}
		push := p.pushFix
		if f.commit {
			push = p.pushCommit
		}
		ext, reason, detail, err := push(wctx, fx, f, w)
		if err != nil {
			if permanent(err) {
				return refuse(ReasonGitHubRefused, err.Error())
			}
			// A write may have happened: the next attempt reconciles.
			return retry(fmt.Errorf("write: %w", err))
		}
		if reason != "" {
			return refuse(reason, detail)
		}
		res = Result{Outcome: OutcomePublished, External: ext.ID}
		return p.recordFix(ctx, tx, f, in.ID, ext)
	})
	if err != nil {
		return Result{}, err
	}
	if attemptErr != nil {
		return Result{}, attemptErr
	}
	return res, nil
}

func sameVerdicts(eff policy.Effective, bound string) bool {
	now, err := eff.VerdictsSHA256()
	return err == nil && now == bound
}

func refusalOr(r, def string) string {
	if r != "" {
		return r
	}
	return def
}

func (p *Publisher) recordFix(ctx context.Context, tx pgx.Tx, f fixFacts, intentID string, ext publish.External) error {
	if _, err := publish.Published(ctx, tx, intentID, ext); err != nil {
		return err
	}
	_, err := fix.Transition(ctx, tx, f.out.FixRunID, fix.StatusPublished, fix.Why{})
	if errors.Is(err, fix.ErrTerminal) {
		return nil
	}
	return err
}

// findFixPR looks for the intent's pull request by its head branch, its
// author (the Fixer's bot) and the hidden marker in its body.
func (p *Publisher) findFixPR(ctx context.Context, fx *writer.Fixer, branch string, marker render.Marker) (github.PullRequest, bool, error) {
	prs, err := fx.PullRequestsByHead(ctx, branch)
	if err != nil {
		return github.PullRequest{}, false, err
	}
	bot := writer.BotLogin(p.cfg.Fix.AppSlug)
	for _, pr := range prs {
		if pr.HeadRef == branch && writer.SameLogin(pr.Author, bot) && render.BodyHasMarker(pr.Body, marker) {
			return pr, true, nil
		}
	}
	return github.PullRequest{}, false, nil
}

// liveChecks re-checks on GitHub (spec §7 items 2–6): the repository and
// its default branch, the issue, the trigger actor's permission, the
// patch against a fresh listing of the base branch, the secret scan of
// the body, and the rules of the bot branch. A non-nil error is
// transient (the attempt is retried).
func (p *Publisher) liveChecks(ctx context.Context, fx *writer.Fixer, rd github.Reader, f fixFacts, branch string,
	marker render.Marker) (w fixWrite, reason, detail string, err error) {
	t := f.target
	repo, err := rd.Repository(ctx)
	if err != nil {
		return w, "", "", fmt.Errorf("repository: %w", err)
	}
	switch {
	case repo.Archived:
		return w, ReasonRepositoryArchived, "", nil
	case repo.DefaultBranch != t.BaseRef:
		return w, ReasonBaseBranchChanged, "the default branch is " + repo.DefaultBranch, nil
	case f.out.Status == publish.OutputReady && repo.Visibility == "public":
		return w, ReasonApprovalRequired, "the repository is public now", nil
	}
	issue, err := rd.Issue(ctx, t.Issue)
	switch {
	case errors.Is(err, github.ErrNotFound):
		return w, ReasonIssueTransferred, "the issue is no longer in this repository", nil
	case err != nil:
		return w, "", "", fmt.Errorf("issue: %w", err)
	case issue.Number != t.Issue:
		return w, ReasonIssueTransferred, "", nil
	case issue.IsPullRequest:
		return w, ReasonIssueIsPullRequest, "", nil
	case issue.State != "open":
		return w, ReasonIssueClosed, "", nil
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
	// The patch, validated again against a fresh listing of the base
	// branch's head (base blob SHAs equal, path policy, limits, secrets).
	head, err := fx.BranchHead(ctx, t.BaseRef)
	if err != nil {
		return w, "", "", fmt.Errorf("base branch: %w", err)
	}
	if reason, detail, err := p.validateAt(ctx, fx, f, head); err != nil || reason != "" {
		return w, reason, detail, err
	}
	fp := f.eff.Policy.Features.Fix
	// The body, rendered from typed fields, and its secret scan.
	rend, err := render.New(render.Repo{Host: f.repo.host, Owner: f.repo.owner, Name: f.repo.name})
	if err != nil {
		return w, "", "", err
	}
	added, deleted := diffSize(f.diff)
	pr, err := rend.FixPullRequest(render.FixPR{Issue: t.Issue, IssueTitle: issue.Title, Marker: marker, Model: f.run.Usage.Model,
		Plan: f.run.Summary, Change: render.Change{Files: len(f.changes), Added: added, Deleted: deleted},
		Runs: commandRuns(f.run.TestResults, fp), Verified: render.Verified{Against: head, ApprovedBy: f.approver}})
	if err != nil {
		return w, ReasonInvalidPayload, err.Error(), nil
	}
	if hits := p.cfg.Fix.Scanner.ScanFile("pull-request.md", pr.Title+"\n"+pr.Body); len(hits) > 0 {
		return w, ReasonSecretInBody, "the rendered pull request matched " + hits[0].Rule, nil
	}
	msg, err := render.IssueFixCommitMessage(render.IssueFix{Issue: t.Issue, Marker: marker})
	if err != nil {
		return w, ReasonInvalidPayload, err.Error(), nil
	}
	// Repository rules of the bot branch: only rules that cannot refuse
	// a new branch of one signed, single-parent commit pass; unknown rule
	// types block (FX7).
	w = fixWrite{branch: branch, message: msg.String(), pr: pr}
	if w.signed, reason, detail, err = branchRules(ctx, fx, branch); err != nil || reason != "" {
		return w, reason, detail, err
	}
	w.treeChanges(f.changes)
	return w, "", "", nil
}

// branchRules evaluates the repository rules of branch (FX7): only rules
// that cannot refuse one signed, single-parent, fast-forward commit pass
// (deletion, non_fast_forward, required_linear_history,
// required_signatures, the last reported in signed); unknown rule types
// block.
func branchRules(ctx context.Context, fx *writer.Fixer, branch string) (signed bool, reason, detail string, err error) {
	rules, err := fx.BranchRules(ctx, branch)
	if err != nil {
		return false, "", "", fmt.Errorf("rules: %w", err)
	}
	for _, r := range rules {
		switch r.Type {
		case "deletion", "non_fast_forward", "required_linear_history":
		case "required_signatures":
			signed = true
		default:
			return signed, ReasonRuleBlocks, "rule " + clipText(r.Type, 64) + " applies to " + branch, nil
		}
	}
	return signed, "", "", nil
}

// treeChanges prepares the tree entries of changes: inline content up to
// maxInlineBytes in total, blobs (made by pushFix) above.
func (w *fixWrite) treeChanges(changes []patch.FixFileChange) {
	total := 0
	for _, c := range changes {
		total += len(c.NewContent)
	}
	w.inline = total <= maxInlineBytes
	for _, c := range changes {
		tc := writer.TreeChange{Path: c.Path, Mode: c.Mode.String()}
		if c.Operation != patch.OpDelete && w.inline {
			content := c.NewContent
			tc.Content = &content
		}
		w.changes = append(w.changes, tc)
	}
}

// validateAt runs ValidatePatch on the run's changes against a fresh
// listing of commit sha (spec §7 item 5, §7b item 6): base blob SHAs,
// the path policy, limits, text-only files and the secret scan.
func (p *Publisher) validateAt(ctx context.Context, fx *writer.Fixer, f fixFacts, sha string) (reason, detail string, err error) {
	listing, err := freshListing(ctx, fx, sha)
	if err != nil {
		return "", "", err
	}
	fp := f.eff.Policy.Features.Fix
	paths := patch.PathPolicy{DeniedPaths: fp.DeniedPaths, AllowedPaths: fp.AllowedPaths, AllowLockfiles: fp.AllowLockfiles}
	limits := patch.Limits{MaxFiles: fp.Limits.MaxFiles, MaxChangedLines: fp.Limits.MaxChangedLines, MaxFileBytes: patch.DefaultMaxFileBytes}
	if err := patch.ValidatePatch(f.changes, listing, paths, limits, p.cfg.Fix.Scanner); err != nil {
		var rej *patch.RejectedError
		if !errors.As(err, &rej) {
			return "", "", fmt.Errorf("validate: %w", err)
		}
		return patchReason(rej), clipText(rej.Error(), 2048), nil
	}
	return "", "", nil
}

// pushFix writes: the tree (inline content), the commit on the base, the
// bot branch, the draft pull request. Each step first looks for what an
// earlier attempt left, so a lost response or a crash never makes a
// second branch or pull request.
func (p *Publisher) pushFix(ctx context.Context, fx *writer.Fixer, f fixFacts, w fixWrite) (publish.External, string, string, error) {
	var ext publish.External
	base, err := fx.Commit(ctx, f.target.BaseSHA)
	if err != nil {
		return ext, "", "", fmt.Errorf("base commit: %w", err)
	}
	if !w.inline {
		for i, c := range f.changes {
			if c.Operation == patch.OpDelete {
				continue
			}
			sha, err := fx.CreateBlob(ctx, []byte(c.NewContent))
			if err != nil {
				return ext, "", "", err
			}
			w.changes[i].SHA = sha
		}
	}
	// Trees are content-addressed: an earlier attempt's tree has this SHA.
	tree, err := fx.CreateTree(ctx, base.Tree, w.changes)
	if err != nil {
		return ext, "", "", err
	}
	commit := ""
	existing, err := fx.Branch(ctx, w.branch)
	switch {
	case errors.Is(err, github.ErrNotFound):
	case err != nil:
		return ext, "", "", fmt.Errorf("branch: %w", err)
	case existing.Protected:
		return ext, ReasonBranchProtected, w.branch + " is protected", nil
	default:
		ok, err := ownCommit(ctx, fx, existing.SHA, f.target.BaseSHA, tree)
		if err != nil {
			return ext, "", "", err
		}
		if !ok {
			return ext, ReasonBranchExists, w.branch + " exists and is not this fix's commit", nil
		}
		commit = existing.SHA
	}
	if commit == "" {
		if commit, err = fx.CreateCommit(ctx, w.message, tree, f.target.BaseSHA); err != nil {
			return ext, "", "", err
		}
		if w.signed {
			c, err := fx.Commit(ctx, commit)
			if err != nil {
				return ext, "", "", err
			}
			if !c.Verified {
				return ext, ReasonSignatureUnverified, "GitHub reports the commit unverified (" + clipText(c.VerificationReason, 64) + ")", nil
			}
		}
		if err := fx.CreateBranch(ctx, w.branch, commit); err != nil {
			if !errors.Is(err, github.ErrConflict) {
				return ext, "", "", err
			}
			// Someone (or a lost earlier response) created it meanwhile.
			head, herr := fx.BranchHead(ctx, w.branch)
			if herr != nil {
				return ext, "", "", herr
			}
			if ok, oerr := ownCommit(ctx, fx, head, f.target.BaseSHA, tree); oerr != nil || !ok {
				if oerr != nil {
					return ext, "", "", oerr
				}
				return ext, ReasonBranchExists, w.branch + " was created by someone else", nil
			}
			commit = head
		}
	}
	pr, err := fx.CreateDraftPullRequest(ctx, writer.DraftPullRequest{Title: w.pr.Title, Body: w.pr.Body, Head: w.branch, Base: f.target.BaseRef})
	if err != nil {
		return ext, "", "", err
	}
	return publish.External{ID: itoa(int64(pr.Number)), Number: pr.Number, CommitSHA: commit, Branch: w.branch}, "", "", nil
}

// ownCommit reports whether sha is exactly this fix's commit: one commit
// whose only parent is the base and whose tree is the patch's tree.
func ownCommit(ctx context.Context, fx *writer.Fixer, sha, base, tree string) (bool, error) {
	c, err := fx.Commit(ctx, sha)
	if err != nil {
		return false, fmt.Errorf("branch commit: %w", err)
	}
	return len(c.Parents) == 1 && c.Parents[0] == base && c.Tree == tree, nil
}

// freshListing lists commit sha's tree through the Fixer's token; blob
// contents are read on demand (and checked against their id by Listing).
func freshListing(ctx context.Context, fx *writer.Fixer, sha string) (*patch.Listing, error) {
	c, err := fx.Commit(ctx, sha)
	if err != nil {
		return nil, fmt.Errorf("base head: %w", err)
	}
	entries, err := fx.Tree(ctx, c.Tree)
	if err != nil {
		return nil, fmt.Errorf("base tree: %w", err)
	}
	m := make(map[string]patch.Entry, len(entries))
	for _, e := range entries {
		if e.Type == "tree" {
			continue
		}
		mode, err := strconv.ParseUint(e.Mode, 8, 32)
		if err != nil {
			return nil, fmt.Errorf("base tree: %s: mode %q", e.Path, e.Mode)
		}
		m[e.Path] = patch.Entry{Mode: gitrepo.Mode(mode), BlobSHA: e.SHA, Size: -1}
	}
	return patch.NewListing(m, func(_ string, e patch.Entry) ([]byte, error) {
		return fx.Blob(ctx, e.BlobSHA, github.MaxFileBytes)
	}), nil
}

// patchReason is the refusal of a rejected patch: a moved base, a secret,
// or another rule.
func patchReason(rej *patch.RejectedError) string {
	secret := false
	for _, v := range rej.Violations {
		switch v.Rule {
		case patch.RuleBaseMoved, patch.RuleBaseMissing, patch.RuleBaseExists:
			return ReasonBaseMoved
		case patch.RuleSecret:
			secret = true
		}
	}
	if secret {
		return ReasonSecretInPatch
	}
	return ReasonPatchRejected
}

// diffSize counts the added and removed lines of a unified diff.
func diffSize(diff string) (added, deleted int) {
	for _, l := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
		case strings.HasPrefix(l, "+"):
			added++
		case strings.HasPrefix(l, "-"):
			deleted++
		}
	}
	return added, deleted
}

// commandRuns are the run's last test and lint results as the body shows
// them (the tails were redacted when stored). Status is the sandbox
// result's (internal/sandbox: completed, timed_out, failed, rejected),
// compared as text: the publisher does not link the sandbox package.
func commandRuns(tr fix.TestResults, fp policy.Fix) []render.CommandRun {
	var out []render.CommandRun
	for _, r := range []struct {
		step    render.Step
		command string
		res     *fix.TestResult
	}{{render.StepTest, fp.TestCommand, tr.Test}, {render.StepLint, fp.LintCommand, tr.Lint}} {
		if r.res == nil {
			continue
		}
		c := render.CommandRun{Step: r.step, Command: r.command, ExitCode: r.res.ExitCode,
			Duration: time.Duration(r.res.DurationMillis) * time.Millisecond, OutputTruncated: r.res.Truncated}
		switch {
		case r.res.TimedOut || r.res.Status == "timed_out":
			c.Outcome = render.OutcomeTimedOut
		case r.res.Status != "" && r.res.Status != "completed":
			// The sandbox could not run it (failed, rejected).
			c.Outcome = render.OutcomeError
		case r.res.ExitCode == 0:
			c.Outcome = render.OutcomePassed
		default:
			c.Outcome = render.OutcomeFailed
		}
		c.Output = strings.TrimRight(r.res.StdoutTail+r.res.StderrTail, "\n")
		out = append(out, c)
	}
	return out
}

func clipText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "")
}
