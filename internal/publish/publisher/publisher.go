package publisher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/github/writer"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/publish"
	"github.com/quavon/quavon/internal/publish/render"
	"github.com/quavon/quavon/internal/repos"
	"github.com/quavon/quavon/internal/review"
)

// Refusal reasons (publish_intents.reason, pending_outputs.reason).
const (
	ReasonFixNotHandled         = "fix_not_handled"
	ReasonSuperseded            = review.ReasonSuperseded
	ReasonRunEnded              = publish.ReasonRunEnded
	ReasonPolicyOff             = "policy_off"
	ReasonSARIFOff              = "sarif_off"
	ReasonRepositoryArchived    = "repository_archived"
	ReasonRepositoryNotCovered  = "repository_not_covered"
	ReasonInstallationMissing   = "installation_missing"
	ReasonInstallationSuspended = "installation_suspended"
	ReasonCodeScanningNotGrant  = "code_scanning_not_granted"
	ReasonGitHubRefused         = "github_refused"
	ReasonInvalidPayload        = "invalid_payload"
)

// cancelling reasons end a not yet attempted intent as cancelled (nothing
// is wrong, there is just nothing to publish any more); every other
// refusal fails it.
var cancelling = map[string]bool{ReasonSuperseded: true, ReasonRunEnded: true, ReasonPolicyOff: true, ReasonSARIFOff: true}

// Outcome is what Publish did.
type Outcome string

// Outcomes.
const (
	// OutcomePublished: written now, or found by reconcile.
	OutcomePublished Outcome = "published"
	// OutcomeAlready: the output was settled before (a redelivered job).
	OutcomeAlready Outcome = "already"
	// OutcomeCancelled and OutcomeFailed: refused, with the reason.
	OutcomeCancelled Outcome = "cancelled"
	OutcomeFailed    Outcome = "failed"
	// OutcomeNotReady: the output is stored only or awaits approval.
	OutcomeNotReady Outcome = "not_ready"
	// OutcomeNotHandled: a fix output; left untouched.
	OutcomeNotHandled Outcome = "not_handled"
)

// Result is Publish's report.
type Result struct {
	Outcome Outcome
	Reason  string
	// External is the GitHub id recorded.
	External string
	// Reconciled says an earlier attempt's write was found, not repeated.
	Reconciled bool
}

// CheckRunName is the check run's name on every commit.
const CheckRunName = render.Product

// Config configures a Publisher.
type Config struct {
	// ReviewAppSlug is the review app's slug: its bot login is
	// "<slug>[bot]", and reconcile trusts only what that login wrote.
	ReviewAppSlug string
	// WriteTimeout bounds one attempt's GitHub calls; 0 means 2 minutes.
	WriteTimeout time.Duration
	// Fix publishes fix_pr outputs; nil leaves them untouched
	// (fix_not_handled).
	Fix *FixConfig
}

// Reviewers makes the review app's writer for a repository (tests and the
// assembly pass writer.NewReviewer over a github.Conn on the broker).
type Reviewers func(ctx context.Context, installationID int64, repo string) (*writer.Reviewer, error)

// ConnReviewers returns Reviewers over conn.
func ConnReviewers(conn *github.Conn) Reviewers {
	return func(ctx context.Context, installationID int64, repo string) (*writer.Reviewer, error) {
		return writer.NewReviewer(ctx, conn, installationID, repo)
	}
}

// Publisher publishes outputs.
type Publisher struct {
	db        *postgres.DB
	reviewers Reviewers
	cfg       Config
	spacer    *Spacer
	log       *slog.Logger
}

