package fix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/quavon/quavon/internal/patch"
)

// The store: every function runs in the caller's tenant transaction
// (postgres.DB.InTenant), so row-level security applies.

// Subject is what a run fixes.
type Subject string

// Subjects.
const (
	SubjectIssue       Subject = "issue"
	SubjectPullRequest Subject = "pull_request" // a review fix
)

// Delivery is how a patch is published.
type Delivery string

// Deliveries.
const (
	DeliveryPR        Delivery = "pr"         // a draft PR to the default branch (issue fixes)
	DeliveryStackedPR Delivery = "stacked_pr" // a draft PR into the reviewed pull request's head branch
	DeliveryCommit    Delivery = "commit"     // one compare-and-swap commit on that branch (§7b)
)

// Mode is the effective fix mode when the run was made.
type Mode string

// Modes.
const (
	ModeApproval Mode = "approval"
	ModeAuto     Mode = "auto"
)

// Trigger is what made the run.
type Trigger string

// Triggers.
const (
	TriggerLabel     Trigger = "label"
	TriggerComment   Trigger = "comment"
	TriggerDashboard Trigger = "dashboard"
)

// Actor is a code-host identity (login and numeric id).
type Actor struct {
	Login string
	ID    int64
}

// NewRun is a trigger to record as a queued run.
type NewRun struct {
	RepositoryID string
	Subject      Subject
	Number       int
	// ReviewRunID and FindingIDs: review fixes only.
	ReviewRunID string
	FindingIDs  []string
	Delivery    Delivery
	Mode        Mode
	Trigger     Trigger
	Actor       Actor
	Label       string // TriggerLabel
	CommentID   int64  // TriggerComment
	EventID     string // the webhook_events row, when a webhook triggered it
	RequestedBy string // the Quavon user of a dashboard request
}

// MaxFindings is how many findings one review fix may address (FX14).
const MaxFindings = 20

func (n NewRun) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	switch {
	case n.RepositoryID == "" || n.Number < 1:
		return bad("repository and number are required")
	case n.Actor.Login == "" || n.Actor.ID < 1:
		return bad("the trigger actor's login and id are required")
	case n.Mode != ModeApproval && n.Mode != ModeAuto:
		return bad("mode %q", n.Mode)
	case n.Trigger != TriggerLabel && n.Trigger != TriggerComment && n.Trigger != TriggerDashboard:
		return bad("trigger %q", n.Trigger)
	case len(n.FindingIDs) > MaxFindings:
		return bad("%d findings, at most %d", len(n.FindingIDs), MaxFindings)
	}
	switch n.Subject {
	case SubjectIssue:
		if n.Delivery != DeliveryPR || n.ReviewRunID != "" || len(n.FindingIDs) > 0 {
			return bad("an issue fix is delivered as a pr and has no review run or findings")
		}
	case SubjectPullRequest:
		if n.Delivery != DeliveryStackedPR && n.Delivery != DeliveryCommit || n.ReviewRunID == "" {
			return bad("a review fix needs a review run and the delivery stacked_pr or commit")
		}
	default:
		return bad("subject %q", n.Subject)
	}
	return nil
}

// Usage is a run's model usage.
type Usage struct {
	Model                     string
	InputTokens, OutputTokens int64
	CostMicros                int64
}

// Run is a fix_runs row without its patch (Patch reads that).
type Run struct {
	ID           string
	RepositoryID string
	Subject      Subject
	Number       int
	ReviewRunID  string
	FindingIDs   []string
	Delivery     Delivery
	Mode         Mode
	Trigger      Trigger
	Actor        Actor
	Label        string
	CommentID    int64
	EventID      string
	RequestedBy  string
	Status       Status
	Reason       string
	Detail       string
	// BaseSHA and BaseRef: the commit the agent works on and its branch.
	BaseSHA, BaseRef   string
	HeadRepoExternalID int64
	PatchSHA256        string
	Summary            string
	TestResults        TestResults
	Steps, SandboxRuns int
	Usage              Usage
	CreatedAt          time.Time
	UpdatedAt          time.Time
	StartedAt          *time.Time
	FinishedAt         *time.Time
}

const runColumns = `id::text, repository_id::text, subject, number, coalesce(review_run_id::text, ''), finding_ids::text[],
	delivery, mode, trigger, trigger_actor_login, trigger_actor_id, coalesce(trigger_label, ''), coalesce(trigger_comment_id, 0),
	coalesce(trigger_event_id::text, ''), coalesce(requested_by::text, ''), status, coalesce(reason, ''), detail,
	coalesce(base_sha, ''), base_ref, coalesce(head_repo_external_id, 0), coalesce(patch_sha256, ''), summary, test_results,
	steps, sandbox_runs, model, input_tokens, output_tokens, cost_micros, created_at, updated_at, started_at, finished_at`

