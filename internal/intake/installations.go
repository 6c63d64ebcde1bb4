package intake

import (
	"github.com/quavon/quavon/internal/github"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/postgres"
)

// Account is a GitHub account an app is installed on.
type Account struct {
	ID    int64
	Login string
	Type  string // Organization, User, Enterprise
}

// Repo is a repository as a webhook names it.
type Repo struct {
	ID            int64
	Owner         string
	Name          string
	Private       bool
	Visibility    string // public, private, internal ("" : from Private)
	DefaultBranch string
	Archived      bool
}

func (r Repo) visibility() string {
	switch r.Visibility {
	case "public", "private", "internal":
		return r.Visibility
	}
	if r.Private {
		return "private"
	}
	return "public"
}

// Installation is an installation as a webhook names it.
type Installation struct {
	ID          int64
	Account     Account
	Permissions map[string]string
	Selection   string // all, selected
}

// ErrUnroutable: the event's installation is unknown (its installation
// event never arrived, or it was deleted): acknowledged, not stored.
var ErrUnroutable = errors.New("unknown installation")

// routeInstallation finds the tenant of an installation without a tenant
// (quavon_route_installation, a SECURITY DEFINER function).
func routeInstallation(ctx context.Context, db *postgres.DB, kind github.AppKind, id int64) (postgres.TenantID, error) {
	var tenant *string
	if err := db.Pool.QueryRow(ctx, "SELECT quavon_route_installation($1, $2)::text", string(kind), id).Scan(&tenant); err != nil {
		return "", err
	}
	if tenant == nil {
		return "", ErrUnroutable
	}
	return postgres.TenantID(*tenant), nil
}

// routeNewInstallation is the tenant of a new installation: its own if it
// is known, else that of the account's other installation, else a new
// tenant named after the account, created now.
func routeNewInstallation(ctx context.Context, db *postgres.DB, kind github.AppKind, in Installation) (postgres.TenantID, error) {
	t, err := routeInstallation(ctx, db, kind, in.ID)
	if !errors.Is(err, ErrUnroutable) {
		return t, err
	}
	var tenant *string
	if err := db.Pool.QueryRow(ctx, "SELECT quavon_route_account($1)::text", in.Account.ID).Scan(&tenant); err != nil {
		return "", err
	}
	if tenant != nil {
		return postgres.TenantID(*tenant), nil
	}
	var id string
	if err := db.Pool.QueryRow(ctx, "SELECT gen_random_uuid()::text").Scan(&id); err != nil {
		return "", err
	}
	err = db.InTenant(ctx, postgres.TenantID(id), func(tx pgx.Tx) error {
		name := in.Account.Login
		if name == "" {
			name = fmt.Sprintf("github-account-%d", in.Account.ID)
		}
		_, err := tx.Exec(ctx, "INSERT INTO tenants (id, name) VALUES (quavon_current_tenant(), $1)", name)
		return err
	})
	return postgres.TenantID(id), err
}

func installationColumn(kind github.AppKind) string {
	if kind == github.AppFixer {
		return "fixer_installation_id"
	}
	return "review_installation_id"
}

// upsertInstallation records (or refreshes) an installation in tx's tenant.
func upsertInstallation(ctx context.Context, tx pgx.Tx, kind github.AppKind, in Installation) error {
	perms, err := json.Marshal(in.Permissions)
	if err != nil {
		return err
	}
	if in.Permissions == nil {
		perms = []byte("{}")
	}
	selection := in.Selection
	if selection != "all" {
		selection = "selected"
	}
	accountType := in.Account.Type
	switch accountType {
	case "Organization", "User", "Enterprise":
	default:
		accountType = "Organization"
	}
	_, err = tx.Exec(ctx, `INSERT INTO installations (tenant_id, app_kind, external_id, account_login, account_id, account_type,
			permissions, repository_selection)
		VALUES (quavon_current_tenant(), $1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (app_kind, external_id) DO UPDATE SET account_login = EXCLUDED.account_login,
			account_id = EXCLUDED.account_id, account_type = EXCLUDED.account_type, permissions = EXCLUDED.permissions,
			repository_selection = EXCLUDED.repository_selection`,
		string(kind), in.ID, in.Account.Login, in.Account.ID, accountType, perms, selection)
	return err
}