// New returns a Publisher. spacer may be nil (no spacing: tests).
func New(db *postgres.DB, reviewers Reviewers, cfg Config, spacer *Spacer, log *slog.Logger) (*Publisher, error) {
	if db == nil || reviewers == nil {
		return nil, errors.New("publisher.New: a database and a writer source are required")
	}
	if cfg.ReviewAppSlug == "" {
		return nil, errors.New("publisher.New: the review app's slug is required (reconcile trusts only its bot)")
	}
	if cfg.Fix != nil {
		if err := cfg.Fix.validate(); err != nil {
			return nil, err
		}
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 2 * time.Minute
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Publisher{db: db, reviewers: reviewers, cfg: cfg, spacer: spacer, log: log}, nil
}

// facts is what the re-checks and the write need, read in the decide
// transaction.
type facts struct {
	out    *publish.Output
	intent *publish.Intent
	run    *review.Run
	repo   repoRow
	inst   instRow
	eff    policy.Effective
}

type repoRow struct {
	host, owner, name, visibility string
	archived                      bool
	installation                  int64 // review_installation_id, 0 when not covered
}

type instRow struct {
	found       bool
	suspended   bool
	permissions github.Permissions
}

// ErrSpaced is returned (wrapped in a *SpacedError) when the repository
// wrote too recently; the job snoozes.
var ErrSpaced = errors.New("publisher: spaced")

// SpacedError says how long to wait before the next write of a repository.
type SpacedError struct{ Wait time.Duration }

func (e *SpacedError) Error() string   { return "publisher: spaced for " + e.Wait.String() }
func (e *SpacedError) Is(t error) bool { return t == ErrSpaced }

// Publish publishes output outputID of tenant (see the package doc).
func (p *Publisher) Publish(ctx context.Context, tenant postgres.TenantID, outputID string) (Result, error) {
	var (
		f       facts
		res     Result
		done    bool
		isFix   bool
		refusal string
	)
	err := p.db.InTenant(ctx, tenant, func(tx pgx.Tx) error {
		f, res, done, isFix, refusal = facts{}, Result{}, false, false, ""
		o, err := publish.GetOutput(ctx, tx, outputID)
		if err != nil {
			return err
		}
		f.out = o
		switch {
		case (o.Kind == publish.KindFixPR || o.Kind == publish.KindFixCommit) && p.cfg.Fix != nil:
			// A fix_commit output is a review fix: while review fixes
			// await sign-off, publishFix refuses it (not_signed_off).
			isFix = true
			return nil
		case o.Kind == publish.KindFixPR || o.Kind == publish.KindFixCommit:
			res, done = Result{Outcome: OutcomeNotHandled, Reason: ReasonFixNotHandled}, true
			return nil
		}
		if r, ok := settled(o); ok {
			res, done = r, true
			return nil
		}
		in, _, err := publish.EnsureIntent(ctx, tx, o.ID)
		if err != nil {
			return err
		}
		f.intent = in
		if err := p.readFacts(ctx, tx, &f); err != nil {
			return err
		}
		refusal = recheck(ctx, tx, &f)
		if refusal != "" && in.Attempts == 0 {
			// Nothing was ever written: end it here.
			if cancelling[refusal] {
				_, err = publish.Cancel(ctx, tx, in.ID, refusal)
				res = Result{Outcome: OutcomeCancelled, Reason: refusal}
			} else {
				_, err = publish.Fail(ctx, tx, in.ID, refusal, "refused at publish time")
				res = Result{Outcome: OutcomeFailed, Reason: refusal}
			}
			done = true
			return err
		}
		if refusal == "" && p.spacer != nil {
			if wait := p.spacer.Reserve(f.repo.installation); wait > 0 {
				return &SpacedError{Wait: wait}
			}
		}
		// Claimed and committed before anything is written.
		if _, _, err := publish.Claim(ctx, tx, in.ID); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrSpaced) {
			return Result{}, err
		}
		return Result{}, fmt.Errorf("publisher.Publish %s: %w", outputID, err)
	}
	if isFix {
		return p.publishFix(ctx, tenant, outputID)
	}
	if done {
		p.logResult(f, res)
		return res, nil
	}
	res, err = p.write(ctx, tenant, f, refusal)
	if err != nil {
		return res, fmt.Errorf("publisher.Publish %s: %w", outputID, err)
	}
	p.logResult(f, res)
	return res, nil
}

func (p *Publisher) logResult(f facts, res Result) {
	attrs := []any{slog.String("outcome", string(res.Outcome)), slog.String("reason", res.Reason)}
	if f.out != nil {
		attrs = append(attrs, slog.String("output", f.out.ID), slog.String("kind", string(f.out.Kind)),
			slog.String("repository", f.out.RepositoryID))
	}
	if res.External != "" {
		attrs = append(attrs, slog.String("external_id", res.External), slog.Bool("reconciled", res.Reconciled))
	}
	p.log.Info("publish", attrs...)
}

func (p *Publisher) readFacts(ctx context.Context, tx pgx.Tx, f *facts) error {
	run, err := review.Get(ctx, tx, f.out.ReviewRunID)
	if err != nil {
		return err
	}
	f.run = run
	var inst *int64
	err = tx.QueryRow(ctx, `SELECT host, owner, name, visibility, archived, review_installation_id FROM repositories WHERE id = $1`,
		f.out.RepositoryID).Scan(&f.repo.host, &f.repo.owner, &f.repo.name, &f.repo.visibility, &f.repo.archived, &inst)
	if err != nil {
		return fmt.Errorf("repository: %w", err)
	}
	if inst != nil {
		f.repo.installation = *inst
		var perms []byte
		err := tx.QueryRow(ctx, `SELECT suspended_at IS NOT NULL, permissions FROM installations
			WHERE app_kind = 'review' AND external_id = $1`, *inst).Scan(&f.inst.suspended, &perms)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return fmt.Errorf("installation: %w", err)
		default:
			f.inst.found = true
			if err := json.Unmarshal(perms, &f.inst.permissions); err != nil {
				return fmt.Errorf("installation permissions: %w", err)
			}
		}
	}
	doc, _, err := repos.Policy(ctx, tx, f.out.RepositoryID, false)
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	f.eff = policy.Resolve(doc, policy.RepoFacts{Private: f.repo.visibility != "public"})
	return nil
}

