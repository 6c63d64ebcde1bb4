package main

import (
	"context"
	"fmt"
	"io"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/postgres"
)

func runMigrate(ctx context.Context, environ []string, stdout io.Writer) error {
	cfg, err := config.Load(environ)
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
		fmt.Fprintf(stdout, "applied %04d_%s\n", m.Version, m.Name)
	}
	_, err = fmt.Fprintf(stdout, "schema at version %d (was %d); River's migrations applied\n", res.To, res.From)
	return err
}
