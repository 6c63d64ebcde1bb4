package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/quavon/quavon/internal/audit"
	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/repos"
)

// adminGrantOptions names a role on a repository for a GitHub identity.
type adminGrantOptions struct {
	env      *env
	Revoke   bool
	Tenant   string
	Login    string
	GitHubID int64
	Repo     string // owner/name
	Role     string
}

func newAdminCmd(e *env, runF func(context.Context, *adminGrantOptions) error) *cobra.Command {
	if runF == nil {
		runF = runAdminGrant
	}
	cmd := &cobra.Command{Use: "admin", Short: "Instance administration: roles on repositories", Args: cobra.ArbitraryArgs, RunE: groupRunE}
	for _, revoke := range []bool{false, true} {
		o := &adminGrantOptions{env: e, Revoke: revoke}
		use, short := "grant", "Grant a GitHub user a role on a repository (creating the Quavon user)"
		if revoke {
			use, short = "revoke", "Revoke a GitHub user's role on a repository"
		}
		c := &cobra.Command{
			Use:   use + " --tenant UUID --login LOGIN --github-id ID --repo OWNER/NAME --role repo:manage|repo:review",
			Short: short,
			Long: short + ". The user signs in to the dashboard with that GitHub identity (host github.com, login and numeric id, " +
				"as GET /users/LOGIN shows it). The change is recorded in the tenant's audit log.",
			Args: noArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				if o.Tenant == "" || o.Login == "" || o.GitHubID <= 0 || o.Repo == "" || o.Role == "" {
					return usageError(cmd, "--tenant, --login, --github-id, --repo and --role are required")
				}
				if o.Role != repos.RoleManage && o.Role != repos.RoleReview {
					return usageError(cmd, "--role: want repo:manage or repo:review")
				}
				if owner, name, ok := strings.Cut(o.Repo, "/"); !ok || owner == "" || name == "" || strings.Contains(name, "/") {
					return usageError(cmd, "--repo: want owner/name")
				}
				return runF(cmd.Context(), o)
			},
		}
		c.Flags().StringVar(&o.Tenant, "tenant", "", "tenant `uuid`")
		c.Flags().StringVar(&o.Login, "login", "", "the user's GitHub `login`")
		c.Flags().Int64Var(&o.GitHubID, "github-id", 0, "the user's numeric GitHub `id`")
		c.Flags().StringVar(&o.Repo, "repo", "", "`owner/name`")
		c.Flags().StringVar(&o.Role, "role", "", "repo:manage or repo:review")
		cmd.AddCommand(c)
	}
	return cmd
}

var errNoSuchRepo = errors.New("no such repository in the tenant")

func runAdminGrant(ctx context.Context, o *adminGrantOptions) error {
	cfg, err := config.LoadMigrate(o.env.environ)
	if err != nil {
		return err
	}
	db, err := postgres.OpenConfigured(ctx, cfg.DB, 2)
	if err != nil {
		return err
	}
	defer db.Close()
	owner, name, _ := strings.Cut(o.Repo, "/")
	var changed bool
	err = db.InTenant(ctx, postgres.TenantID(o.Tenant), func(tx pgx.Tx) error {
		var repoID string
		err := tx.QueryRow(ctx, `SELECT id::text FROM repositories WHERE host = 'github.com' AND lower(owner) = lower($1) AND lower(name) = lower($2)`,
			owner, name).Scan(&repoID)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%s: %w", o.Repo, errNoSuchRepo)
		}
		if err != nil {
			return err
		}
		var userID string
		err = tx.QueryRow(ctx, `SELECT user_id::text FROM user_identities WHERE host = 'github.com' AND external_id = $1`, o.GitHubID).Scan(&userID)
		switch {
		case errors.Is(err, pgx.ErrNoRows) && o.Revoke:
			return nil
		case errors.Is(err, pgx.ErrNoRows):
			if err := tx.QueryRow(ctx, `INSERT INTO users (tenant_id, display_name) VALUES (quavon_current_tenant(), $1) RETURNING id::text`, o.Login).Scan(&userID); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO user_identities (tenant_id, user_id, host, login, external_id)
				VALUES (quavon_current_tenant(), $1, 'github.com', $2, $3)`, userID, o.Login, o.GitHubID); err != nil {
				return err
			}
		case err != nil:
			return err
		}
		var tag interface{ RowsAffected() int64 }
		action := "role.grant"
		if o.Revoke {
			action = "role.revoke"
			tag, err = tx.Exec(ctx, `DELETE FROM role_grants WHERE user_id = $1 AND repository_id = $2 AND role = $3`, userID, repoID, o.Role)
		} else {
			tag, err = tx.Exec(ctx, `INSERT INTO role_grants (tenant_id, user_id, repository_id, role) VALUES (quavon_current_tenant(), $1, $2, $3)
				ON CONFLICT DO NOTHING`, userID, repoID, o.Role)
		}
		if err != nil {
			return err
		}
		if changed = tag.RowsAffected() > 0; !changed {
			return nil
		}
		_, err = audit.Record(ctx, tx, audit.Event{Actor: "operator", Action: action, SubjectType: "user", SubjectID: userID,
			Metadata: map[string]any{"repository": o.Repo, "role": o.Role, "login": o.Login, "githubId": o.GitHubID}})
		return err
	})
	if err != nil {
		return err
	}
	verb := map[bool]string{false: "granted", true: "revoked"}[o.Revoke]
	if !changed {
		verb = map[bool]string{false: "already held", true: "not held"}[o.Revoke]
	}
	_, err = fmt.Fprintf(o.env.stdout, "%s %s on %s: %s\n", o.Login, o.Role, o.Repo, verb)
	return err
}
