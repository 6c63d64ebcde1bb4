package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/postgres"
)

type migrateOptions struct{ env *env }

func newMigrateCmd(e *env, runF func(context.Context, *migrateOptions) error) *cobra.Command {
	if runF == nil {
		runF = runMigrate
	}
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply the control plane's database migrations",
		Long: `Apply the database migrations (QUAVON_DATABASE_URL, as a role that may create
roles and tables) in one transaction under an advisory lock, then River's.
Idempotent; refuses a schema newer than this build.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), &migrateOptions{env: e}) },
	}
}

func runMigrate(ctx context.Context, o *migrateOptions) error {
	cfg, err := config.LoadMigrate(o.env.environ)
	if err != nil {
		return err
	}
	db, err := postgres.OpenConfigured(ctx, cfg.DB, 2)
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := postgres.Migrate(ctx, db.Pool)
	if err != nil {
		return err
	}
	for _, m := range res.Applied {
		fmt.Fprintf(o.env.stdout, "applied %04d_%s\n", m.Version, m.Name)
	}
	_, err = fmt.Fprintf(o.env.stdout, "schema at version %d (was %d); River's migrations applied\n", res.To, res.From)
	return err
}
