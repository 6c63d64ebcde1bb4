// Package fixjob is the worker's fix run: the River job (fix_run, queue
// fix) that takes one admitted, queued issue or review fix run to the
// agent and leaves it awaiting_approval, publishing, failed or (review
// fixes) ineligible (internal/fix/fixrun).
//
//	queued → (nothing)   a run that is no longer queued (its issue closed
//	                     meanwhile): the job completes
//	queued → ineligible  a review fix (subject pull_request) while review
//	                     fixes await sign-off (policy.ReviewFixSignedOff
//	                     false): reason not_signed_off
//	queued → ineligible  a review fix the policy or GitHub refuses before
//	                     the agent (reviewfix.go): review_fixes_off,
//	                     delivery_not_allowed, review_run_gone,
//	                     no_findings, fork (the head repository is not the
//	                     repository, or unknown), pull_request_not_found,
//	                     pull_request_closed, head_moved (the live head, or
//	                     the fetched head branch, is not the reviewed head:
//	                     "re-run the review first"), actor_permission (the
//	                     requester's live permission), default_branch
//	queued → failed      before the agent: fix turned off, the issue no
//	                     longer open, no fix model, no sandbox for the
//	                     policy's commands, the base not fetchable (on the
//	                     job's last attempt; earlier attempts retry)
//	queued → running →   fixrun.Execute: the base fetched with the read
//	  awaiting_approval  token into the hardened git cache, the issue
//	  | publishing       prompt (the issue's title and text and only the
//	  | failed           comments of users whose live permission is write
//	                     or admin, all inside llm.Untrusted), the agent
//	                     within the run's model budget (a
//	                     BudgetExceededError ends it failed: budget). A
//	                     review fix's base is the pull request's head
//	                     branch at the reviewed head, its prompt the
//	                     findings rendered by fixagent.RenderFindings
//	                     inside llm.Untrusted(review-findings); tools,
//	                     limits, sandbox, ValidatePatch and paths are the
//	                     issue fix's; its output is a fix_pr (stacked_pr)
//	                     or fix_commit (commit)
//	running → failed     a retried job that finds its run running: the
//	                     earlier attempt was interrupted mid-agent; the
//	                     agent is never run twice for one run
//	                     (ReasonInterrupted)
//
// The run's state is read in a short transaction and every later write is
// a compare-and-set on it (internal/fix): two attempts cannot both start
// the agent, because Start moves queued to running once.
package fixjob

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/quavon/quavon/internal/sandboxrun"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/quavon/quavon/internal/agent"
	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/fix/fixagent"
	"github.com/quavon/quavon/internal/fix/fixrun"
	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/gitrepo"
	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/sandbox"
)

// RunArgs is the job of one fix run (fix.RunJob: kind fix_run, queue fix).
type RunArgs = fix.RunJob

// Repo is what a fix run needs to know of its repository.
type Repo struct {
	ID             string
	ExternalID     int64 // the repository's GitHub id (a pull request's head repository must be it)
	Host           string
	Owner, Name    string
	InstallationID int64 // the review app's: the worker reads with its token
}

// FullName is "owner/name".
func (r Repo) FullName() string { return r.Owner + "/" + r.Name }

// Source reads GitHub for a run.
type Source interface {
	// Reader is the repository's read-only reader (the issue, its
	// comments, permissions, the repository's default branch).
	Reader(ctx context.Context, repo Repo) (github.Reader, error)
	// FetchBase fetches branch of repo for tenant and returns the
	// repository and the branch's tip; release frees the repository.
	FetchBase(ctx context.Context, tenant string, repo Repo, branch string) (r *gitrepo.Repo, tip string, release func(), err error)
}

// Models gives a run the fix model inside the run's budget (the spec's
// per-run ceilings and the tenant's daily ones); a nil model means no fix
// model is configured.
type Models interface {
	FixModel(ctx context.Context, tenant string) (llm.Model, *llm.Budget, error)
}

// The worker records every run_tests and run_linter job as a sandbox run
// and links the step to it.
var _ fixagent.RecordingRunner = (*sandboxrun.Recorder)(nil)

// Deps are the fix run's collaborators.
type Deps struct {
	GitHub Source
	Models Models
	// Sandbox runs run_tests and run_linter (the worker's sandbox client,
	// each job recorded as a sandbox run); nil: a policy with a test or
	// lint command fails the run.
	Sandbox sandboxrun.Sender
	Scanner patch.SecretScanner
	// ApprovalTTL: zero is fixrun.DefaultApprovalTTL.
	ApprovalTTL time.Duration
	Log         *slog.Logger
	Now         func() time.Time
}