// recheck returns the reason the output may not be published now, or "".
func recheck(ctx context.Context, tx pgx.Tx, f *facts) string {
	run := f.run
	switch {
	case run.Status == review.StatusCancelled && run.Reason == review.ReasonSuperseded, run.SupersededBy != "":
		return ReasonSuperseded
	case run.Status != review.StatusCompleted:
		return ReasonRunEnded
	}
	// A newer run of the pull request that did not fail makes this one
	// stale even before intake cancelled it.
	var newer bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM review_runs WHERE repository_id = $1 AND pr_number = $2
		AND id <> $3 AND (created_at, attempt) > ($4, $5) AND (head_sha <> $6 OR status NOT IN ('failed', 'skipped', 'cancelled')))`,
		run.RepositoryID, run.PRNumber, run.ID, run.CreatedAt, run.Attempt, run.HeadSHA).Scan(&newer); err != nil || newer {
		return ReasonSuperseded
	}
	// The policy: every part the run published under must still be on.
	if f.eff.Invalid != nil {
		return ReasonPolicyOff
	}
	anyOn := false
	for _, part := range []struct {
		then string
		now  policy.Mode
	}{
		{run.ReviewMode, policy.ModeOn}, // no policy switch for the LLM review (yet): only an invalid policy turns it off
		{run.SASTMode, f.eff.SASTMode()},
		{run.AcceptanceMode, f.eff.AcceptanceMode()},
	} {
		if part.then == string(policy.ModeOn) {
			anyOn = true
			if part.now != policy.ModeOn {
				return ReasonPolicyOff
			}
		}
	}
	if !anyOn {
		return ReasonPolicyOff
	}
	if f.out.Kind == publish.KindSARIF && (!f.eff.Policy.Features.SAST.UploadSarif || f.eff.SASTMode() != policy.ModeOn) {
		return ReasonSARIFOff
	}
	switch {
	case f.repo.archived:
		return ReasonRepositoryArchived
	case f.repo.installation == 0:
		return ReasonRepositoryNotCovered
	case !f.inst.found:
		return ReasonInstallationMissing
	case f.inst.suspended:
		return ReasonInstallationSuspended
	case f.out.Kind == publish.KindSARIF && f.inst.permissions["security_events"] != "write":
		return ReasonCodeScanningNotGrant
	}
	return ""
}

// write is the second transaction: lock, reconcile if an earlier attempt
// claimed the intent, write at most once, record.
func (p *Publisher) write(ctx context.Context, tenant postgres.TenantID, f facts, refusal string) (Result, error) {
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
		f.intent = in
		wctx, cancel := context.WithTimeout(ctx, p.cfg.WriteTimeout)
		defer cancel()
		var w *writer.Reviewer
		if refusal == "" || !isInstallationReason(refusal) {
			w, err = p.reviewers(wctx, f.repo.installation, f.repo.owner+"/"+f.repo.name)
			if err != nil {
				attemptErr = fmt.Errorf("writer: %w", err)
				return publish.RecordAttemptError(ctx, tx, in.ID, attemptErr.Error())
			}
		}
		op, err := p.operation(ctx, tx, f)
		if err != nil {
			// A payload that does not decode or render never will.
			if _, ferr := publish.Fail(ctx, tx, in.ID, ReasonInvalidPayload, err.Error()); ferr != nil {
				return ferr
			}
			res = Result{Outcome: OutcomeFailed, Reason: ReasonInvalidPayload}
			return nil
		}
		if in.Attempts > 1 && w != nil {
			id, found, err := op.find(wctx, w)
			if err != nil {
				attemptErr = fmt.Errorf("reconcile: %w", err)
				return publish.RecordAttemptError(ctx, tx, in.ID, attemptErr.Error())
			}
			if found {
				res = Result{Outcome: OutcomePublished, External: id, Reconciled: true}
				return p.record(ctx, tx, f, in.ID, id, op)
			}
		}
		if refusal != "" {
			if _, err := publish.Fail(ctx, tx, in.ID, refusal, "refused at publish time"); err != nil {
				return err
			}
			res = Result{Outcome: OutcomeFailed, Reason: refusal}
			return nil
		}
		id, err := op.write(wctx, w)
		if err != nil {
			if permanent(err) {
				if _, ferr := publish.Fail(ctx, tx, in.ID, ReasonGitHubRefused, err.Error()); ferr != nil {
					return ferr
				}
				res = Result{Outcome: OutcomeFailed, Reason: ReasonGitHubRefused}
				return nil
			}
			// The write may have happened: the next attempt reconciles.
			attemptErr = fmt.Errorf("write: %w", err)
			return publish.RecordAttemptError(ctx, tx, in.ID, attemptErr.Error())
		}
		res = Result{Outcome: OutcomePublished, External: id}
		return p.record(ctx, tx, f, in.ID, id, op)
	})
	if err != nil {
		return Result{}, err
	}
	if attemptErr != nil {
		return Result{}, attemptErr
	}
	return res, nil
}

func isInstallationReason(r string) bool {
	return r == ReasonInstallationMissing || r == ReasonInstallationSuspended || r == ReasonRepositoryNotCovered
}

func lockIntent(ctx context.Context, tx pgx.Tx, id string) (*publish.Intent, error) {
	if _, err := tx.Exec(ctx, `SELECT 1 FROM publish_intents WHERE id = $1 FOR UPDATE`, id); err != nil {
		return nil, err
	}
	return publish.GetIntent(ctx, tx, id)
}

// permanent reports whether GitHub refused a write for good: a validation
// error, a missing pull request or commit, a forbidden write, a payload
// too large. Rate limits, 5xx and lost responses are not.
func permanent(err error) bool {
	if errors.Is(err, github.ErrRateLimited) {
		return false
	}
	return errors.Is(err, github.ErrConflict) || errors.Is(err, github.ErrNotFound) ||
		errors.Is(err, github.ErrForbidden) || errors.Is(err, github.ErrTooLarge)
}

// record stores the result: the intent and output published, and for a
// review the findings it showed marked posted.
func (p *Publisher) record(ctx context.Context, tx pgx.Tx, f facts, intentID, external string, op operation) error {
	if _, err := publish.Published(ctx, tx, intentID, publish.External{ID: external}); err != nil {
		return err
	}
	for _, id := range op.shown {
		if err := review.SetFindingStatus(ctx, tx, id, review.FindingPosted, 0); err != nil && !errors.Is(err, review.ErrNotFound) {
			return err
		}
	}
	return nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// settled answers an output that needs no write: published already, ended,
// or not ready (nor approved) yet.
func settled(o *publish.Output) (Result, bool) {
	switch {
	case o.Status == publish.OutputPublished:
		return Result{Outcome: OutcomeAlready}, true
	case o.Status.Terminal():
		return Result{Outcome: OutcomeAlready, Reason: o.Reason}, true
	case o.Status != publish.OutputReady && o.Status != publish.OutputApproved:
		return Result{Outcome: OutcomeNotReady}, true
	}
	return Result{}, false
}
