// Package job is the worker's review run: the River job that takes a
// queued review_runs row through internal/review/engine and leaves its
// findings and outputs in the database.
//
//	queued → running           (transaction 1: the effective policy's modes,
//	                            the merge base, the last reviewed head)
//	running → completed        (transaction 2, with the job's completion:
//	                            findings classified against what the pull
//	                            request showed, one pending_outputs row per
//	                            review and check run: ready in mode on,
//	                            stored in shadow)
//	running → failed           (the model budget ran out: a "review
//	                            incomplete" note, mode on; or an error)
//	queued|running → cancelled (superseded or closed meanwhile: the
//	                            second transaction finds the run terminal
//	                            and writes nothing)
//
// The engine runs between the two transactions, holding no database
// connection. A job interrupted before transaction 2 leaves the run
// running; its retry starts over from the fetch (findings and outputs are
// written only in transaction 2, at most once per run).
//
// Publishing is the publisher's (its own River queue): an output row with
// status ready is the hand-off; this package inserts no publish job.
package job

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
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/quavon/quavon/internal/acceptance/check"
	"github.com/quavon/quavon/internal/gitrepo"
	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/queues"
	"github.com/quavon/quavon/internal/repos"
	"github.com/quavon/quavon/internal/review"
	"github.com/quavon/quavon/internal/review/engine"
	"github.com/quavon/quavon/internal/sandbox/valkeyq"
)

// RunArgs is the job of one review run.
type RunArgs struct {
	TenantID string `json:"tenant_id"`
	RunID    string `json:"run_id"`
}

// Kind is River's job kind.
func (RunArgs) Kind() string { return "review_run" }

// InsertOpts puts the job on the review queue.
func (RunArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: queues.Review, MaxAttempts: 3}
}

// Repo is what a review needs to know of its repository.
type Repo struct {
	ID             string
	Host           string
	Owner, Name    string
	Private        bool
	InstallationID int64 // the review app's
}

// FullName is "owner/name".
func (r Repo) FullName() string { return r.Owner + "/" + r.Name }

// Fetcher brings a pull request's head and base into a repository the
// engine reads.
type Fetcher interface {
	// Fetch fetches pull request pr of repo (its head, and base branch
	// baseRef) for tenant, and returns the repository and the base
	// branch's tip. release frees the repository.
	Fetch(ctx context.Context, tenant string, repo Repo, pr int, baseRef string) (r *gitrepo.Repo, baseTip string, release func(), err error)
}

// PullRequests reads a pull request's title and body, live.
type PullRequests interface {
	Text(ctx context.Context, repo Repo, pr int) (title, body string, err error)
}

// Models gives a run its model inside its budget; a nil model means no
// model is configured (the run reviews with the scanners only).
type Models interface {
	ReviewModel(ctx context.Context, tenant string) (llm.Model, *llm.Budget, error)
}

// Deps are the review run's collaborators.
type Deps struct {
	Fetch   Fetcher
	PRs     PullRequests
	Models  Models
	Sandbox *valkeyq.Client // nil: the scanners are reported as not run
	Limits  engine.Limits
	// Issues reads the repository for the acceptance-criteria check with
	// the review app's read token; nil: the check is not run.
	Issues func(ctx context.Context, repo Repo) (check.Reader, error)
	// Acceptance gives the judge its model inside the acceptance budget;
	// nil: criteria are listed unclear, no model is called.
	Acceptance check.Models
	Log        *slog.Logger
	// OnTimings, when set, hears each run's time outside the sandbox and
	// the model (the benchmark's measure).
	OnTimings func(Timings)
}

// Timings of one run.
type Timings struct {
	Total, Sandbox, Model time.Duration
	// Fetch is the git fetch of the head and base.
	Fetch time.Duration
}

// Worker works review_run jobs.
type Worker struct {
	river.WorkerDefaults[RunArgs]
	DB   *postgres.DB
	Deps Deps
}

// Timeout bounds one run (fetch, model, scanners).
func (w *Worker) Timeout(*river.Job[RunArgs]) time.Duration { return 30 * time.Minute }

// Reasons of failed runs.
const (
	ReasonBudget    = "budget_exceeded"
	ReasonHeadGone  = "head_unavailable"
	ReasonError     = "review_error"
	reasonModeOff   = "review_off"
	maxDetailLength = 500
)

