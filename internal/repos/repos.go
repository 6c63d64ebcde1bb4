// Package repos is the store of repositories, their policies and the roles
// users hold on them: the queries the policy API runs today and the
// dashboard will run, in one place. Every function runs in the caller's
// tenant transaction (postgres.DB.InTenant), so row-level security applies.
package repos

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Outcomes callers branch on.
var (
	// ErrNotFound: no such repository in the tenant.
	ErrNotFound = errors.New("repository not found")
	// ErrForbidden: the user lacks the role on the repository.
	ErrForbidden = errors.New("forbidden")
	// ErrVersionConflict: the policy changed since the version the caller
	// read (optimistic concurrency).
	ErrVersionConflict = errors.New("the policy changed since it was read")
)

// Roles a user can hold on a repository (role_grants).
const (
	RoleManage = "repo:manage"
	RoleReview = "repo:review"
)

// Repository is what the callers need of a repository row.
type Repository struct {
	ID         string
	Owner      string
	Name       string
	Visibility string // public, private, internal
}

// FullName is "owner/name".
func (r *Repository) FullName() string { return r.Owner + "/" + r.Name }

// FindWithRole finds owner/name (case-insensitively, as GitHub does) and
// checks that userID holds role on it.
func FindWithRole(ctx context.Context, tx pgx.Tx, userID, owner, name, role string) (*Repository, error) {
	var r Repository
	err := tx.QueryRow(ctx, `SELECT id::text, owner, name, visibility FROM repositories
		WHERE host = 'github.com' AND lower(owner) = lower($1) AND lower(name) = lower($2)`, owner, name).
		Scan(&r.ID, &r.Owner, &r.Name, &r.Visibility)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	var ok bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM role_grants
		WHERE user_id = $1 AND repository_id = $2 AND role = $3)`, userID, r.ID, role).Scan(&ok); err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrForbidden
	}
	return &r, nil
}

// Policy reads the repository's stored policy document and its version, or
// (nil, 0) when it has none. forUpdate locks the row for a following
// SavePolicy in the same transaction.
func Policy(ctx context.Context, tx pgx.Tx, repoID string, forUpdate bool) ([]byte, int64, error) {
	q := "SELECT document::text, version FROM repository_policies WHERE repository_id = $1"
	if forUpdate {
		q += " FOR UPDATE"
	}
	var doc string
	var version int64
	err := tx.QueryRow(ctx, q, repoID).Scan(&doc, &version)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, nil
	}
	return []byte(doc), version, err
}

// SavePolicy stores doc (canonical JSON) as the version after from, which
// must be the version read with Policy(…, forUpdate) in this transaction (0
// for none). A concurrent first save loses on the primary key and gets
// ErrVersionConflict.
func SavePolicy(ctx context.Context, tx pgx.Tx, repoID string, doc []byte, from int64, userID string) (int64, error) {
	var err error
	if from == 0 {
		_, err = tx.Exec(ctx, `INSERT INTO repository_policies (tenant_id, repository_id, document, version, updated_by)
			VALUES (quavon_current_tenant(), $1, $2, 1, $3)`, repoID, doc, userID)
	} else {
		_, err = tx.Exec(ctx, `UPDATE repository_policies SET document = $2, version = $3, updated_at = now(), updated_by = $4
			WHERE repository_id = $1 AND version = $5`, repoID, doc, from+1, userID, from)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return 0, ErrVersionConflict
	}
	if err != nil {
		return 0, err
	}
	return from + 1, nil
}
