package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

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
		var err error
		changed, err = repos.ChangeGrant(ctx, tx, repos.GrantChange{Host: "github.com", ExternalID: o.GitHubID, Login: o.Login,
			Owner: owner, Name: name, Role: o.Role, Revoke: o.Revoke}, repos.GrantActor{Name: "operator"})
		if errors.Is(err, repos.ErrNotFound) {
			return fmt.Errorf("%s: %w", o.Repo, errNoSuchRepo)
		}
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
