package web

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/repos"
)

// repoRow is a repository the signed-in user holds a role on.
type repoRow struct {
	repos.Repository
	Host               string
	ReviewInstallation int64
	FixerInstallation  int64
	ReviewSuspended    bool
	FixerSuspended     bool
	Archived           bool
	Roles              []string
}

func (r *repoRow) has(role string) bool { return slices.Contains(r.Roles, role) }

const repoSelect = `SELECT r.id::text, r.host, r.owner, r.name, r.visibility, coalesce(r.review_installation_id, 0),
		coalesce(r.fixer_installation_id, 0), r.archived,
		EXISTS (SELECT 1 FROM installations i WHERE i.app_kind = 'review' AND i.external_id = r.review_installation_id AND i.suspended_at IS NOT NULL),
		EXISTS (SELECT 1 FROM installations i WHERE i.app_kind = 'fixer' AND i.external_id = r.fixer_installation_id AND i.suspended_at IS NOT NULL),
		array_agg(g.role ORDER BY g.role)
	FROM repositories r JOIN role_grants g ON g.repository_id = r.id AND g.user_id = $1`

func scanRepo(row pgx.Row) (*repoRow, error) {
	var r repoRow
	err := row.Scan(&r.ID, &r.Host, &r.Owner, &r.Name, &r.Visibility, &r.ReviewInstallation, &r.FixerInstallation, &r.Archived,
		&r.ReviewSuspended, &r.FixerSuspended, &r.Roles)
	return &r, err
}

// userRepos lists the repositories the user holds any role on.
func userRepos(ctx context.Context, tx pgx.Tx, userID string) ([]*repoRow, error) {
	rows, err := tx.Query(ctx, repoSelect+` GROUP BY r.id ORDER BY lower(r.owner), lower(r.name)`, userID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (*repoRow, error) { return scanRepo(row) })
}

// repoByName finds owner/name among the user's repositories: a repository
// the user holds no role on does not exist for them (404).
func repoByName(ctx context.Context, tx pgx.Tx, userID, owner, name string) (*repoRow, error) {
	r, err := scanRepo(tx.QueryRow(ctx, repoSelect+` WHERE lower(r.owner) = lower($2) AND lower(r.name) = lower($3) GROUP BY r.id`, userID, owner, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNotFound
	}
	return r, err
}

func repoByID(ctx context.Context, tx pgx.Tx, userID, id string) (*repoRow, error) {
	r, err := scanRepo(tx.QueryRow(ctx, repoSelect+` WHERE r.id = $2 GROUP BY r.id`, userID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNotFound
	}
	return r, err
}

// effectiveOf resolves a repository's stored policy.
func effectiveOf(ctx context.Context, tx pgx.Tx, r *repoRow) (policy.Effective, []byte, int64, error) {
	doc, version, err := repos.Policy(ctx, tx, r.ID, false)
	if err != nil {
		return policy.Effective{}, nil, 0, err
	}
	return policy.Resolve(doc, policy.RepoFacts{Private: r.Visibility != "public"}), doc, version, nil
}

// pageOf reads ?page=N, bounded to 1..maxPage.
func pageOf(raw string, maxPage int) (int, bool) {
	if raw == "" {
		return 1, true
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > maxPage {
		return 0, false
	}
	return n, true
}
