package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/auth"
	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/postgres"
)

// runTokenCreate is `quavon api-token create`: it prints a new token once.
func runTokenCreate(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("api-token create", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tenant := fs.String("tenant", "", "tenant `uuid`")
	user := fs.String("user", "", "user `uuid` the token acts as")
	name := fs.String("name", "", "a `name` to recognise the token by")
	ttl := fs.Duration("expires-in", 90*24*time.Hour, "lifetime (0: never expires)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *tenant == "" || *user == "" || *name == "" || fs.NArg() != 0 {
		fs.Usage()
		return errUsage
	}
	cfg, err := config.Load(environ)
	if err != nil {
		return err
	}
	db, err := postgres.OpenConfigured(ctx, cfg.DB, 2)
	if err != nil {
		return err
	}
	defer db.Close()
	var expires *time.Time
	if *ttl > 0 {
		e := time.Now().Add(*ttl).UTC()
		expires = &e
	}
	var token string
	err = db.InTenant(ctx, postgres.TenantID(*tenant), func(tx pgx.Tx) error {
		var err error
		token, _, err = auth.Create(ctx, tx, postgres.TenantID(*tenant), *user, *name, expires)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(stderr, "quavon: the token is shown once; only its hash is stored")
	_, err = fmt.Fprintln(stdout, token)
	return err
}