func scanRun(row pgx.Row) (*Run, error) {
	var r Run
	var results []byte
	err := row.Scan(&r.ID, &r.RepositoryID, &r.Subject, &r.Number, &r.ReviewRunID, &r.FindingIDs, &r.Delivery, &r.Mode,
		&r.Trigger, &r.Actor.Login, &r.Actor.ID, &r.Label, &r.CommentID, &r.EventID, &r.RequestedBy, &r.Status, &r.Reason,
		&r.Detail, &r.BaseSHA, &r.BaseRef, &r.HeadRepoExternalID, &r.PatchSHA256, &r.Summary, &results, &r.Steps,
		&r.SandboxRuns, &r.Usage.Model, &r.Usage.InputTokens, &r.Usage.OutputTokens, &r.Usage.CostMicros, &r.CreatedAt,
		&r.UpdatedAt, &r.StartedAt, &r.FinishedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(results, &r.TestResults); err != nil {
		return nil, fmt.Errorf("fix: test_results: %w", err)
	}
	return &r, nil
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nullIfZero(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

// Create records a trigger as a queued run.
func Create(ctx context.Context, tx pgx.Tx, n NewRun) (*Run, error) {
	if err := n.validate(); err != nil {
		return nil, err
	}
	findings := n.FindingIDs
	if findings == nil {
		findings = []string{}
	}
	if n.Subject == SubjectPullRequest {
		if err := ofReviewRun(ctx, tx, n); err != nil {
			return nil, err
		}
	}
	r, err := scanRun(tx.QueryRow(ctx, `INSERT INTO fix_runs (tenant_id, repository_id, subject, number, review_run_id, finding_ids,
			delivery, mode, trigger, trigger_actor_login, trigger_actor_id, trigger_label, trigger_comment_id, trigger_event_id, requested_by)
		VALUES (quavon_current_tenant(), $1, $2, $3, $4, $5::text[]::uuid[], $6, $7, $8, $9, $10, $11, $12, $13, $14)
		RETURNING `+runColumns,
		n.RepositoryID, n.Subject, n.Number, nullIfEmpty(n.ReviewRunID), findings, n.Delivery, n.Mode, n.Trigger,
		clip(n.Actor.Login, 100), n.Actor.ID, nullIfEmpty(clip(n.Label, 100)), nullIfZero(n.CommentID),
		nullIfEmpty(n.EventID), nullIfEmpty(n.RequestedBy)))
	if err != nil {
		return nil, fmt.Errorf("fix.Create: %w", err)
	}
	return r, nil
}

// ofReviewRun checks a review fix's review run and findings: the run is
// of the same repository and pull request, and every finding id is a
// finding of that run (FX13: ids from another run are refused). Whether a
// finding may be fixed now (published or pending, not dismissed:
// FixableFindings) is decided by the request and again by the worker.
func ofReviewRun(ctx context.Context, tx pgx.Tx, n NewRun) error {
	distinct := map[string]bool{}
	for _, id := range n.FindingIDs {
		distinct[id] = true
	}
	if len(distinct) != len(n.FindingIDs) {
		return fmt.Errorf("fix.Create: %w: a finding is named twice", ErrInvalid)
	}
	var runs, found int
	err := tx.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM review_runs WHERE id::text = $1 AND repository_id = $2 AND pr_number = $3),
			(SELECT count(*) FROM review_findings WHERE review_run_id::text = $1 AND repository_id = $2 AND id::text = ANY($4::text[]))`,
		n.ReviewRunID, n.RepositoryID, n.Number, n.FindingIDs).Scan(&runs, &found)
	switch {
	case err != nil:
		return fmt.Errorf("fix.Create: the review run: %w", err)
	case runs != 1:
		return fmt.Errorf("%w: review run %s is not a run of this pull request", ErrInvalid, n.ReviewRunID)
	case found != len(n.FindingIDs):
		return fmt.Errorf("%w: %d of %d findings are not findings of review run %s", ErrInvalid, len(n.FindingIDs)-found, len(n.FindingIDs), n.ReviewRunID)
	}
	return nil
}

// Get reads a run.
func Get(ctx context.Context, tx pgx.Tx, id string) (*Run, error) {
	r, err := scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM fix_runs WHERE id = $1`, id))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("fix.Get: %w", err)
	}
	return r, err
}

