package review

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// MaxListRuns bounds one page of List.
const MaxListRuns = 100

// List returns a page of a repository's review runs, newest first (limit
// clamped to 1..MaxListRuns, offset ≥ 0).
func List(ctx context.Context, tx pgx.Tx, repositoryID string, limit, offset int) ([]*Run, error) {
	limit = min(max(limit, 1), MaxListRuns)
	rows, err := tx.Query(ctx, `SELECT `+runColumns+` FROM review_runs WHERE repository_id = $1
		ORDER BY created_at DESC, id LIMIT $2 OFFSET $3`, repositoryID, limit, max(offset, 0))
	if err != nil {
		return nil, fmt.Errorf("review.List: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*Run, error) { return scanRun(row) })
}