// Work runs one review.
func (w *Worker) Work(ctx context.Context, job *river.Job[RunArgs]) error {
	a := job.Args
	if a.TenantID == "" || a.RunID == "" {
		return river.JobCancel(errors.New("job without tenant or run"))
	}
	log := w.Deps.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tenant := postgres.TenantID(a.TenantID)
	t0 := time.Now()

	// Transaction 1: read the run, its repository and policy; start it.
	var run *review.Run
	var repo Repo
	var eff policy.Effective
	var prev *review.Run
	err := w.DB.InTenant(ctx, tenant, func(tx pgx.Tx) error {
		var err error
		if run, err = review.Get(ctx, tx, a.RunID); err != nil {
			return err
		}
		if run.Status.Terminal() {
			return nil
		}
		if repo, err = LoadRepo(ctx, tx, run.RepositoryID); err != nil {
			return err
		}
		doc, _, err := repos.Policy(ctx, tx, repo.ID, false)
		if err != nil {
			return err
		}
		eff = policy.Resolve(doc, policy.RepoFacts{Private: repo.Private})
		prev, err = lastReviewed(ctx, tx, run)
		return err
	})
	if errors.Is(err, review.ErrNotFound) {
		return nil // swept, or its repository deleted
	}
	if err != nil {
		return err
	}
	if run.Status.Terminal() {
		return w.complete(ctx, tenant, job, nil)
	}
	if eff.ReviewMode() == policy.ModeOff && eff.SASTMode() == policy.ModeOff {
		return w.complete(ctx, tenant, job, func(tx pgx.Tx) error {
			_, err := review.Transition(ctx, tx, run.ID, review.StatusSkipped, review.Why{Reason: reasonModeOff})
			return ignoreTerminal(err)
		})
	}

	tFetch := time.Now()
	repoDir, baseTip, release, err := w.Deps.Fetch.Fetch(ctx, a.TenantID, repo, run.PRNumber, run.BaseRef)
	fetched := time.Since(tFetch)
	if err != nil {
		return w.fail(ctx, tenant, job, run, ReasonHeadGone, err, false)
	}
	defer release()
	if _, err := repoDir.ResolveCommit(ctx, run.HeadSHA); err != nil {
		return w.fail(ctx, tenant, job, run, ReasonHeadGone, fmt.Errorf("the head %.12s is not in the repository (force-pushed away?)", run.HeadSHA), false)
	}
	mergeBase, err := repoDir.MergeBase(ctx, baseTip, run.HeadSHA)
	if err != nil {
		return w.fail(ctx, tenant, job, run, ReasonHeadGone, err, false)
	}
	since := ""
	if prev != nil && !run.FullReview && prev.HeadSHA != run.HeadSHA {
		// Incremental only when the last reviewed head is an ancestor
		// (after a force-push it is not: everything is reviewed).
		if mb, err := repoDir.MergeBase(ctx, prev.HeadSHA, run.HeadSHA); err == nil && mb == prev.HeadSHA {
			since = prev.HeadSHA
		}
	}
	modes := review.Modes{Review: string(eff.ReviewMode()), SAST: string(eff.SASTMode()), Acceptance: string(eff.AcceptanceMode())}
	err = w.DB.InTenant(ctx, tenant, func(tx pgx.Tx) error {
		var err error
		if run.Status == review.StatusRunning {
			// A retry of an interrupted attempt: nothing of it was kept
			// but the start.
			return nil
		}
		run, err = review.Start(ctx, tx, run.ID, modes, mergeBase, since)
		return err
	})
	if errors.Is(err, review.ErrTerminal) {
		return w.complete(ctx, tenant, job, nil) // cancelled meanwhile
	}
	if err != nil {
		return err
	}

	title, body, err := w.Deps.PRs.Text(ctx, repo, run.PRNumber)
	if err != nil {
		return w.fail(ctx, tenant, job, run, ReasonError, fmt.Errorf("reading the pull request: %w", err), false)
	}
	in := engine.Input{Repo: repoDir, MergeBase: mergeBase, Head: run.HeadSHA, Since: since, Title: title, Body: body,
		Review: eff.Policy.Features.Review, SAST: eff.Policy.Features.SAST, SASTOff: eff.SASTMode() == policy.ModeOff,
		TenantID: a.TenantID, Limits: w.Deps.Limits, Log: log}
	if w.Deps.Sandbox != nil {
		in.Sandbox = &sandboxrun.Recorder{Client: w.Deps.Sandbox, DB: w.DB, Tenant: tenant, RepositoryID: run.RepositoryID,
			ReviewRunID: run.ID}
	}
	var budget *llm.Budget
	modelName := ""
	if eff.ReviewMode() != policy.ModeOff && w.Deps.Models != nil {
		m, b, err := w.Deps.Models.ReviewModel(ctx, a.TenantID)
		if err != nil {
			return w.fail(ctx, tenant, job, run, ReasonError, fmt.Errorf("the review model: %w", err), false)
		}
		in.Model, budget = m, b
		if m != nil {
			modelName = m.Info().Model
		}
	}
	out, err := engine.Run(ctx, in)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("review run %s interrupted: %w", run.ID, context.Cause(ctx))
		}
		return w.fail(ctx, tenant, job, run, ReasonError, err, false)
	}
	usage := review.Usage{Model: modelName}
	if budget != nil {
		usage.Calls = budget.Calls()
		spent := budget.Spent()
		usage.InputTokens, usage.CostMicros = spent.Tokens, int64(spent.Cost)
	}
	if out.ModelStop == "budget" {
		return w.fail(ctx, tenant, job, run, ReasonBudget, errors.New(out.ModelFailed), true)
	}
	ac, acPart := w.acceptance(ctx, tenant, run, repo, body, eff.AcceptanceMode(), out, log)

	// Transaction 2: findings, outputs, completion, and the job.
	err = w.complete(ctx, tenant, job, func(tx pgx.Tx) error {
		shown, err := review.Shown(ctx, tx, run.RepositoryID, run.PRNumber, run.ID)
		if err != nil {
			return err
		}
		var previous []review.StoredFinding
		if last, err := lastReviewed(ctx, tx, run); err != nil {
			return err
		} else if last != nil {
			if previous, err = review.Findings(ctx, tx, last.ID); err != nil {
				return err
			}
		}
		c := review.Classify(out.Findings, shown, previous, review.Head{
			Read:         func(p string) ([]byte, bool) { return out.Plan.ReadFile(ctx, p) },
			ScannedClean: out.ScannedClean,
		})
		if _, err := review.AddFindings(ctx, tx, run.ID, c.All()); err != nil {
			return err
		}
		llmPart, sastPart := review.PartSkipped, review.PartSkipped
		if in.Model != nil {
			llmPart = review.PartOK
			if out.ModelFailed != "" {
				llmPart = review.PartPartial
			}
		}
		if !in.SASTOff {
			switch {
			case out.Scan == nil:
				sastPart = review.PartFailed
			case out.Scan.Incomplete():
				sastPart = review.PartPartial
			default:
				sastPart = review.PartOK
			}
			if err := review.SetSASTTools(ctx, tx, run.ID, out.ToolStatuses()); err != nil {
				return err
			}
		}
		if err := review.SetPart(ctx, tx, run.ID, review.PartLLM, llmPart); err != nil {
			return err
		}
		if err := review.SetPart(ctx, tx, run.ID, review.PartSAST, sastPart); err != nil {
			return err
		}
		if err := review.SetPart(ctx, tx, run.ID, review.PartAcceptance, acPart); err != nil {
			return err
		}
		p := review.NewPayload(run, publishable(c, eff), out.Plan.Changed, eff.Policy.Features.Review.MaxFindings)
		p.Model, p.ModelFailed, p.Usage, p.Skipped = modelName, out.ModelFailed, usage, out.Skipped
		if p.Skipped == nil {
			p.Skipped = []review.SkippedFile{}
		}
		p.SAST = out.PayloadSAST(eff.SASTMode() != policy.ModeOn)
		if eff.AcceptanceMode() == policy.ModeOn {
			p.AC = ac.Payload()
		}
		if err := w.outputs(ctx, tx, tenant, run, eff, p); err != nil {
			return err
		}
		_, err = review.Complete(ctx, tx, run.ID, review.Result{Summary: out.Summary, DroppedUnverified: out.Dropped.Total(),
			SkippedFiles: out.Skipped, Usage: usage})
		return err
	})
	if w.Deps.OnTimings != nil && err == nil {
		w.Deps.OnTimings(Timings{Total: time.Since(t0), Sandbox: time.Duration(out.SASTMillis) * time.Millisecond,
			Model: time.Duration(out.ModelMillis) * time.Millisecond, Fetch: fetched})
	}
	return err
}

