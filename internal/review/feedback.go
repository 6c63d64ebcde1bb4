package review

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// FeedbackAction is what a maintainer said about a finding.
type FeedbackAction string

// Actions. dismiss and undismiss decide whether a fingerprint is posted on
// the pull request again; helpful and unhelpful are signal for evaluation.
const (
	ActionDismiss   FeedbackAction = "dismiss"
	ActionUndismiss FeedbackAction = "undismiss"
	ActionHelpful   FeedbackAction = "helpful"
	ActionUnhelpful FeedbackAction = "unhelpful"
)

// Feedback is one maintainer's word on a finding of a pull request.
type Feedback struct {
	RepositoryID string
	PRNumber     int
	Fingerprint  string
	FindingID    string // optional: the finding it was given on
	Action       FeedbackAction
	// Reason (dismiss only): false_positive, wont_fix, not_relevant, other.
	Reason  string
	Comment string // capped at 2000 bytes, redacted
	// Source is dashboard, api or github; UserID (a Quavon user) or
	// ActorLogin (a code-host login) says who.
	Source     string
	UserID     string
	ActorLogin string
}

// AddFeedback records fb and returns its id.
func AddFeedback(ctx context.Context, tx pgx.Tx, fb Feedback) (string, error) {
	switch {
	case fb.RepositoryID == "" || fb.PRNumber < 1 || !fingerprintRE.MatchString(fb.Fingerprint):
		return "", fmt.Errorf("review.AddFeedback: %w: repository, pull request and fingerprint are required", ErrInvalid)
	case fb.UserID == "" && fb.ActorLogin == "":
		return "", fmt.Errorf("review.AddFeedback: %w: who gave it", ErrInvalid)
	case fb.Reason != "" && fb.Action != ActionDismiss:
		return "", fmt.Errorf("review.AddFeedback: %w: a reason goes with dismiss only", ErrInvalid)
	}
	switch fb.Action {
	case ActionDismiss, ActionUndismiss, ActionHelpful, ActionUnhelpful:
	default:
		return "", fmt.Errorf("review.AddFeedback: %w: action %q", ErrInvalid, fb.Action)
	}
	switch fb.Reason {
	case "", "false_positive", "wont_fix", "not_relevant", "other":
	default:
		return "", fmt.Errorf("review.AddFeedback: %w: reason %q", ErrInvalid, fb.Reason)
	}
	switch fb.Source {
	case "dashboard", "api", "github":
	default:
		return "", fmt.Errorf("review.AddFeedback: %w: source %q", ErrInvalid, fb.Source)
	}
	var id string
	err := tx.QueryRow(ctx, `INSERT INTO finding_feedback (tenant_id, repository_id, pr_number, fingerprint, finding_id, action,
			reason, comment, source, user_id, actor_login)
		VALUES (quavon_current_tenant(), $1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id::text`,
		fb.RepositoryID, fb.PRNumber, fb.Fingerprint, nullIfEmpty(fb.FindingID), fb.Action, nullIfEmpty(fb.Reason),
		safeText(fb.Comment, 2000), fb.Source, nullIfEmpty(fb.UserID), clip(fb.ActorLogin, 100)).Scan(&id)
	if err != nil {
		return "", fmt.Errorf("review.AddFeedback: %w", pgErr(err))
	}
	return id, nil
}

// Dismissed returns the fingerprints dismissed on the pull request: those
// whose latest dismiss or undismiss is a dismiss, with when.
func Dismissed(ctx context.Context, tx pgx.Tx, repositoryID string, pr int) (map[string]time.Time, error) {
	rows, err := tx.Query(ctx, `SELECT fingerprint, action, created_at FROM (
			SELECT DISTINCT ON (fingerprint) fingerprint, action, created_at FROM finding_feedback
			WHERE repository_id = $1 AND pr_number = $2 AND action IN ('dismiss', 'undismiss')
			ORDER BY fingerprint, created_at DESC, id) latest
		WHERE action = 'dismiss'`, repositoryID, pr)
	if err != nil {
		return nil, fmt.Errorf("review.Dismissed: %w", err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var fp, action string
		var at time.Time
		if err := rows.Scan(&fp, &action, &at); err != nil {
			return nil, err
		}
		out[fp] = at
	}
	if err := rows.Err(); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, err
	}
	return out, nil
}