// Why is the reason code and an optional human detail of a move; the
// detail is redacted and capped (2 KiB).
type Why struct {
	Reason string
	Detail string
}

// moveErr explains why a compare-and-set update changed nothing.
func moveErr(ctx context.Context, tx pgx.Tx, id string, to Status) error {
	var cur Status
	err := tx.QueryRow(ctx, `SELECT status FROM fix_runs WHERE id = $1`, id).Scan(&cur)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return ErrNotFound
	case err != nil:
		return err
	case cur.Terminal():
		return fmt.Errorf("%w: %s (asked for %s)", ErrTerminal, cur, to)
	case CanMove(cur, to) && needsPatch(to):
		return fmt.Errorf("%w: %s needs a recorded patch", ErrInvalid, to)
	}
	return fmt.Errorf("%w: %s → %s", ErrTransition, cur, to)
}

// Transition moves run id to to along an edge of the state machine, from
// whatever state it is in now (compare-and-set). Terminal states other
// than published need a reason. Moves that need data use their own
// functions (Start, RecordPatch before awaiting_approval or publishing).
func Transition(ctx context.Context, tx pgx.Tx, id string, to Status, why Why) (*Run, error) {
	if !to.Valid() {
		return nil, fmt.Errorf("fix.Transition: %w: state %q", ErrInvalid, to)
	}
	if to == StatusRunning {
		return nil, fmt.Errorf("fix.Transition: %w: use Start to run", ErrInvalid)
	}
	if err := checkWhy(to, why); err != nil {
		return nil, fmt.Errorf("fix.Transition: %w", err)
	}
	from := predecessors(to)
	r, err := scanRun(tx.QueryRow(ctx, `UPDATE fix_runs SET status = $2, reason = coalesce($3, reason),
			detail = CASE WHEN $4 = '' THEN detail ELSE $4 END, updated_at = now(),
			finished_at = CASE WHEN $5 THEN now() ELSE finished_at END
		WHERE id = $1 AND status = ANY($6) AND (NOT $7 OR patch_sha256 IS NOT NULL)
		RETURNING `+runColumns,
		id, to, nullIfEmpty(why.Reason), safeText(why.Detail, 2048), to.Terminal(), from, needsPatch(to)))
	if errors.Is(err, ErrNotFound) {
		err = moveErr(ctx, tx, id, to)
	}
	if err != nil {
		return nil, fmt.Errorf("fix.Transition %s: %w", id, checkViolation(err))
	}
	return r, nil
}

// needsPatch reports whether a run in s must have a patch.
func needsPatch(s Status) bool {
	return s == StatusAwaitingApproval || s == StatusApproved || s == StatusPublishing || s == StatusPublished
}

func checkWhy(to Status, why Why) error {
	if why.Reason != "" && !ReasonRE.MatchString(why.Reason) {
		return fmt.Errorf("%w: reason %q: want a lower_snake code", ErrInvalid, why.Reason)
	}
	if needsReason(to) && why.Reason == "" {
		return fmt.Errorf("%w: %s needs a reason", ErrInvalid, to)
	}
	return nil
}

// checkViolation maps a CHECK constraint the row failed (a patch missing
// for awaiting_approval, say) to ErrInvalid.
func checkViolation(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23514" {
		return fmt.Errorf("%w: %s", ErrInvalid, pe.Message)
	}
	return err
}

// Base is the commit a run works on.
type Base struct {
	SHA, Ref string
	// HeadRepoExternalID: review fixes, the pull request's head repository.
	HeadRepoExternalID int64
}

// Start moves a queued run to running on base. Another running run of the
// same issue makes it ErrAlreadyRunning (the run stays queued; the caller
// records it ineligible with ReasonAlreadyRunning). The update runs in a
// savepoint, so tx stays usable.
func Start(ctx context.Context, tx pgx.Tx, id string, base Base) (*Run, error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return nil, err
	}
	r, err := scanRun(sp.QueryRow(ctx, `UPDATE fix_runs SET status = 'running', base_sha = $2, base_ref = $3,
			head_repo_external_id = $4, started_at = now(), updated_at = now()
		WHERE id = $1 AND status = 'queued'
		RETURNING `+runColumns, id, base.SHA, clip(base.Ref, 1024), nullIfZero(base.HeadRepoExternalID)))
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" && pe.ConstraintName == "fix_runs_one_running" {
		_ = sp.Rollback(ctx)
		return nil, fmt.Errorf("fix.Start %s: %w", id, ErrAlreadyRunning)
	}
	if err != nil {
		_ = sp.Rollback(ctx)
		if errors.Is(err, ErrNotFound) {
			err = moveErr(ctx, tx, id, StatusRunning)
		}
		return nil, fmt.Errorf("fix.Start %s: %w", id, checkViolation(err))
	}
	if err := sp.Commit(ctx); err != nil {
		return nil, err
	}
	return r, nil
}

