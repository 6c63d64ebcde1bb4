package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Querier is what a pool, a connection and a transaction have in common.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// TenantTables lists the tables of the public schema with a tenant_id
// column.
func TenantTables(ctx context.Context, q Querier) ([]string, error) {
	rows, err := q.Query(ctx, `
		SELECT c.relname FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
		JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
		WHERE c.relkind IN ('r', 'p')
		ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// CheckTenancy returns one problem per tenant table that is not held to
// tenancy: RLS not enabled or not forced, no policy using
// quavon_current_tenant(), owned by a role other than quavon_owner. Every
// migration must keep it empty (the schema test runs it).
func CheckTenancy(ctx context.Context, q Querier) ([]string, error) {
	rows, err := q.Query(ctx, `
		SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, pg_get_userbyid(c.relowner),
			coalesce((SELECT bool_and(p.polqual IS NOT NULL AND p.polwithcheck IS NOT NULL
				AND pg_get_expr(p.polqual, p.polrelid) LIKE '%quavon_current_tenant()%'
				AND pg_get_expr(p.polwithcheck, p.polrelid) LIKE '%quavon_current_tenant()%'
				AND p.polpermissive AND p.polcmd = '*')
				FROM pg_policy p WHERE p.polrelid = c.oid), false)
		FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
		JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
		WHERE c.relkind IN ('r', 'p')
		ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var name, owner string
		var rls, force, policy bool
		if err := rows.Scan(&name, &rls, &force, &owner, &policy); err != nil {
			return nil, err
		}
		if !rls {
			problems = append(problems, fmt.Sprintf("%s: row level security not enabled", name))
		}
		if !force {
			problems = append(problems, fmt.Sprintf("%s: row level security not forced", name))
		}
		if !policy {
			problems = append(problems, fmt.Sprintf("%s: no tenant policy on quavon_current_tenant() for all commands", name))
		}
		if owner != "quavon_owner" {
			problems = append(problems, fmt.Sprintf("%s: owned by %s, not quavon_owner", name, owner))
		}
	}
	return problems, rows.Err()
}
