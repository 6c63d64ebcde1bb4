package repos

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/audit"
)

// ErrBadRole: a role other than RoleManage and RoleReview.
var ErrBadRole = errors.New("unknown role: want repo:manage or repo:review")

// GrantChange grants or revokes one role on one repository of the
// transaction's tenant for a code-host identity. Instance admins make
// these changes (quavon admin grant|revoke and the dashboard's grants
// page); both go through ChangeGrant.
type GrantChange struct {
	// Host, ExternalID and Login name the identity (the numeric id is what
	// matches; the login is stored for display).
	Host       string
	ExternalID int64
	Login      string
	// Owner and Name are the repository (case-insensitive, as GitHub).
	Owner, Name string
	Role        string
	Revoke      bool
}

// GrantActor is who made a change, for the audit entry.
type GrantActor struct {
	// UserID is the acting Quavon user of this tenant, if any.
	UserID string
	// Name is the audit log's actor ("operator", "instance-admin:…").
	Name string
	// Identity is recorded in the entry's metadata when set.
	Identity map[string]any
}

// ChangeGrant applies c in tx and records it in the tenant's audit log
// (last in the transaction, as audit.Record needs). A grant creates the
// Quavon user and identity when the tenant does not know it; a revoke of an
// identity or role not held changes nothing. changed says whether a row
// changed (nothing is audited otherwise).
func ChangeGrant(ctx context.Context, tx pgx.Tx, c GrantChange, by GrantActor) (changed bool, err error) {
	if c.Role != RoleManage && c.Role != RoleReview {
		return false, ErrBadRole
	}
	switch {
	case c.Host == "" || c.ExternalID <= 0:
		return false, errors.New("repos.ChangeGrant: a host and a positive numeric id are required")
	case c.Login == "" || len(c.Login) > 100:
		return false, errors.New("repos.ChangeGrant: a login of 1 to 100 characters is required")
	}
	full := c.Owner + "/" + c.Name
	var repoID string
	err = tx.QueryRow(ctx, `SELECT id::text FROM repositories WHERE host = 'github.com' AND lower(owner) = lower($1) AND lower(name) = lower($2)`,
		c.Owner, c.Name).Scan(&repoID)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, fmt.Errorf("%s: %w", full, ErrNotFound)
	}
	if err != nil {
		return false, fmt.Errorf("repos.ChangeGrant %s: %w", full, err)
	}
	var userID string
	err = tx.QueryRow(ctx, `SELECT user_id::text FROM user_identities WHERE host = $1 AND external_id = $2`, c.Host, c.ExternalID).Scan(&userID)
	switch {
	case errors.Is(err, pgx.ErrNoRows) && c.Revoke:
		return false, nil
	case errors.Is(err, pgx.ErrNoRows):
		if err := tx.QueryRow(ctx, `INSERT INTO users (tenant_id, display_name) VALUES (quavon_current_tenant(), $1) RETURNING id::text`, c.Login).Scan(&userID); err != nil {
			return false, fmt.Errorf("repos.ChangeGrant: user: %w", err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO user_identities (tenant_id, user_id, host, login, external_id)
			VALUES (quavon_current_tenant(), $1, $2, $3, $4)`, userID, c.Host, c.Login, c.ExternalID); err != nil {
			return false, fmt.Errorf("repos.ChangeGrant: identity: %w", err)
		}
	case err != nil:
		return false, fmt.Errorf("repos.ChangeGrant: identity: %w", err)
	}
	var tag interface{ RowsAffected() int64 }
	action := "role.grant"
	if c.Revoke {
		action = "role.revoke"
		tag, err = tx.Exec(ctx, `DELETE FROM role_grants WHERE user_id = $1 AND repository_id = $2 AND role = $3`, userID, repoID, c.Role)
	} else {
		tag, err = tx.Exec(ctx, `INSERT INTO role_grants (tenant_id, user_id, repository_id, role) VALUES (quavon_current_tenant(), $1, $2, $3)
			ON CONFLICT DO NOTHING`, userID, repoID, c.Role)
	}
	if err != nil {
		return false, fmt.Errorf("repos.ChangeGrant: %s: %w", action, err)
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	meta := map[string]any{"repository": full, "role": c.Role, "login": c.Login, "githubId": c.ExternalID}
	if c.Host != "github.com" {
		meta["host"] = c.Host
	}
	if by.Identity != nil {
		meta["by"] = by.Identity
	}
	if _, err := audit.Record(ctx, tx, audit.Event{ActorUserID: by.UserID, Actor: by.Name, Action: action, SubjectType: "user",
		SubjectID: userID, Metadata: meta}); err != nil {
		return false, err
	}
	return true, nil
}

// GrantRow is one role grant as the grants page lists it.
type GrantRow struct {
	UserID     string
	Host       string
	Login      string
	ExternalID int64
	Owner      string
	Name       string
	Role       string
	Created    time.Time
}

// Grants lists the tenant's role grants by repository and login, at most
// limit of them (and whether there were more).
func Grants(ctx context.Context, tx pgx.Tx, limit int) ([]GrantRow, bool, error) {
	rows, err := tx.Query(ctx, `SELECT g.user_id::text, coalesce(i.host, ''), coalesce(i.login, ''), coalesce(i.external_id, 0),
			r.owner, r.name, g.role, g.created_at
		FROM role_grants g JOIN repositories r ON r.id = g.repository_id
		LEFT JOIN LATERAL (SELECT host, login, external_id FROM user_identities u WHERE u.user_id = g.user_id
			ORDER BY host, external_id LIMIT 1) i ON true
		ORDER BY lower(r.owner), lower(r.name), lower(i.login), g.role
		LIMIT $1`, limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("repos.Grants: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (GrantRow, error) {
		var g GrantRow
		return g, r.Scan(&g.UserID, &g.Host, &g.Login, &g.ExternalID, &g.Owner, &g.Name, &g.Role, &g.Created)
	})
	if err != nil {
		return nil, false, fmt.Errorf("repos.Grants: %w", err)
	}
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// Names lists the tenant's repositories' owner/name, sorted, at most limit.
func Names(ctx context.Context, tx pgx.Tx, limit int) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT owner || '/' || name FROM repositories ORDER BY lower(owner), lower(name) LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("repos.Names: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