// MaxSummaryBytes caps a run's summary.
const MaxSummaryBytes = 16 << 10

// maxPatchBytes caps the stored changes and diff (each): the policy allows
// at most 100 files of 256 KiB.
const maxPatchBytes = 32 << 20

// RecordPatch stores a running run's validated patch: the changes, their
// unified diff and their PatchSHA256, computed here, and the agent's
// summary (redacted, capped). It returns the hash. A patch is recorded
// once; the run then moves to awaiting_approval or publishing.
func RecordPatch(ctx context.Context, tx pgx.Tx, id string, changes []patch.FixFileChange, diff, summary string) (string, error) {
	if len(changes) == 0 {
		return "", fmt.Errorf("fix.RecordPatch: %w: an empty patch", ErrInvalid)
	}
	js, err := json.Marshal(changes)
	if err != nil {
		return "", fmt.Errorf("fix.RecordPatch: %w", err)
	}
	if len(js) > maxPatchBytes || len(diff) > maxPatchBytes {
		return "", fmt.Errorf("fix.RecordPatch: %w: patch larger than %d bytes", ErrInvalid, maxPatchBytes)
	}
	sum := patch.PatchSHA256(changes)
	tag, err := tx.Exec(ctx, `UPDATE fix_runs SET changes = $2, diff = $3, patch_sha256 = $4, summary = $5, updated_at = now()
		WHERE id = $1 AND status = 'running' AND patch_sha256 IS NULL`, id, js, diff, sum, safeText(summary, MaxSummaryBytes))
	if err != nil {
		return "", fmt.Errorf("fix.RecordPatch: %w", checkViolation(err))
	}
	if tag.RowsAffected() == 0 {
		r, err := Get(ctx, tx, id)
		if err != nil {
			return "", fmt.Errorf("fix.RecordPatch: %w", err)
		}
		if r.PatchSHA256 != "" {
			return "", fmt.Errorf("fix.RecordPatch %s: %w: the patch is recorded already", id, ErrInvalid)
		}
		return "", fmt.Errorf("fix.RecordPatch %s: %w: %s, not running", id, ErrTransition, r.Status)
	}
	return sum, nil
}

// Patch returns a run's recorded changes, diff and hash (ErrInvalid when it
// has none).
func Patch(ctx context.Context, tx pgx.Tx, id string) ([]patch.FixFileChange, string, string, error) {
	var js []byte
	var diff, sum *string
	err := tx.QueryRow(ctx, `SELECT changes, diff, patch_sha256 FROM fix_runs WHERE id = $1`, id).Scan(&js, &diff, &sum)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, "", "", ErrNotFound
	}
	if err != nil {
		return nil, "", "", fmt.Errorf("fix.Patch: %w", err)
	}
	if sum == nil {
		return nil, "", "", fmt.Errorf("fix.Patch %s: %w: no patch recorded", id, ErrInvalid)
	}
	var changes []patch.FixFileChange
	if err := json.Unmarshal(js, &changes); err != nil {
		return nil, "", "", fmt.Errorf("fix.Patch: %w", err)
	}
	if patch.PatchSHA256(changes) != *sum {
		return nil, "", "", fmt.Errorf("fix.Patch %s: the stored changes do not match their hash", id)
	}
	return changes, *diff, *sum, nil
}

