package review

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Source says who found a finding.
type Source string

// Sources.
const (
	SourceLLM  Source = "llm"
	SourceSAST Source = "sast" // deterministic: badged, with its tools and rule ids
)

// FindingStatus is a finding's standing on its pull request.
type FindingStatus string

// Finding statuses.
const (
	// FindingNew: found by this run, not shown before.
	FindingNew FindingStatus = "new"
	// FindingPosted: published, or shown before and carried over.
	FindingPosted FindingStatus = "posted"
	// FindingResolved: shown before; its lines changed or disappeared.
	FindingResolved FindingStatus = "resolved"
	// FindingDismissed: a maintainer dismissed its fingerprint.
	FindingDismissed FindingStatus = "dismissed"
)

// Severities, as internal/sast has them.
var Severities = []string{"critical", "high", "medium", "low", "info"}

var (
	fingerprintRE = regexp.MustCompile(`^[0-9a-f]{32,64}$`)
	categoryRE    = regexp.MustCompile(`^[a-z0-9_-]{0,40}$`)
)

// Finding is one finding to store. Text fields are untrusted; they are
// stored redacted and capped.
type Finding struct {
	Fingerprint string
	Source      Source
	Tools       []string
	RuleIDs     []string
	Weakness    string
	Path        string
	StartLine   int
	EndLine     int
	Severity    string
	Category    string
	Title       string
	Body        string
	Quote       string
	Suggestion  string
	Status      FindingStatus // empty: new
}

// Caps on a finding's text, in bytes.
const (
	MaxTitleBytes      = 400
	MaxBodyBytes       = 8 << 10
	MaxQuoteBytes      = 4 << 10
	MaxSuggestionBytes = 8 << 10
	// MaxFindingsPerRun bounds what one run stores (the policy's
	// maxFindings bounds what is posted).
	MaxFindingsPerRun = 5000
)

func (f *Finding) check() error {
	switch {
	case !fingerprintRE.MatchString(f.Fingerprint):
		return fmt.Errorf("fingerprint %q", f.Fingerprint)
	case f.Source != SourceLLM && f.Source != SourceSAST:
		return fmt.Errorf("source %q", f.Source)
	case f.Path == "" || len(f.Path) > 4096:
		return errors.New("path: want 1..4096 bytes")
	case f.StartLine < 1 || f.EndLine < f.StartLine:
		return fmt.Errorf("lines %d-%d", f.StartLine, f.EndLine)
	case !slices.Contains(Severities, f.Severity):
		return fmt.Errorf("severity %q", f.Severity)
	case !categoryRE.MatchString(f.Category):
		return fmt.Errorf("category %q", f.Category)
	case len(f.Tools) > 16 || len(f.RuleIDs) > 16:
		return errors.New("at most 16 tools and rule ids")
	}
	switch f.Status {
	case "", FindingNew, FindingPosted, FindingResolved, FindingDismissed:
	default:
		return fmt.Errorf("status %q", f.Status)
	}
	return nil
}

func clipAll(ss []string, max int) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = clip(s, max)
	}
	return out
}

