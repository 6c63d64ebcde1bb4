package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/quavon/quavon/internal/auth"
	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/postgres"
)

type tokenCreateOptions struct {
	env       *env
	Tenant    string
	User      string
	Name      string
	ExpiresIn time.Duration
}

func newAPITokenCmd(e *env, runF func(context.Context, *tokenCreateOptions) error) *cobra.Command {
	if runF == nil {
		runF = runTokenCreate
	}
	cmd := &cobra.Command{Use: "api-token", Short: "API tokens", Args: cobra.ArbitraryArgs, RunE: groupRunE}
	o := &tokenCreateOptions{env: e}
	create := &cobra.Command{
		Use:   "create --tenant UUID --user UUID --name NAME",
		Short: "Print a new API token for a user (shown once)",
		Long:  "Print a new API token for the user: it is shown once; only its SHA-256 is stored.",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Tenant == "" || o.User == "" || o.Name == "" {
				return usageError(cmd, "--tenant, --user and --name are required")
			}
			return runF(cmd.Context(), o)
		},
	}
	create.Flags().StringVar(&o.Tenant, "tenant", "", "tenant `uuid`")
	create.Flags().StringVar(&o.User, "user", "", "user `uuid` the token acts as")
	create.Flags().StringVar(&o.Name, "name", "", "a `name` to recognise the token by")
	create.Flags().DurationVar(&o.ExpiresIn, "expires-in", 90*24*time.Hour, "lifetime (0: never expires)")
	cmd.AddCommand(create)
	return cmd
}

// runTokenCreate prints a new token once.
func runTokenCreate(ctx context.Context, o *tokenCreateOptions) error {
	cfg, err := config.LoadMigrate(o.env.environ)
	if err != nil {
		return err
	}
	db, err := postgres.OpenConfigured(ctx, cfg.DB, 2)
	if err != nil {
		return err
	}
	defer db.Close()
	var expires *time.Time
	if o.ExpiresIn > 0 {
		e := time.Now().Add(o.ExpiresIn).UTC()
		expires = &e
	}
	var token string
	err = db.InTenant(ctx, postgres.TenantID(o.Tenant), func(tx pgx.Tx) error {
		var err error
		token, _, err = auth.Create(ctx, tx, postgres.TenantID(o.Tenant), o.User, o.Name, expires)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(o.env.stderr, "quavon: the token is shown once; only its hash is stored")
	_, err = fmt.Fprintln(o.env.stdout, token)
	return err
}