// acceptance is the run's acceptance-criteria check (internal/acceptance/
// check): the head's stored check, or a new one. Nothing of it can fail
// the run: an error leaves the part failed and no table.
func (w *Worker) acceptance(ctx context.Context, tenant postgres.TenantID, run *review.Run, repo Repo, body string, mode policy.Mode,
	out *engine.Output, log *slog.Logger) (*check.Stored, review.PartStatus) {
	if mode == policy.ModeOff || w.Deps.Issues == nil {
		return nil, review.PartSkipped
	}
	rd, err := w.Deps.Issues(ctx, repo)
	if err == nil {
		var ac *check.Stored
		ac, err = check.Run(ctx, w.DB, check.Input{Tenant: tenant, RepositoryID: run.RepositoryID, Owner: repo.Owner, Name: repo.Name,
			Host: repo.Host, RunID: run.ID, PR: run.PRNumber, HeadSHA: run.HeadSHA, HeadRef: run.HeadRef, Body: body,
			Mode: string(mode), Reader: rd, Models: w.Deps.Acceptance, Changed: out.Plan.Changed,
			DiffText: func() string { return engine.DiffText(ctx, out.Plan, check.MaxDiffBytes) }, Log: log})
		if err == nil {
			switch ac.Status {
			case "completed":
				return ac, review.PartOK
			case "skipped":
				return ac, review.PartSkipped
			default:
				return ac, review.PartFailed
			}
		}
	}
	log.Warn("acceptance check failed", slog.String("run", run.ID), slog.String("error", err.Error()))
	return nil, review.PartFailed
}