// AddFindings stores findings of a running run; a fingerprint already
// stored for the run is skipped (the first one wins). It returns how many
// were stored.
func AddFindings(ctx context.Context, tx pgx.Tx, runID string, fs []Finding) (int, error) {
	var repo string
	var pr int
	var status Status
	err := tx.QueryRow(ctx, `SELECT repository_id::text, pr_number, status FROM review_runs WHERE id = $1 FOR UPDATE`, runID).
		Scan(&repo, &pr, &status)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("review.AddFindings: %w", err)
	}
	if status != StatusRunning {
		return 0, fmt.Errorf("review.AddFindings %s: %w: %s, not running", runID, ErrTransition, status)
	}
	var have int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM review_findings WHERE review_run_id = $1`, runID).Scan(&have); err != nil {
		return 0, err
	}
	if have+len(fs) > MaxFindingsPerRun {
		return 0, fmt.Errorf("review.AddFindings: %w: %d findings, at most %d per run", ErrInvalid, have+len(fs), MaxFindingsPerRun)
	}
	batch := &pgx.Batch{}
	for i := range fs {
		f := fs[i]
		if err := f.check(); err != nil {
			return 0, fmt.Errorf("review.AddFindings: %w: finding %d: %w", ErrInvalid, i, err)
		}
		if f.Status == "" {
			f.Status = FindingNew
		}
		title := safeText(f.Title, MaxTitleBytes)
		if title == "" {
			title = "(untitled)"
		}
		batch.Queue(`INSERT INTO review_findings (tenant_id, review_run_id, repository_id, pr_number, fingerprint, source, tools,
				rule_ids, weakness, path, start_line, end_line, severity, category, title, body, quote, suggestion, status)
			VALUES (quavon_current_tenant(), $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
			ON CONFLICT (tenant_id, review_run_id, fingerprint) DO NOTHING`,
			runID, repo, pr, f.Fingerprint, f.Source, clipAll(f.Tools, 64), clipAll(f.RuleIDs, 256), clip(f.Weakness, 100),
			f.Path, f.StartLine, f.EndLine, f.Severity, f.Category, title, safeText(f.Body, MaxBodyBytes),
			safeText(f.Quote, MaxQuoteBytes), safeText(f.Suggestion, MaxSuggestionBytes), f.Status)
	}
	res := tx.SendBatch(ctx, batch)
	stored := 0
	for range fs {
		tag, err := res.Exec()
		if err != nil {
			res.Close()
			return 0, fmt.Errorf("review.AddFindings: %w", pgErr(err))
		}
		stored += int(tag.RowsAffected())
	}
	if err := res.Close(); err != nil {
		return 0, err
	}
	return stored, nil
}

// StoredFinding is a review_findings row.
type StoredFinding struct {
	Finding
	ID                string
	RunID             string
	ExternalCommentID int64
	CreatedAt         time.Time
}

const findingColumns = `id::text, review_run_id::text, fingerprint, source, tools, rule_ids, weakness, path, start_line, end_line,
	severity, category, title, body, quote, suggestion, status, coalesce(external_comment_id, 0), created_at`

func scanFinding(r pgx.CollectableRow) (StoredFinding, error) {
	var f StoredFinding
	err := r.Scan(&f.ID, &f.RunID, &f.Fingerprint, &f.Source, &f.Tools, &f.RuleIDs, &f.Weakness, &f.Path, &f.StartLine,
		&f.EndLine, &f.Severity, &f.Category, &f.Title, &f.Body, &f.Quote, &f.Suggestion, &f.Status, &f.ExternalCommentID, &f.CreatedAt)
	return f, err
}

// Findings lists a run's findings, most severe first, then by path and
// line.
func Findings(ctx context.Context, tx pgx.Tx, runID string) ([]StoredFinding, error) {
	rows, err := tx.Query(ctx, `SELECT `+findingColumns+` FROM review_findings WHERE review_run_id = $1
		ORDER BY array_position(ARRAY['critical','high','medium','low','info'], severity), path, start_line, fingerprint`, runID)
	if err != nil {
		return nil, fmt.Errorf("review.Findings: %w", err)
	}
	return pgx.CollectRows(rows, scanFinding)
}

// SetFindingStatus records a finding's new standing, and the review
// comment's id once the publisher posted it (0 keeps what is stored).
func SetFindingStatus(ctx context.Context, tx pgx.Tx, findingID string, status FindingStatus, externalCommentID int64) error {
	switch status {
	case FindingNew, FindingPosted, FindingResolved, FindingDismissed:
	default:
		return fmt.Errorf("review.SetFindingStatus: %w: status %q", ErrInvalid, status)
	}
	if externalCommentID < 0 {
		return fmt.Errorf("review.SetFindingStatus: %w: comment id", ErrInvalid)
	}
	tag, err := tx.Exec(ctx, `UPDATE review_findings SET status = $2, external_comment_id = coalesce($3, external_comment_id),
		updated_at = now() WHERE id = $1`, findingID, status, nullIfZero(externalCommentID))
	if err != nil {
		return fmt.Errorf("review.SetFindingStatus: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// Shown returns, for every fingerprint the pull request showed in a run
// other than except, its latest standing there (posted or resolved; a
// finding never shown is not listed), with dismissals from
// finding_feedback overriding: the incremental review's memory.
func Shown(ctx context.Context, tx pgx.Tx, repositoryID string, pr int, except string) (map[string]FindingStatus, error) {
	rows, err := tx.Query(ctx, `SELECT DISTINCT ON (fingerprint) fingerprint, status FROM review_findings
		WHERE repository_id = $1 AND pr_number = $2 AND review_run_id::text <> $3 AND status IN ('posted', 'resolved', 'dismissed')
		ORDER BY fingerprint, created_at DESC`, repositoryID, pr, except)
	if err != nil {
		return nil, fmt.Errorf("review.Shown: %w", err)
	}
	out := map[string]FindingStatus{}
	for rows.Next() {
		var fp string
		var st FindingStatus
		if err := rows.Scan(&fp, &st); err != nil {
			rows.Close()
			return nil, err
		}
		out[fp] = st
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	dismissed, err := Dismissed(ctx, tx, repositoryID, pr)
	if err != nil {
		return nil, err
	}
	for fp := range dismissed {
		out[fp] = FindingDismissed
	}
	return out, nil
}