// addRepositories records repos as covered by the installation.
func addRepositories(ctx context.Context, tx pgx.Tx, kind github.AppKind, installationID int64, repos []Repo) error {
	col := installationColumn(kind)
	for _, r := range repos {
		if r.ID <= 0 || r.Owner == "" || r.Name == "" {
			return fmt.Errorf("repository without id, owner or name: %+v", r)
		}
		branch := r.DefaultBranch
		if branch == "" {
			branch = "main"
		}
		_, err := tx.Exec(ctx, `INSERT INTO repositories (tenant_id, host, external_id, owner, name, visibility, default_branch,
				archived, `+col+`)
			VALUES (quavon_current_tenant(), 'github.com', $1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (host, external_id) DO UPDATE SET owner = EXCLUDED.owner, name = EXCLUDED.name,
				visibility = EXCLUDED.visibility, archived = EXCLUDED.archived, `+col+` = EXCLUDED.`+col,
			r.ID, r.Owner, r.Name, r.visibility(), branch, r.Archived, installationID)
		if err != nil {
			return fmt.Errorf("repository %s/%s: %w", r.Owner, r.Name, err)
		}
	}
	return nil
}

// removeRepositories marks repos as no longer covered by this app; the
// rows (and their policies) stay while the other app covers them, and go
// when neither does.
func removeRepositories(ctx context.Context, tx pgx.Tx, kind github.AppKind, installationID int64, repoIDs []int64) error {
	col := installationColumn(kind)
	if _, err := tx.Exec(ctx, `UPDATE repositories SET `+col+` = NULL WHERE host = 'github.com' AND external_id = ANY($1) AND `+col+` = $2`,
		repoIDs, installationID); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `DELETE FROM repositories WHERE host = 'github.com' AND external_id = ANY($1)
		AND review_installation_id IS NULL AND fixer_installation_id IS NULL`, repoIDs)
	return err
}

// deleteInstallation removes an installation and its coverage of every
// repository.
func deleteInstallation(ctx context.Context, tx pgx.Tx, kind github.AppKind, installationID int64) error {
	col := installationColumn(kind)
	rows, err := tx.Query(ctx, `SELECT external_id FROM repositories WHERE `+col+` = $1`, installationID)
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	if err := removeRepositories(ctx, tx, kind, installationID, ids); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `DELETE FROM installations WHERE app_kind = $1 AND external_id = $2`, string(kind), installationID)
	return err
}

func setSuspended(ctx context.Context, tx pgx.Tx, kind github.AppKind, installationID int64, at *time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE installations SET suspended_at = $3 WHERE app_kind = $1 AND external_id = $2`,
		string(kind), installationID, at)
	return err
}

// updateRepository applies a repository event to an existing row.
func updateRepository(ctx context.Context, tx pgx.Tx, r Repo) error {
	_, err := tx.Exec(ctx, `UPDATE repositories SET owner = $2, name = $3, visibility = $4, archived = $5,
			default_branch = coalesce(nullif($6, ''), default_branch)
		WHERE host = 'github.com' AND external_id = $1`,
		r.ID, r.Owner, r.Name, r.visibility(), r.Archived, r.DefaultBranch)
	return err
}

func deleteRepository(ctx context.Context, tx pgx.Tx, repoID int64) error {
	_, err := tx.Exec(ctx, `DELETE FROM repositories WHERE host = 'github.com' AND external_id = $1`, repoID)
	return err
}

// splitFullName splits "owner/name".
func splitFullName(full string) (string, string, bool) {
	owner, name, ok := strings.Cut(full, "/")
	return owner, name, ok && owner != "" && name != "" && !strings.Contains(name, "/")
}
