package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Actor is a code-host identity.
type Actor struct {
	Login string
	ID    int64
}

// NewRun is a review to record as queued: what the webhook (or command)
// said of the pull request.
type NewRun struct {
	RepositoryID string
	PRNumber     int
	HeadSHA      string
	HeadRef      string
	BaseRef      string
	BaseSHA      string // optional
	// HeadRepoExternalID is the head repository's GitHub id; 0 (a deleted
	// fork, unknown) counts as a fork.
	HeadRepoExternalID int64
	Draft              bool
	Author             string
	Trigger            Trigger
	Actor              Actor
	EventID            string // the webhook_events row
	FullReview         bool
}

func (n NewRun) validate() error {
	switch {
	case n.RepositoryID == "" || n.PRNumber < 1:
		return fmt.Errorf("%w: repository and pull request number are required", ErrInvalid)
	case !ValidSHA(n.HeadSHA):
		return fmt.Errorf("%w: head %q is not a commit id", ErrInvalid, n.HeadSHA)
	case n.BaseSHA != "" && !ValidSHA(n.BaseSHA):
		return fmt.Errorf("%w: base %q is not a commit id", ErrInvalid, n.BaseSHA)
	case n.HeadRepoExternalID < 0 || n.Actor.ID < 0:
		return fmt.Errorf("%w: negative id", ErrInvalid)
	}
	switch n.Trigger {
	case TriggerOpened, TriggerSynchronize, TriggerReopened, TriggerReadyForReview, TriggerCommand:
	default:
		return fmt.Errorf("%w: trigger %q", ErrInvalid, n.Trigger)
	}
	return nil
}

// Part is one of a run's three parts.
type Part string

// The parts.
const (
	PartLLM        Part = "llm"
	PartSAST       Part = "sast"
	PartAcceptance Part = "acceptance"
)

// PartStatus is how a part went.
type PartStatus string

// Part statuses.
const (
	PartPending PartStatus = "pending"
	PartRunning PartStatus = "running"
	PartOK      PartStatus = "ok"
	PartPartial PartStatus = "partial"
	PartFailed  PartStatus = "failed"
	PartSkipped PartStatus = "skipped"
)

// Usage is a run's model usage.
type Usage struct {
	Model                     string
	Calls                     int
	InputTokens, OutputTokens int64
	CostMicros                int64
}

// SkippedFile is a file left out of the LLM review, and why.
type SkippedFile struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// Run is a review_runs row.
type Run struct {
	ID                   string
	RepositoryID         string
	PRNumber             int
	HeadSHA              string
	Attempt              int
	HeadRef, BaseRef     string
	BaseSHA              string
	HeadRepoExternalID   int64
	Draft                bool
	Author               string
	MergeBaseSHA         string
	SinceSHA             string
	Trigger              Trigger
	Actor                Actor
	EventID              string
	FullReview           bool
	Status               Status
	Reason, Detail       string
	SupersededBy         string
	ReviewMode           string
	SASTMode             string
	AcceptanceMode       string
	Parts                map[Part]PartStatus
	SASTTools            map[string]string
	FindingsCount        int
	DroppedUnverified    int
	SkippedFiles         []SkippedFile
	SkippedFilesCount    int
	Usage                Usage
	Summary              string
	CreatedAt, UpdatedAt time.Time
	StartedAt            *time.Time
	FinishedAt           *time.Time
}

const runColumns = `id::text, repository_id::text, pr_number, head_sha, attempt, head_ref, base_ref, coalesce(base_sha, ''),
	coalesce(head_repo_external_id, 0), draft, author_login, coalesce(merge_base_sha, ''), coalesce(since_sha, ''), trigger,
	trigger_actor_login, coalesce(trigger_actor_id, 0), coalesce(trigger_event_id::text, ''), full_review, status,
	coalesce(reason, ''), detail, coalesce(superseded_by::text, ''), coalesce(review_mode, ''), coalesce(sast_mode, ''),
	coalesce(acceptance_mode, ''), llm_status, sast_status, acceptance_status, sast_tools, findings_count, dropped_unverified,
	skipped_files, skipped_files_count, model, llm_calls, input_tokens, output_tokens, cost_micros, summary, created_at,
	updated_at, started_at, finished_at`