// publishable leaves out of the published outputs the findings of a part
// in shadow mode (they are stored all the same): the scanners' own in
// SAST shadow, the model's own in review shadow.
func publishable(c review.Classified, eff policy.Effective) review.Classified {
	keep := func(f review.Finding) bool {
		model := f.Source == review.SourceLLM || slices.Contains(f.Tools, review.ToolLLM)
		scanner := f.Source == review.SourceSAST
		return (model && eff.ReviewMode() == policy.ModeOn) || (scanner && eff.SASTMode() == policy.ModeOn)
	}
	out := c
	out.New, out.Resolved = nil, nil
	for _, f := range c.New {
		if keep(f) {
			out.New = append(out.New, f)
		}
	}
	for _, f := range c.Resolved {
		if keep(f) {
			out.Resolved = append(out.Resolved, f)
		}
	}
	return out
}

// outputs stores the run's review and check run outputs (and its SARIF
// upload when the policy asks for one): ready in mode on, each with its
// publish job in this transaction; stored in shadow.
func (w *Worker) outputs(ctx context.Context, tx pgx.Tx, tenant postgres.TenantID, run *review.Run, eff policy.Effective, p review.Payload) error {
	status := publish.OutputReady
	if eff.ReviewMode() != policy.ModeOn && eff.SASTMode() != policy.ModeOn && p.AC == nil {
		status = publish.OutputStored
	}
	type out struct {
		kind    publish.Kind
		payload any
	}
	outs := []out{{publish.KindReview, p}, {publish.KindCheckRun, p}}
	if status == publish.OutputReady && p.SAST != nil && p.SAST.Failed == "" && eff.Policy.Features.SAST.UploadSarif {
		tools := p.Render("").SAST.Tools
		outs = append(outs, out{publish.KindSARIF, publish.SARIFPayload{PullRequest: run.PRNumber, HeadSHA: run.HeadSHA,
			Ref: fmt.Sprintf("refs/pull/%d/head", run.PRNumber), Tools: tools}})
	}
	for _, o := range outs {
		created, err := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: run.RepositoryID, Kind: o.kind, ReviewRunID: run.ID,
			Status: status, Payload: o.payload, Bound: publish.Bound{HeadSHA: run.HeadSHA}})
		if err != nil {
			return err
		}
		if status == publish.OutputReady {
			if err := w.queuePublish(ctx, tx, tenant, created.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

// queuePublish inserts the publish job of a ready output in the caller's
// transaction (the publisher's sweep re-queues any whose job is gone).
func (w *Worker) queuePublish(ctx context.Context, tx pgx.Tx, tenant postgres.TenantID, outputID string) error {
	_, err := river.ClientFromContext[pgx.Tx](ctx).InsertTx(ctx, tx, publish.Job{Tenant: tenant, OutputID: outputID}, nil)
	return err
}

// complete applies fn (nil: nothing) and completes the job in one tenant
// transaction. A run that became terminal meanwhile (superseded, closed)
// makes fn's work roll back: the job completes with nothing written.
func (w *Worker) complete(ctx context.Context, tenant postgres.TenantID, job *river.Job[RunArgs], fn func(pgx.Tx) error) error {
	err := w.DB.InTenant(ctx, tenant, func(tx pgx.Tx) error {
		if fn != nil {
			if err := fn(tx); err != nil {
				return err
			}
		}
		_, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, job)
		return err
	})
	if fn != nil && (errors.Is(err, review.ErrTerminal) || errors.Is(err, review.ErrTransition)) {
		return w.complete(ctx, tenant, job, nil)
	}
	return err
}

// fail ends the run as failed with reason; with note (mode on) a short
// "review incomplete" review output is stored for the publisher.
func (w *Worker) fail(ctx context.Context, tenant postgres.TenantID, job *river.Job[RunArgs], run *review.Run, reason string,
	cause error, note bool) error {
	detail := cause.Error()
	if len(detail) > maxDetailLength {
		detail = detail[:maxDetailLength]
	}
	return w.complete(ctx, tenant, job, func(tx pgx.Tx) error {
		if _, err := review.Transition(ctx, tx, run.ID, review.StatusFailed, review.Why{Reason: reason, Detail: detail}); err != nil {
			return err
		}
		if !note || run.ReviewMode != string(policy.ModeOn) {
			return nil
		}
		p := review.Payload{Version: review.PayloadVersion, RunID: run.ID, PR: run.PRNumber, HeadSHA: run.HeadSHA,
			Inline: []review.PayloadFinding{}, Outside: []review.PayloadFinding{}, Resolved: []review.PayloadFinding{},
			Skipped: []review.SkippedFile{}, Incomplete: "review incomplete: " + strings.TrimSpace(detail)}
		o, err := publish.CreateOutput(ctx, tx, publish.NewOutput{RepositoryID: run.RepositoryID, Kind: publish.KindReview,
			ReviewRunID: run.ID, Status: publish.OutputReady, Payload: p, Bound: publish.Bound{HeadSHA: run.HeadSHA}})
		if err != nil {
			return err
		}
		return w.queuePublish(ctx, tx, tenant, o.ID)
	})
}

// LoadRepo reads repository id in the caller's tenant transaction.
func LoadRepo(ctx context.Context, tx pgx.Tx, id string) (Repo, error) {
	var repo Repo
	if err := tx.QueryRow(ctx, `SELECT id::text, host, owner, name, visibility <> 'public', coalesce(review_installation_id, 0)
		FROM repositories WHERE id = $1`, id).
		Scan(&repo.ID, &repo.Host, &repo.Owner, &repo.Name, &repo.Private, &repo.InstallationID); err != nil {
		return Repo{}, fmt.Errorf("repository %s: %w", id, err)
	}
	return repo, nil
}

// lastReviewed is the pull request's latest completed run of another head
// (or of this head, for a forced re-review), nil when there is none.
func lastReviewed(ctx context.Context, tx pgx.Tx, run *review.Run) (*review.Run, error) {
	runs, err := review.ForPR(ctx, tx, run.RepositoryID, run.PRNumber)
	if err != nil {
		return nil, err
	}
	var last *review.Run
	for _, r := range runs {
		if r.ID != run.ID && r.Status == review.StatusCompleted && (last == nil || r.FinishedAt != nil && last.FinishedAt != nil && r.FinishedAt.After(*last.FinishedAt)) {
			last = r
		}
	}
	return last, nil
}

func ignoreTerminal(err error) error {
	if errors.Is(err, review.ErrTerminal) || errors.Is(err, review.ErrTransition) {
		return nil
	}
	return err
}
