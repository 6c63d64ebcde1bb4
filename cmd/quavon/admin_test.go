package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/testenv"
)

func TestAdminGrantAndRevoke(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	ctx := context.Background()
	s := cp.Seed(t, "acme", "app", "private")
	env := dbEnv(t, cp.DB, "quavon_app")
	quavon := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(ctx, args, env, &out, &errOut)
		return out.String() + errOut.String(), err
	}
	grants := func() (n int, actions []string) {
		err := cp.App.InTenant(ctx, s.Tenant, func(tx pgx.Tx) error {
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM role_grants g JOIN user_identities i ON i.user_id = g.user_id
				WHERE i.external_id = 583231 AND g.role = 'repo:review'`).Scan(&n); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, `SELECT action FROM audit_log ORDER BY seq`)
			if err != nil {
				return err
			}
			actions, err = pgx.CollectRows(rows, pgx.RowTo[string])
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return n, actions
	}
	args := []string{"--tenant", string(s.Tenant), "--login", "octocat", "--github-id", "583231", "--repo", "ACME/app", "--role", "repo:review"}
	for i, want := range []string{"granted", "already held"} {
		out, err := quavon(append([]string{"admin", "grant"}, args...)...)
		if err != nil || !strings.Contains(out, want) {
			t.Fatalf("grant %d: %v %s", i, err, out)
		}
	}
	if n, actions := grants(); n != 1 || strings.Join(actions, ",") != "role.grant" {
		t.Fatalf("after grant: %d %v", n, actions)
	}
	if out, err := quavon(append([]string{"admin", "revoke"}, args...)...); err != nil || !strings.Contains(out, "revoked") {
		t.Fatalf("revoke: %v %s", err, out)
	}
	if n, actions := grants(); n != 0 || strings.Join(actions, ",") != "role.grant,role.revoke" {
		t.Fatalf("after revoke: %d %v", n, actions)
	}
	if _, err := quavon("admin", "grant", "--tenant", string(s.Tenant), "--login", "x", "--github-id", "1", "--repo", "acme/nope", "--role", "repo:review"); !errors.Is(err, errNoSuchRepo) {
		t.Fatalf("unknown repository: %v", err)
	}
	var ue *usageErr
	if _, err := quavon("admin", "grant", "--tenant", string(s.Tenant), "--login", "x", "--github-id", "1", "--repo", "acme/app", "--role", "admin"); !errors.As(err, &ue) {
		t.Fatalf("bad role: %v", err)
	}
}
