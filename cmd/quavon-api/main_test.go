package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/auth"
	"github.com/quavon/quavon/internal/testenv"
)

// The binary's wiring: configuration, the service role's connection, the
// API on a real listener.
func TestServes(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	s := cp.Seed(t, "acme", "app", "private")
	ctx := context.Background()
	var tok string
	err := cp.App.InTenant(ctx, s.Tenant, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO role_grants (tenant_id, user_id, repository_id, role)
			VALUES (quavon_current_tenant(), $1, $2, 'repo:manage')`, s.User, s.Repository); err != nil {
			return err
		}
		var err error
		tok, _, err = auth.Create(ctx, tx, s.Tenant, s.User, "t", nil)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(cp.AppURL)
	pw, _ := u.User.Password()
	u.User = url.User(u.User.Username())
	pwFile := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pwFile, []byte(pw), 0o600)
	env := []string{"QUAVON_DATABASE_URL=" + u.String(), "QUAVON_DATABASE_PASSWORD_FILE=" + pwFile, "QUAVON_API_LISTEN=127.0.0.1:0", "QUAVON_API_METRICS_LISTEN=127.0.0.1:0"}
	sctx, stop := context.WithCancel(ctx)
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(sctx, env, io.Discard, ready) }()
	addr := <-ready
	req, _ := http.NewRequest("GET", "http://"+addr+"/api/v1/repos/acme/app/policy", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), `"repository":"acme/app"`) {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