func scanRun(row pgx.Row) (*Run, error) {
	var r Run
	var llm, sast, ac PartStatus
	var tools, skipped []byte
	err := row.Scan(&r.ID, &r.RepositoryID, &r.PRNumber, &r.HeadSHA, &r.Attempt, &r.HeadRef, &r.BaseRef, &r.BaseSHA,
		&r.HeadRepoExternalID, &r.Draft, &r.Author, &r.MergeBaseSHA, &r.SinceSHA, &r.Trigger, &r.Actor.Login, &r.Actor.ID,
		&r.EventID, &r.FullReview, &r.Status, &r.Reason, &r.Detail, &r.SupersededBy, &r.ReviewMode, &r.SASTMode,
		&r.AcceptanceMode, &llm, &sast, &ac, &tools, &r.FindingsCount, &r.DroppedUnverified, &skipped, &r.SkippedFilesCount,
		&r.Usage.Model, &r.Usage.Calls, &r.Usage.InputTokens, &r.Usage.OutputTokens, &r.Usage.CostMicros, &r.Summary,
		&r.CreatedAt, &r.UpdatedAt, &r.StartedAt, &r.FinishedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	r.Parts = map[Part]PartStatus{PartLLM: llm, PartSAST: sast, PartAcceptance: ac}
	if err := json.Unmarshal(tools, &r.SASTTools); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(skipped, &r.SkippedFiles); err != nil {
		return nil, err
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

func insertRun(ctx context.Context, tx pgx.Tx, n NewRun, attempt string, onConflict string) (*Run, error) {
	return scanRun(tx.QueryRow(ctx, `INSERT INTO review_runs (tenant_id, repository_id, pr_number, head_sha, attempt, head_ref,
			base_ref, base_sha, head_repo_external_id, draft, author_login, trigger, trigger_actor_login, trigger_actor_id,
			trigger_event_id, full_review)
		VALUES (quavon_current_tenant(), $1, $2, $3::text, `+attempt+`, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
		`+onConflict+` RETURNING `+runColumns,
		n.RepositoryID, n.PRNumber, n.HeadSHA, clip(n.HeadRef, 1024), clip(n.BaseRef, 1024), nullIfEmpty(n.BaseSHA),
		nullIfZero(n.HeadRepoExternalID), n.Draft, clip(n.Author, 100), n.Trigger, clip(n.Actor.Login, 100),
		nullIfZero(n.Actor.ID), nullIfEmpty(n.EventID), n.FullReview))
}

// Create records an automatic trigger as attempt 1 of its head and reports
// true; when the head has a run already, it returns that run and false.
// A command (TriggerCommand) always makes a new attempt (NewAttempt).
func Create(ctx context.Context, tx pgx.Tx, n NewRun) (*Run, bool, error) {
	if err := n.validate(); err != nil {
		return nil, false, err
	}
	if n.Trigger == TriggerCommand {
		r, err := NewAttempt(ctx, tx, n)
		return r, err == nil, err
	}
	r, err := insertRun(ctx, tx, n, "1", "ON CONFLICT (tenant_id, repository_id, pr_number, head_sha, attempt) DO NOTHING")
	if err == nil {
		return r, true, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return nil, false, fmt.Errorf("review.Create: %w", err)
	}
	r, err = scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM review_runs
		WHERE repository_id = $1 AND pr_number = $2 AND head_sha = $3 AND attempt = 1`, n.RepositoryID, n.PRNumber, n.HeadSHA))
	if err != nil {
		return nil, false, fmt.Errorf("review.Create: %w", err)
	}
	return r, false, nil
}

// NewAttempt records another run of the head: attempt = the head's highest
// plus one. Concurrent attempts of one head serialise on the unique index
// (one of them fails and may retry).
func NewAttempt(ctx context.Context, tx pgx.Tx, n NewRun) (*Run, error) {
	if err := n.validate(); err != nil {
		return nil, err
	}
	r, err := insertRun(ctx, tx, n, `(SELECT coalesce(max(attempt), 0) + 1 FROM review_runs
		WHERE repository_id = $1 AND pr_number = $2 AND head_sha = $3::text)`, "")
	if err != nil {
		return nil, fmt.Errorf("review.NewAttempt: %w", err)
	}
	return r, nil
}

// Get reads a run.
func Get(ctx context.Context, tx pgx.Tx, id string) (*Run, error) {
	r, err := scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM review_runs WHERE id = $1`, id))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("review.Get: %w", err)
	}
	return r, err
}

