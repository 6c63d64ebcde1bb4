// Package checkstore is the storage of the acceptance-criteria check: the
// issues its criteria come from and one ac_checks row per pull-request
// head (migration 0007). It is a leaf: reading a check (the dashboard)
// does not pull the judge or any model client.
package checkstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/acceptance"
)

// Issue is a row of the issues table.
type Issue struct {
	Number        int
	State         string
	IsPullRequest bool
	// Visibility of the text when it was read ("" when there is none).
	Visibility  string
	Title, Body string
	// Read: the text is there (read through the review app, not stale).
	Read        bool
	Transferred bool
	Deleted     bool
}

// Row is what acceptance.Admit reads of the issue; repoExternalID is the
// repository's GitHub id. A deleted issue is refused as transferred: its
// text is gone the same way.
func (i Issue) Row(repoExternalID int64) acceptance.IssueRow {
	return acceptance.IssueRow{RepositoryID: repoExternalID, Number: i.Number, Visibility: Visibility(i.Visibility),
		State: acceptance.IssueState(i.State), TransferredAway: i.Transferred || i.Deleted, IsPullRequest: i.IsPullRequest}
}

// Visibility maps a stored visibility to acceptance's (unknown for any
// other text).
func Visibility(s string) acceptance.Visibility {
	switch s {
	case "public":
		return acceptance.VisibilityPublic
	case "internal":
		return acceptance.VisibilityInternal
	case "private":
		return acceptance.VisibilityPrivate
	}
	return acceptance.VisibilityUnknown
}

// Issues reads the rows of numbers of repository repositoryID (missing
// numbers have none).
func Issues(ctx context.Context, tx pgx.Tx, repositoryID string, numbers []int) (map[int]Issue, error) {
	rows, err := tx.Query(ctx, `SELECT number, state, is_pull_request, coalesce(visibility, ''), title, body, read_at IS NOT NULL,
		transferred, deleted FROM issues WHERE repository_id = $1 AND number = ANY($2)`, repositoryID, numbers)
	if err != nil {
		return nil, fmt.Errorf("checkstore.Issues: %w", err)
	}
	out := map[int]Issue{}
	for rows.Next() {
		var i Issue
		if err := rows.Scan(&i.Number, &i.State, &i.IsPullRequest, &i.Visibility, &i.Title, &i.Body, &i.Read, &i.Transferred,
			&i.Deleted); err != nil {
			return nil, fmt.Errorf("checkstore.Issues: %w", err)
		}
		out[i.Number] = i
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("checkstore.Issues: %w", err)
	}
	return out, nil
}

// MaxTitleBytes and MaxBodyBytes cap stored issue text (GitHub's own caps
// in bytes); longer text is cut at a rune boundary.
const (
	MaxTitleBytes = 1024
	MaxBodyBytes  = 262144
)

// StoreRead stores what a read through the review app returned, with the
// repository's visibility at that read. A transferred or deleted row is
// left as it is: its text never comes back.
func StoreRead(ctx context.Context, tx pgx.Tx, repositoryID string, i Issue) error {
	if i.Number <= 0 || (i.State != "open" && i.State != "closed") || Visibility(i.Visibility) == acceptance.VisibilityUnknown {
		return fmt.Errorf("checkstore.StoreRead %d: invalid issue (state %q, visibility %q)", i.Number, i.State, i.Visibility)
	}
	_, err := tx.Exec(ctx, `INSERT INTO issues (tenant_id, repository_id, number, state, is_pull_request, visibility, title, body, read_at)
		VALUES (quavon_current_tenant(), $1, $2, $3, $4, $5, $6, $7, now())
		ON CONFLICT (tenant_id, repository_id, number) DO UPDATE SET state = EXCLUDED.state,
			is_pull_request = EXCLUDED.is_pull_request, visibility = EXCLUDED.visibility, title = EXCLUDED.title,
			body = EXCLUDED.body, read_at = now(), updated_at = now()
		WHERE NOT issues.transferred AND NOT issues.deleted`,
		repositoryID, i.Number, i.State, i.IsPullRequest, i.Visibility, capText(i.Title, MaxTitleBytes), capText(i.Body, MaxBodyBytes))
	if err != nil {
		return fmt.Errorf("checkstore.StoreRead %d: %w", i.Number, err)
	}
	return nil
}

// Event is what an issues webhook says of an issue.
type Event int

// Events.
const (
	// EventChanged: opened, edited, closed, reopened: the state is kept,
	// the text is stale (read again when next needed).
	EventChanged Event = iota
	// EventTransferred: moved to another repository; the text goes for good.
	EventTransferred
	// EventDeleted: deleted; the text goes for good.
	EventDeleted
)

// Observe keeps the row of issue number in step with a webhook event. No
// text comes from a webhook: an edit makes the stored text stale, a
// transfer or a deletion clears it and marks the row.
func Observe(ctx context.Context, tx pgx.Tx, repositoryID string, number int, state string, isPR bool, ev Event) error {
	if number <= 0 {
		return fmt.Errorf("checkstore.Observe: invalid number %d", number)
	}
	if state != "open" && state != "closed" {
		state = "open"
	}
	transferred, deleted := ev == EventTransferred, ev == EventDeleted
	_, err := tx.Exec(ctx, `INSERT INTO issues (tenant_id, repository_id, number, state, is_pull_request, transferred, deleted)
		VALUES (quavon_current_tenant(), $1, $2, $3, $4, $5, $6)
		ON CONFLICT (tenant_id, repository_id, number) DO UPDATE SET state = EXCLUDED.state,
			is_pull_request = issues.is_pull_request OR EXCLUDED.is_pull_request,
			transferred = issues.transferred OR EXCLUDED.transferred, deleted = issues.deleted OR EXCLUDED.deleted,
			title = '', body = '', read_at = NULL, visibility = NULL, updated_at = now()`,
		repositoryID, number, state, isPR, transferred, deleted)
	if err != nil {
		return fmt.Errorf("checkstore.Observe %d: %w", number, err)
	}
	return nil
}