// SetTestResult stores the last result of kind on a running run; r's
// tails must come from TestResult.SetTails (they are checked again here).
func SetTestResult(ctx context.Context, tx pgx.Tx, id string, kind TestKind, r TestResult) error {
	if kind != KindTest && kind != KindLint {
		return fmt.Errorf("fix.SetTestResult: %w: kind %q", ErrInvalid, kind)
	}
	if len(r.StdoutTail)+len(r.StderrTail) > tailBudget {
		return fmt.Errorf("fix.SetTestResult: %w: tails of %d bytes, at most %d", ErrInvalid, len(r.StdoutTail)+len(r.StderrTail), tailBudget)
	}
	r.StdoutTail, _ = redact(r.StdoutTail)
	r.StderrTail, _ = redact(r.StderrTail)
	r.Status = clip(r.Status, 40)
	js, err := json.Marshal(r)
	if err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, `UPDATE fix_runs SET test_results = jsonb_set(test_results, ARRAY[$2::text], $3::jsonb), updated_at = now()
		WHERE id = $1 AND status = 'running'`, id, string(kind), js)
	if err != nil {
		return fmt.Errorf("fix.SetTestResult: %w", checkViolation(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("fix.SetTestResult %s: %w", id, moveErr(ctx, tx, id, StatusRunning))
	}
	return nil
}

// AddUsage adds model usage to a run (any state before its end).
func AddUsage(ctx context.Context, tx pgx.Tx, id string, u Usage) error {
	if u.InputTokens < 0 || u.OutputTokens < 0 || u.CostMicros < 0 {
		return fmt.Errorf("fix.AddUsage: %w: negative usage", ErrInvalid)
	}
	tag, err := tx.Exec(ctx, `UPDATE fix_runs SET model = CASE WHEN $2 = '' THEN model ELSE $2 END,
			input_tokens = input_tokens + $3, output_tokens = output_tokens + $4, cost_micros = cost_micros + $5, updated_at = now()
		WHERE id = $1`, id, clip(u.Model, 200), u.InputTokens, u.OutputTokens, u.CostMicros)
	if err != nil {
		return fmt.Errorf("fix.AddUsage: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// Active lists the runs of an issue (or pull request) that are not
// finished.
func Active(ctx context.Context, tx pgx.Tx, repositoryID string, number int) ([]*Run, error) {
	rows, err := tx.Query(ctx, `SELECT `+runColumns+` FROM fix_runs
		WHERE repository_id = $1 AND number = $2 AND finished_at IS NULL ORDER BY created_at`, repositoryID, number)
	if err != nil {
		return nil, fmt.Errorf("fix.Active: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*Run, error) { return scanRun(row) })
}

// EndFilter selects the unfinished runs of one issue or pull request that
// an event ends.
type EndFilter struct {
	RepositoryID string
	Number       int
	Subject      Subject
	// Delivery, when set, ends only runs delivered so (commit: a moved
	// head makes the compare-and-swap impossible, FX16).
	Delivery Delivery
	// ReviewedHead, when set, ends only runs working on that commit (their
	// base, or for a queued review fix its review run's head).
	ReviewedHead string
}

// ends maps each unfinished state to where an event that takes the run's
// subject away moves it. publishing is the publisher's: its §7 re-checks
// decide.
var ends = map[Status]Status{
	StatusQueued:           StatusIneligible,
	StatusRunning:          StatusFailed,
	StatusAwaitingApproval: StatusExpired,
	StatusApproved:         StatusFailed,
}

// EndActive moves every unfinished run f selects (except those
// publishing) to its end with reason: queued → ineligible, running →
// failed, awaiting_approval → expired, approved → failed. An agent still
// working on a run it ended finds it terminal at its next move and stops.
// It returns the ended runs.
func EndActive(ctx context.Context, tx pgx.Tx, f EndFilter, reason, detail string) ([]*Run, error) {
	if f.RepositoryID == "" || f.Number < 1 || (f.Subject != SubjectIssue && f.Subject != SubjectPullRequest) {
		return nil, fmt.Errorf("fix.EndActive: %w: repository, number and subject are required", ErrInvalid)
	}
	rows, err := tx.Query(ctx, `SELECT f.id::text FROM fix_runs f LEFT JOIN review_runs r ON r.id = f.review_run_id
		WHERE f.repository_id = $1 AND f.number = $2 AND f.subject = $3 AND f.finished_at IS NULL AND f.status <> 'publishing'
			AND ($4::text = '' OR f.delivery = $4::text) AND ($5::text = '' OR coalesce(f.base_sha, r.head_sha) = $5::text)
		ORDER BY f.created_at FOR UPDATE OF f`, f.RepositoryID, f.Number, f.Subject, string(f.Delivery), f.ReviewedHead)
	if err != nil {
		return nil, fmt.Errorf("fix.EndActive: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("fix.EndActive: %w", err)
	}
	var out []*Run
	for _, id := range ids {
		cur, err := Get(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		to, ok := ends[cur.Status]
		if !ok {
			continue
		}
		r, err := Transition(ctx, tx, id, to, Why{Reason: reason, Detail: detail})
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
