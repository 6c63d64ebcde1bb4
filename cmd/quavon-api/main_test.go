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

// With QUAVON_WEB_PUBLIC_URL the same listener serves the dashboard (with
// its headers) beside the JSON API and the health check.
func TestServesTheDashboard(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	ctx := context.Background()
	u, _ := url.Parse(cp.AppURL)
	pw, _ := u.User.Password()
	u.User = url.User(u.User.Username())
	dir := t.TempDir()
	write := func(name, v string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := []string{"QUAVON_DATABASE_URL=" + u.String(), "QUAVON_DATABASE_PASSWORD_FILE=" + write("pw", pw), "QUAVON_API_LISTEN=127.0.0.1:0",
		"QUAVON_API_METRICS_LISTEN=", "QUAVON_WEB_PUBLIC_URL=https://quavon.example", "QUAVON_GITHUB_REVIEW_CLIENT_ID=Iv23liexample",
		"QUAVON_GITHUB_REVIEW_CLIENT_SECRET_FILE=" + write("client", "0123456789abcdef0123456789abcdef01234567"),
		"QUAVON_BROKER_ADDR=unix:" + filepath.Join(dir, "broker.sock"), "QUAVON_BROKER_CREDENTIAL_FILE=" + write("cred", "qbc_not-used-by-this-test-0123456789abcdef")}
	sctx, stop := context.WithCancel(ctx)
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(sctx, env, io.Discard, ready) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	get := func(path string) (*http.Response, string) {
		res, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res, string(b)
	}
	res, body := get("/repos")
	if res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "Sign in with GitHub") ||
		!strings.Contains(res.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Fatalf("dashboard: %d %v", res.StatusCode, res.Header)
	}
	if res, _ := get("/healthz"); res.StatusCode != http.StatusNoContent {
		t.Fatalf("healthz: %d", res.StatusCode)
	}
	if res, body := get("/api/v1/repos/acme/app/policy"); res.StatusCode != http.StatusUnauthorized || !strings.Contains(body, `"unauthenticated"`) {
		t.Fatalf("API: %d %s", res.StatusCode, body)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