// Worker works fix_run jobs.
type Worker struct {
	river.WorkerDefaults[RunArgs]
	DB   *postgres.DB
	Deps Deps
}

// Timeout bounds one attempt: the policy's longest wall clock, and the
// fetch and the writes around it.
func (w *Worker) Timeout(*river.Job[RunArgs]) time.Duration { return time.Hour + 15*time.Minute }

// Reasons of runs this job ends (besides fixagent's and fixrun's).
const (
	ReasonInterrupted        = "interrupted"
	ReasonFixOff             = "fix_off"
	ReasonModelUnavailable   = "model_unavailable"
	ReasonSandboxUnavailable = "sandbox_unavailable"
	ReasonNoImageClass       = "no_image_class"
	ReasonBaseUnavailable    = "base_unavailable"
	ReasonGitHubError        = "github_error"
)

// Caps on what the prompt is built from.
const (
	// maxPermissionLookups bounds the live permission checks of commenters.
	maxPermissionLookups = 50
)

// Work runs one fix run.
func (w *Worker) Work(ctx context.Context, job *river.Job[RunArgs]) error {
	a := job.Args
	if a.TenantID == "" || a.RunID == "" {
		return river.JobCancel(errors.New("job without tenant or run"))
	}
	tenant := postgres.TenantID(a.TenantID)
	log := w.Deps.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With(slog.String("fix_run", a.RunID))

	var run *fix.Run
	var reviewed *reviewedRun
	var repo Repo
	var doc []byte
	var visibility string
	err := w.DB.InTenant(ctx, tenant, func(tx pgx.Tx) error {
		var err error
		if run, err = fix.Get(ctx, tx, a.RunID); err != nil {
			return err
		}
		switch {
		case run.Status == fix.StatusRunning:
			// An earlier attempt started the agent and was interrupted:
			// never a second agent for the same run.
			_, err = fix.Transition(ctx, tx, run.ID, fix.StatusFailed, fix.Why{Reason: ReasonInterrupted,
				Detail: "the worker stopped while the agent ran; trigger the fix again"})
			return ignoreMoved(err)
		case run.Status != fix.StatusQueued:
			return nil
		}
		return tx.QueryRow(ctx, `SELECT r.id::text, r.external_id, r.host, r.owner, r.name, r.visibility,
				coalesce(r.review_installation_id, 0), p.document::text
			FROM repositories r LEFT JOIN repository_policies p ON p.repository_id = r.id WHERE r.id = $1`, run.RepositoryID).
			Scan(&repo.ID, &repo.ExternalID, &repo.Host, &repo.Owner, &repo.Name, &visibility, &repo.InstallationID, &doc)
	})
	if errors.Is(err, fix.ErrNotFound) {
		return nil // swept, or its repository deleted
	}
	if err != nil {
		return fmt.Errorf("fix run %s: %w", a.RunID, err)
	}
	if run.Status != fix.StatusQueued {
		return nil
	}
	if run.Subject == fix.SubjectPullRequest && !policy.ReviewFixesSignedOff() {
		// Review fixes await their threat-analysis sign-off (spec §7b): a
		// run that arrives anyway is recorded ineligible, never run.
		return w.endAs(ctx, tenant, run.ID, fix.StatusIneligible, string(policy.ReasonNotSignedOff),
			"review fixes await their threat-analysis sign-off (REVIEW_FIX_SIGNED_OFF is false)")
	}
	if run.Subject != fix.SubjectIssue && run.Subject != fix.SubjectPullRequest {
		return river.JobCancel(fmt.Errorf("fix run %s: a %s fix is not run by this job", run.ID, run.Subject))
	}
	// The run's last chance: a failure that would be retried ends it.
	last := job.Attempt >= job.MaxAttempts
	failNow := func(reason string, err error) error {
		return w.end(ctx, tenant, run.ID, reason, err.Error())
	}
	retryOrFail := func(reason string, err error) error {
		if last {
			return failNow(reason, err)
		}
		return fmt.Errorf("fix run %s: %s: %w", run.ID, reason, err)
	}

	eff := policy.Resolve(doc, policy.RepoFacts{Private: visibility != "public"})
	fp := eff.Policy.Features.Fix
	if run.Subject == fix.SubjectPullRequest {
		// A review fix's policy, review run and findings, before anything
		// is asked of GitHub or a model.
		rv, refused, err := w.reviewOf(ctx, tenant, run, repo, eff)
		if err != nil {
			return fmt.Errorf("fix run %s: %w", run.ID, err)
		}
		if refused != nil {
			return w.endAs(ctx, tenant, run.ID, fix.StatusIneligible, refused.reason, refused.detail)
		}
		reviewed = rv
	}

	if m := eff.FixMode(); m != policy.FixApproval && m != policy.FixAuto {
		return failNow(ReasonFixOff, errors.New("fix was turned off for the repository after the trigger"))
	}
	var model llm.Model
	var budget *llm.Budget
	if w.Deps.Models != nil {
		if model, budget, err = w.Deps.Models.FixModel(ctx, a.TenantID); err != nil {
			return retryOrFail(ReasonModelUnavailable, err)
		}
	}
	if model == nil || budget == nil {
		return failNow(ReasonModelUnavailable, errors.New("no fix model is configured (QUAVON_LLM_FIX_* or QUAVON_LLM_*)"))
	}
	hasTest, hasLint := fp.TestCommand != "", fp.LintCommand != ""
	if (hasTest || hasLint) && w.Deps.Sandbox == nil {
		return failNow(ReasonSandboxUnavailable, errors.New("the policy has a test or lint command and the worker has no sandbox (QUAVON_SANDBOX_SIGNING_KEY_FILE)"))
	}
	if w.Deps.Scanner == nil {
		return errors.New("fixjob: no secret scanner")
	}

	rd, err := w.Deps.GitHub.Reader(ctx, repo)
	if err != nil {
		return retryOrFail(ReasonGitHubError, err)
	}
	var tg *target
	var refused *refusal
	if run.Subject == fix.SubjectPullRequest {
		tg, refused, err = w.reviewTarget(ctx, rd, run, repo, reviewed)
	} else {
		tg, refused, err = w.issueTarget(ctx, rd, run, log)
	}
	switch {
	case err != nil:
		return retryOrFail(ReasonGitHubError, err)
	case refused != nil:
		return w.endAs(ctx, tenant, run.ID, refused.to, refused.reason, refused.detail)
	}

	gitRepo, tip, release, err := w.Deps.GitHub.FetchBase(ctx, a.TenantID, repo, tg.branch)
	if err != nil {
		return retryOrFail(ReasonBaseUnavailable, err)
	}
	defer release()
	if tg.want != "" && tip != tg.want {
		// The head branch moved between the live read and the fetch (FX16).
		return w.endAs(ctx, tenant, run.ID, fix.StatusIneligible, fix.ReasonHeadMoved, headMoved(tg.want, tip))
	}
	tree, err := gitRepo.Tree(ctx, tip)
	if err != nil {
		return retryOrFail(ReasonBaseUnavailable, err)
	}
	blobs, err := gitRepo.Blobs(ctx)
	if err != nil {
		return retryOrFail(ReasonBaseUnavailable, err)
	}
	defer blobs.Close()

	cfg := fixagent.Config{
		Model: budget.Model(model), Base: patch.FromTree(tree, blobs),
		Fresh: func() (*patch.Listing, error) {
			t, err := gitRepo.Tree(ctx, tip)
			if err != nil {
				return nil, err
			}
			return patch.FromTree(t, blobs), nil
		},
		Paths: fixagent.PathPolicyOf(fp), Limits: fixagent.LimitsOf(fp.Limits), Scanner: w.Deps.Scanner,
		HasTest: hasTest, HasLint: hasLint, Issue: tg.issue, Review: tg.review, Log: log,
		OnStep: func(s agent.Step) {
			log.Debug("fix step", slog.Int("n", s.N), slog.String("tool", s.Tool), slog.String("outcome", s.Outcome))
		},
	}
	if hasTest || hasLint {
		class := ImageClassOf(tree)
		if class == "" {
			return failNow(ReasonNoImageClass, errors.New("no go.mod, package.json, pyproject.toml, setup.py or requirements.txt at the root: no sandbox image for the tests"))
		}
		files, _ := gitrepo.TreeFiles(tree, blobs)
		egress := sandbox.Egress{Mode: sandbox.EgressNone}
		if fp.Egress == policy.EgressRegistries {
			egress = sandbox.Egress{Mode: sandbox.EgressRegistries, Hosts: fp.Registries}
		}
		runner := &sandboxrun.Recorder{Client: w.Deps.Sandbox, DB: w.DB, Tenant: tenant, RepositoryID: run.RepositoryID,
			FixRunID: run.ID}
		cfg.Sandbox = &fixagent.JobSandbox{Runner: runner, TenantID: a.TenantID, Base: files, ImageClass: class,
			SetupCommand: fp.SetupCommand, SetupEgress: egress, TestCommand: fp.TestCommand, LintCommand: fp.LintCommand,
			Limits: fixagent.JobLimits(fp.Limits), Env: map[sandbox.SandboxEnvKey]string{sandbox.EnvCI: "true"}}
	}
	now := time.Now
	if w.Deps.Now != nil {
		now = w.Deps.Now
	}
	log.Info("fix run starting", slog.String("base", tip), slog.Int("files", len(tree.Entries)))
	verdicts, err := eff.VerdictsSHA256()
	if err != nil {
		return err
	}
	ended, err := fixrun.Execute(ctx, w.DB, fixrun.Run{Tenant: tenant, ID: run.ID,
		Base:         fix.Base{SHA: tip, Ref: tg.branch, HeadRepoExternalID: tg.headRepo},
		PolicySHA256: verdicts,
		Private:      tg.private, Agent: cfg, Budget: budget, ApprovalTTL: w.Deps.ApprovalTTL, Now: now,
		QueuePublish: func(ctx context.Context, tx pgx.Tx, outputID string) error {
			_, err := river.ClientFromContext[pgx.Tx](ctx).InsertTx(ctx, tx, publish.Job{Tenant: tenant, OutputID: outputID}, nil)
			return err
		}})
	if err != nil {
		// fixrun ended the run failed when the agent itself failed; a run
		// left running is failed as interrupted by the retry.
		return err
	}
	log.Info("fix run ended", slog.String("status", string(ended.Status)), slog.String("reason", ended.Reason))
	return nil
}