// ForPR lists a pull request's runs, oldest first.
func ForPR(ctx context.Context, tx pgx.Tx, repositoryID string, pr int) ([]*Run, error) {
	rows, err := tx.Query(ctx, `SELECT `+runColumns+` FROM review_runs WHERE repository_id = $1 AND pr_number = $2
		ORDER BY created_at, attempt`, repositoryID, pr)
	if err != nil {
		return nil, fmt.Errorf("review.ForPR: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*Run, error) { return scanRun(row) })
}

// Why is a reason code and an optional human detail (redacted, capped).
type Why struct {
	Reason string
	Detail string
}

func checkWhy(to Status, why Why) error {
	if why.Reason != "" && !ReasonRE.MatchString(why.Reason) {
		return fmt.Errorf("%w: reason %q: want a lower_snake code", ErrInvalid, why.Reason)
	}
	if (to == StatusFailed || to == StatusCancelled || to == StatusSkipped) && why.Reason == "" {
		return fmt.Errorf("%w: %s needs a reason", ErrInvalid, to)
	}
	return nil
}

func moveErr(ctx context.Context, tx pgx.Tx, id string, to Status) error {
	var cur Status
	err := tx.QueryRow(ctx, `SELECT status FROM review_runs WHERE id = $1`, id).Scan(&cur)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return ErrNotFound
	case err != nil:
		return err
	case cur.Terminal():
		return fmt.Errorf("%w: %s (asked for %s)", ErrTerminal, cur, to)
	}
	return fmt.Errorf("%w: %s → %s", ErrTransition, cur, to)
}

// Transition moves run id to to along an edge of the machine
// (compare-and-set). Use Start for running and Complete for completed.
func Transition(ctx context.Context, tx pgx.Tx, id string, to Status, why Why) (*Run, error) {
	if to == StatusRunning || to == StatusCompleted || !to.Valid() {
		return nil, fmt.Errorf("review.Transition: %w: to %q (use Start and Complete)", ErrInvalid, to)
	}
	if err := checkWhy(to, why); err != nil {
		return nil, fmt.Errorf("review.Transition: %w", err)
	}
	r, err := scanRun(tx.QueryRow(ctx, `UPDATE review_runs SET status = $2, reason = coalesce($3, reason),
			detail = CASE WHEN $4 = '' THEN detail ELSE $4 END, updated_at = now(), finished_at = now()
		WHERE id = $1 AND status = ANY($5) RETURNING `+runColumns,
		id, to, nullIfEmpty(why.Reason), safeText(why.Detail, 2048), predecessors(to)))
	if errors.Is(err, ErrNotFound) {
		err = moveErr(ctx, tx, id, to)
	}
	if err != nil {
		return nil, fmt.Errorf("review.Transition %s: %w", id, err)
	}
	return r, nil
}

// Modes are the effective policy's modes a run starts with (off, shadow,
// on).
type Modes struct {
	Review, SAST, Acceptance string
}

// Start moves a queued run to running with the modes it runs under and
// the commits it reviews: the merge base, and for an incremental review
// the previously reviewed head (empty for a full review).
func Start(ctx context.Context, tx pgx.Tx, id string, m Modes, mergeBase, since string) (*Run, error) {
	for _, mode := range []string{m.Review, m.SAST, m.Acceptance} {
		if mode != "off" && mode != "shadow" && mode != "on" {
			return nil, fmt.Errorf("review.Start: %w: mode %q", ErrInvalid, mode)
		}
	}
	for _, sha := range []string{mergeBase, since} {
		if sha != "" && !ValidSHA(sha) {
			return nil, fmt.Errorf("review.Start: %w: %q is not a commit id", ErrInvalid, sha)
		}
	}
	r, err := scanRun(tx.QueryRow(ctx, `UPDATE review_runs SET status = 'running', review_mode = $2, sast_mode = $3,
			acceptance_mode = $4, merge_base_sha = $5, since_sha = $6, started_at = now(), updated_at = now()
		WHERE id = $1 AND status = 'queued' RETURNING `+runColumns,
		id, m.Review, m.SAST, m.Acceptance, nullIfEmpty(mergeBase), nullIfEmpty(since)))
	if errors.Is(err, ErrNotFound) {
		err = moveErr(ctx, tx, id, StatusRunning)
	}
	if err != nil {
		return nil, fmt.Errorf("review.Start %s: %w", id, err)
	}
	return r, nil
}

// SetPart records how one part of a running run went.
func SetPart(ctx context.Context, tx pgx.Tx, id string, part Part, status PartStatus) error {
	switch status {
	case PartPending, PartRunning, PartOK, PartPartial, PartFailed, PartSkipped:
	default:
		return fmt.Errorf("review.SetPart: %w: status %q", ErrInvalid, status)
	}
	col := map[Part]string{PartLLM: "llm_status", PartSAST: "sast_status", PartAcceptance: "acceptance_status"}[part]
	if col == "" {
		return fmt.Errorf("review.SetPart: %w: part %q", ErrInvalid, part)
	}
	tag, err := tx.Exec(ctx, `UPDATE review_runs SET `+col+` = $2, updated_at = now() WHERE id = $1 AND status = 'running'`, id, status)
	if err != nil {
		return fmt.Errorf("review.SetPart: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("review.SetPart %s: %w", id, moveErr(ctx, tx, id, StatusRunning))
	}
	return nil
}

// SASTToolStatuses are the statuses a scanner can end in (internal/sast).
var SASTToolStatuses = []string{"ok", "partial", "failed", "missing", "timed_out", "no_files"}

// SetSASTTools records each scanner's status on a running run.
func SetSASTTools(ctx context.Context, tx pgx.Tx, id string, tools map[string]string) error {
	if len(tools) > 32 {
		return fmt.Errorf("review.SetSASTTools: %w: %d tools", ErrInvalid, len(tools))
	}
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		if !ReasonRE.MatchString(stripColon(name)) || len(name) > 64 || !slices.Contains(SASTToolStatuses, tools[name]) {
			return fmt.Errorf("review.SetSASTTools: %w: %q: %q", ErrInvalid, name, tools[name])
		}
	}
	js, err := json.Marshal(tools)
	if err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, `UPDATE review_runs SET sast_tools = $2, updated_at = now() WHERE id = $1 AND status = 'running'`, id, js)
	if err != nil {
		return fmt.Errorf("review.SetSASTTools: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("review.SetSASTTools %s: %w", id, moveErr(ctx, tx, id, StatusRunning))
	}
	return nil
}

// stripColon allows tool names like byo:scanner (and ast-grep) through the
// code pattern.
func stripColon(s string) string {
	out := []byte(s)
	for i, c := range out {
		if c == ':' || c == '-' || c == '.' {
			out[i] = '_'
		}
	}
	return string(out)
}

// Result is what a completed run reports.
type Result struct {
	Summary           string
	DroppedUnverified int
	SkippedFiles      []SkippedFile
	Usage             Usage
}

// MaxSkippedFiles is how many skipped files a run lists (the count is
// exact).
const MaxSkippedFiles = 500

// Complete moves a running run to completed with its result; the findings
// count is that of its stored findings.
func Complete(ctx context.Context, tx pgx.Tx, id string, res Result) (*Run, error) {
	if res.DroppedUnverified < 0 || res.Usage.Calls < 0 || res.Usage.InputTokens < 0 || res.Usage.OutputTokens < 0 || res.Usage.CostMicros < 0 {
		return nil, fmt.Errorf("review.Complete: %w: negative count", ErrInvalid)
	}
	listed := res.SkippedFiles
	if len(listed) > MaxSkippedFiles {
		listed = listed[:MaxSkippedFiles]
	}
	clean := make([]SkippedFile, len(listed))
	for i, f := range listed {
		clean[i] = SkippedFile{Path: clip(f.Path, 4096), Reason: clip(f.Reason, 200)}
	}
	js, err := json.Marshal(clean)
	if err != nil {
		return nil, err
	}
	r, err := scanRun(tx.QueryRow(ctx, `UPDATE review_runs SET status = 'completed', summary = $2, dropped_unverified = $3,
			skipped_files = $4, skipped_files_count = $5, model = $6, llm_calls = $7, input_tokens = $8, output_tokens = $9,
			cost_micros = $10, findings_count = (SELECT count(*) FROM review_findings WHERE review_run_id = $1),
			updated_at = now(), finished_at = now()
		WHERE id = $1 AND status = 'running' RETURNING `+runColumns,
		id, safeText(res.Summary, 16384), res.DroppedUnverified, js, len(res.SkippedFiles), clip(res.Usage.Model, 200),
		res.Usage.Calls, res.Usage.InputTokens, res.Usage.OutputTokens, res.Usage.CostMicros))
	if errors.Is(err, ErrNotFound) {
		err = moveErr(ctx, tx, id, StatusCompleted)
	}
	if err != nil {
		return nil, fmt.Errorf("review.Complete %s: %w", id, err)
	}
	return r, nil
}

// CancelActive cancels the pull request's queued and running runs, except
// those of head keep (none when keep is empty), with reason; a superseding
// run's id goes into superseded_by. It returns the cancelled runs' ids.
func CancelActive(ctx context.Context, tx pgx.Tx, repositoryID string, pr int, keep, reason, supersededBy string) ([]string, error) {
	if !ReasonRE.MatchString(reason) {
		return nil, fmt.Errorf("review.CancelActive: %w: reason %q", ErrInvalid, reason)
	}
	return cancel(ctx, tx, `repository_id = $1 AND pr_number = $2 AND ($3 = '' OR head_sha <> $3)`, repositoryID, pr, keep, reason, supersededBy)
}

// CancelOthers cancels the pull request's queued and running runs other
// than run keep (a forced review supersedes every other run, its own
// head's included), with keep as superseded_by.
func CancelOthers(ctx context.Context, tx pgx.Tx, repositoryID string, pr int, keep, reason string) ([]string, error) {
	if !ReasonRE.MatchString(reason) || keep == "" {
		return nil, fmt.Errorf("review.CancelOthers: %w: reason %q, keep %q", ErrInvalid, reason, keep)
	}
	return cancel(ctx, tx, `repository_id = $1 AND pr_number = $2 AND id::text <> $3`, repositoryID, pr, keep, reason, keep)
}

// CancelHead cancels the pull request's queued and running runs of head.
func CancelHead(ctx context.Context, tx pgx.Tx, repositoryID string, pr int, head, reason, supersededBy string) ([]string, error) {
	if !ReasonRE.MatchString(reason) || !ValidSHA(head) {
		return nil, fmt.Errorf("review.CancelHead: %w: reason %q, head %q", ErrInvalid, reason, head)
	}
	return cancel(ctx, tx, `repository_id = $1 AND pr_number = $2 AND head_sha = $3`, repositoryID, pr, head, reason, supersededBy)
}

func cancel(ctx context.Context, tx pgx.Tx, where string, repositoryID string, pr int, head, reason, by string) ([]string, error) {
	rows, err := tx.Query(ctx, `UPDATE review_runs SET status = 'cancelled', reason = $4, superseded_by = $5,
			updated_at = now(), finished_at = now()
		WHERE `+where+` AND status IN ('queued', 'running') RETURNING id::text`, repositoryID, pr, head, reason, nullIfEmpty(by))
	if err != nil {
		return nil, fmt.Errorf("review: cancel: %w", pgErr(err))
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

func pgErr(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "23514" || pe.Code == "23503") {
		return fmt.Errorf("%w: %s", ErrInvalid, pe.Message)
	}
	return err
}