// Stored is a row of ac_checks.
type Stored struct {
	ID           string
	RepositoryID string
	PRNumber     int
	HeadSHA      string
	ReviewRunID  string
	Mode         string
	Status       string // completed, skipped, failed
	Reason       string
	Detail       string
	Issue        int
	Links        []LinkRecord
	Criteria     acceptance.Extraction
	Verdicts     acceptance.Verification
	Model        string
	Calls        int
	InputTokens  int64
	OutputTokens int64
	CostMicros   int64
}

// LinkRecord is one linked issue and whether it could be used.
type LinkRecord struct {
	Number  int                     `json:"number"`
	Sources []acceptance.LinkSource `json:"sources"`
	Usable  bool                    `json:"usable"`
	Refusal acceptance.Refusal      `json:"refusal,omitempty"`
}

const storedColumns = `id::text, repository_id::text, pr_number, head_sha, coalesce(review_run_id::text, ''), mode, status,
	coalesce(reason, ''), detail, coalesce(issue_number, 0), links, criteria, verdicts, model, llm_calls, input_tokens,
	output_tokens, cost_micros`

func scanStored(row pgx.Row) (*Stored, error) {
	var s Stored
	var links, crit, verd []byte
	if err := row.Scan(&s.ID, &s.RepositoryID, &s.PRNumber, &s.HeadSHA, &s.ReviewRunID, &s.Mode, &s.Status, &s.Reason, &s.Detail,
		&s.Issue, &links, &crit, &verd, &s.Model, &s.Calls, &s.InputTokens, &s.OutputTokens, &s.CostMicros); err != nil {
		return nil, err
	}
	for _, x := range []struct {
		raw []byte
		v   any
	}{{links, &s.Links}, {crit, &s.Criteria}, {verd, &s.Verdicts}} {
		if err := json.Unmarshal(x.raw, x.v); err != nil {
			return nil, err
		}
	}
	return &s, nil
}

// Get returns the check of the head, nil when there is none.
func Get(ctx context.Context, tx pgx.Tx, repositoryID string, pr int, head string) (*Stored, error) {
	s, err := scanStored(tx.QueryRow(ctx, `SELECT `+storedColumns+` FROM ac_checks
		WHERE repository_id = $1 AND pr_number = $2 AND head_sha = $3`, repositoryID, pr, head))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checkstore.Get %d %.12s: %w", pr, head, err)
	}
	return s, nil
}

// Insert stores s unless the head has a check already; it returns the
// head's check (s, or the one stored first).
func Insert(ctx context.Context, tx pgx.Tx, s Stored) (*Stored, error) {
	op := fmt.Sprintf("checkstore.Insert %d %.12s", s.PRNumber, s.HeadSHA)
	if s.Links == nil {
		s.Links = []LinkRecord{}
	}
	if s.Criteria.Criteria == nil {
		s.Criteria.Criteria = []acceptance.Criterion{}
	}
	if s.Verdicts.Verdicts == nil {
		s.Verdicts.Verdicts = []acceptance.Verdict{}
	}
	links, err := json.Marshal(s.Links)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	crit, err := json.Marshal(s.Criteria)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	verd, err := json.Marshal(s.Verdicts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	met, unmet, unclear := s.Verdicts.Counts()
	var reason, run, issue any
	if s.Reason != "" {
		reason = s.Reason
	}
	if s.ReviewRunID != "" {
		run = s.ReviewRunID
	}
	if s.Issue > 0 {
		issue = s.Issue
	}
	tag, err := tx.Exec(ctx, `INSERT INTO ac_checks (tenant_id, repository_id, pr_number, head_sha, review_run_id, mode, status, reason,
		detail, issue_number, links, criteria, verdicts, met, unmet, unclear, model, llm_calls, input_tokens, output_tokens, cost_micros)
		VALUES (quavon_current_tenant(), $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
		ON CONFLICT (tenant_id, repository_id, pr_number, head_sha) DO NOTHING`,
		s.RepositoryID, s.PRNumber, s.HeadSHA, run, s.Mode, s.Status, reason, capText(s.Detail, 2048), issue, links, crit, verd,
		met, unmet, unclear, capText(s.Model, 200), s.Calls, s.InputTokens, s.OutputTokens, s.CostMicros)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	_ = tag
	got, err := Get(ctx, tx, s.RepositoryID, s.PRNumber, s.HeadSHA)
	if err != nil {
		return nil, err
	}
	if got == nil {
		return nil, fmt.Errorf("%s: not stored", op)
	}
	return got, nil
}

// capText cuts s to at most n bytes at a rune boundary, without NULs
// (PostgreSQL text refuses them).
func capText(s string, n int) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "")
	if len(s) <= n {
		return s
	}
	s = s[:n]
	return strings.ToValidUTF8(s, "")
}