// end moves a queued run to failed with reason (a run that moved on
// meanwhile is left alone).
func (w *Worker) end(ctx context.Context, tenant postgres.TenantID, id, reason, detail string) error {
	return w.endAs(ctx, tenant, id, fix.StatusFailed, reason, detail)
}

// endAs moves a queued run to the terminal status to with reason (a run
// that moved on meanwhile is left alone).
func (w *Worker) endAs(ctx context.Context, tenant postgres.TenantID, id string, to fix.Status, reason, detail string) error {
	err := w.DB.InTenant(context.WithoutCancel(ctx), tenant, func(tx pgx.Tx) error {
		_, err := fix.Transition(ctx, tx, id, to, fix.Why{Reason: reason, Detail: detail})
		return ignoreMoved(err)
	})
	if err != nil {
		return fmt.Errorf("fix run %s: ending it %s: %w", id, reason, err)
	}
	return nil
}

func ignoreMoved(err error) error {
	if errors.Is(err, fix.ErrTerminal) || errors.Is(err, fix.ErrTransition) {
		return nil
	}
	return err
}

// issuePrompt is the issue as the agent is told it: the title and text
// (whoever wrote them), and the comments of users whose permission on the
// repository is write or admin now (CH5), the most recent
// fixagent.MaxCommentsShown of them, oldest first. Bots' comments, and
// those of everyone else, are left out.
func (w *Worker) issuePrompt(ctx context.Context, rd github.Reader, is github.Issue, log *slog.Logger) (fixagent.Issue, error) {
	out := fixagent.Issue{Number: is.Number, Title: is.Title, Body: is.Body}
	cs, err := rd.IssueComments(ctx, is.Number)
	if err != nil {
		return out, err
	}
	perms := map[string]bool{}
	var kept []string
	left := 0
	for i := len(cs) - 1; i >= 0 && len(kept) < fixagent.MaxCommentsShown; i-- {
		c := cs[i]
		if c.AuthorType != "User" || c.Author == "" || strings.TrimSpace(c.Body) == "" {
			continue
		}
		can, seen := perms[c.Author]
		if !seen {
			if len(perms) == maxPermissionLookups {
				left++
				continue
			}
			p, err := rd.CollaboratorPermission(ctx, c.Author)
			switch {
			case errors.Is(err, github.ErrNotCollaborator):
				p = github.PermissionNone
			case err != nil:
				return out, fmt.Errorf("the permission of a commenter: %w", err)
			}
			can = github.CanTrigger(p)
			perms[c.Author] = can
		}
		if can {
			kept = append(kept, "@"+c.Author+" wrote:\n"+c.Body)
		}
	}
	if left > 0 {
		log.Info("fix run: older comments not checked", slog.Int("comments", left))
	}
	slices.Reverse(kept)
	out.Comments = kept
	return out, nil
}

// ImageClassOf picks the sandbox image class of the repository's tests
// from the build files at its root: go.mod (go), package.json (node),
// pyproject.toml, setup.py or requirements.txt (python); "" when none.
func ImageClassOf(tree *gitrepo.Tree) string {
	for _, m := range []struct{ file, class string }{
		{"go.mod", "go"}, {"package.json", "node"}, {"pyproject.toml", "python"}, {"setup.py", "python"}, {"requirements.txt", "python"},
	} {
		if e, ok := tree.Entries[m.file]; ok && e.Mode.Regular() {
			return m.class
		}
	}
	return ""
}
