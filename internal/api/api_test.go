package api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/api"
	"github.com/quavon/quavon/internal/auth"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/testenv"
)

type fixture struct {
	cp      *testenv.ControlPlane
	srv     *httptest.Server
	acme    testenv.Seeded
	manager string // token with repo:manage on acme/app
	viewer  string // token with repo:review only
	other   string // token of another tenant
}

func grant(t *testing.T, cp *testenv.ControlPlane, s testenv.Seeded, user, role string) {
	t.Helper()
	err := cp.App.InTenant(context.Background(), s.Tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), `INSERT INTO role_grants (tenant_id, user_id, repository_id, role)
			VALUES (quavon_current_tenant(), $1, $2, $3)`, user, s.Repository, role)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func token(t *testing.T, db *postgres.DB, tenant postgres.TenantID, user string, expires *time.Time) string {
	t.Helper()
	var tok string
	err := db.InTenant(context.Background(), tenant, func(tx pgx.Tx) error {
		var err error
		tok, _, err = auth.Create(context.Background(), tx, tenant, user, "test", expires)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func newUser(t *testing.T, cp *testenv.ControlPlane, tenant postgres.TenantID) string {
	t.Helper()
	var id string
	err := cp.App.InTenant(context.Background(), tenant, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), "INSERT INTO users (tenant_id) VALUES (quavon_current_tenant()) RETURNING id::text").Scan(&id)
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func setup(t *testing.T, visibility string) *fixture {
	t.Helper()
	cp := testenv.NewControlPlane(t, 20)
	f := &fixture{cp: cp, acme: cp.Seed(t, "acme", "app", visibility)}
	grant(t, cp, f.acme, f.acme.User, "repo:manage")
	f.manager = token(t, cp.App, f.acme.Tenant, f.acme.User, nil)
	viewer := newUser(t, cp, f.acme.Tenant)
	grant(t, cp, f.acme, viewer, "repo:review")
	f.viewer = token(t, cp.App, f.acme.Tenant, viewer, nil)
	other := cp.Seed(t, "other", "app", "private")
	grant(t, cp, other, other.User, "repo:manage")
	f.other = token(t, cp.App, other.Tenant, other.User, nil)
	f.srv = httptest.NewServer((&api.Server{DB: cp.App}).Handler())
	t.Cleanup(f.srv.Close)
	return f
}

type response struct {
	status int
	etag   string
	body   map[string]any
}

func (f *fixture) do(t *testing.T, method, path, tok string, headers map[string]string, body string) response {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	r := response{status: res.StatusCode, etag: res.Header.Get("ETag")}
	if err := json.Unmarshal(data, &r.body); err != nil {
		t.Fatalf("%s %s: %d, body not JSON: %q", method, path, res.StatusCode, data)
	}
	return r
}

func errCode(r response) string {
	e, _ := r.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

const policyPath = "/api/v1/repos/acme/app/policy"

var jsonCT = map[string]string{"Content-Type": "application/json"}

func withMatch(etag string) map[string]string {
	return map[string]string{"Content-Type": "application/json", "If-Match": etag}
}

func TestAuthentication(t *testing.T) {
	f := setup(t, "private")
	ctx := context.Background()
	expired := time.Now().Add(-time.Minute)
	old := token(t, f.cp.App, f.acme.Tenant, f.acme.User, &expired)
	revoked := token(t, f.cp.App, f.acme.Tenant, f.acme.User, nil)
	err := f.cp.App.InTenant(ctx, f.acme.Tenant, func(tx pgx.Tx) error {
		sum := sha256.Sum256([]byte(revoked))
		_, err := tx.Exec(ctx, "UPDATE api_tokens SET revoked_at = now() WHERE token_hash = $1", sum[:])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	forged := f.manager[:len(f.manager)-4] + "AAAA"
	for name, tok := range map[string]string{"none": "", "garbage": "abc", "expired": old, "revoked": revoked, "forged": forged,
		"other tenant part": strings.Replace(f.manager, strings.ReplaceAll(string(f.acme.Tenant), "-", ""), strings.Repeat("0", 32), 1)} {
		if r := f.do(t, "GET", policyPath, tok, nil, ""); r.status != 401 || errCode(r) != "unauthenticated" {
			t.Errorf("%s token: %d %v", name, r.status, r.body)
		}
	}
	// Only the hash is stored.
	var stored []byte
	err = f.cp.App.InTenant(ctx, f.acme.Tenant, func(tx pgx.Tx) error {
		sum := sha256.Sum256([]byte(f.manager))
		return tx.QueryRow(ctx, "SELECT token_hash FROM api_tokens WHERE token_hash = $1", sum[:]).Scan(&stored)
	})
	if err != nil || bytes.Contains(stored, []byte(f.manager)) {
		t.Fatalf("stored %x, %v", stored, err)
	}
}

func TestPolicyLifecycle(t *testing.T) {
	f := setup(t, "private")
	r := f.do(t, "GET", policyPath, f.manager, nil, "")
	if r.status != 200 || r.etag != `"0"` {
		t.Fatalf("GET defaults: %d %q %v", r.status, r.etag, r.body)
	}
	eff := r.body["effective"].(map[string]any)
	if eff["fix"] != "off" || eff["reviewFixes"] != "off" {
		t.Fatalf("defaults: %v", eff)
	}
	body := `{"features":{"fix":{"mode":"auto","testCommand":"npm test"},"sast":{"mode":"on"}}}`
	if r := f.do(t, "PUT", policyPath, f.manager, jsonCT, body); r.status != 428 || errCode(r) != "precondition_required" {
		t.Fatalf("PUT without If-Match: %d %v", r.status, r.body)
	}
	if r := f.do(t, "PUT", policyPath, f.manager, map[string]string{"If-Match": `"0"`, "Content-Type": "text/plain"}, body); r.status != 415 {
		t.Fatalf("PUT text/plain: %d %v", r.status, r.body)
	}
	r = f.do(t, "PUT", policyPath, f.manager, withMatch(`"0"`), body)
	if r.status != 200 || r.etag != `"1"` {
		t.Fatalf("PUT: %d %q %v", r.status, r.etag, r.body)
	}
	if eff := r.body["effective"].(map[string]any); eff["fix"] != "auto" || eff["sast"] != "on" {
		t.Fatalf("effective after PUT: %v", eff)
	}
	// A stale ETag loses.
	if r := f.do(t, "PUT", policyPath, f.manager, withMatch(`"0"`), body); r.status != 412 || errCode(r) != "precondition_failed" {
		t.Fatalf("stale If-Match: %d %v", r.status, r.body)
	}
	r = f.do(t, "PUT", policyPath, f.manager, withMatch(`"1"`), `{"features":{"fix":{"mode":"approval"}}}`)
	if r.status != 200 || r.etag != `"2"` {
		t.Fatalf("second PUT: %d %v", r.status, r.body)
	}
	// Both changes are in the audit log, with their diffs.
	ctx := context.Background()
	var entries []string
	err := f.cp.App.InTenant(ctx, f.acme.Tenant, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT metadata::text FROM audit_log WHERE action = 'repository.policy.update' ORDER BY id`)
		if err != nil {
			return err
		}
		entries, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || !strings.Contains(entries[0], "/features/fix/mode") || !strings.Contains(entries[0], `"auto"`) ||
		!strings.Contains(entries[1], `"approval"`) || !strings.Contains(entries[1], `"toVersion": 2`) && !strings.Contains(entries[1], `"toVersion":2`) {
		t.Fatalf("audit entries: %v", entries)
	}
}

func TestPolicyValidationAndLimits(t *testing.T) {
	f := setup(t, "private")
	r := f.do(t, "PUT", policyPath, f.manager, withMatch(`"0"`), `{"features":{"fix":{"mode":"sometimes","maxRunsPerDay":-1}}}`)
	if r.status != 422 || errCode(r) != "validation_failed" {
		t.Fatalf("invalid policy: %d %v", r.status, r.body)
	}
	details := r.body["error"].(map[string]any)["details"].([]any)
	paths := map[string]bool{}
	for _, d := range details {
		paths[d.(map[string]any)["path"].(string)] = true
	}
	if !paths["/features/fix/mode"] || !paths["/features/fix/maxRunsPerDay"] {
		t.Fatalf("field errors: %v", details)
	}
	big := `{"features":{"fix":{"testCommand":"` + strings.Repeat("x", api.MaxBodyBytes) + `"}}}`
	if r := f.do(t, "PUT", policyPath, f.manager, withMatch(`"0"`), big); r.status != 413 {
		t.Fatalf("oversize: %d %v", r.status, r.body)
	}
	// Nothing was stored.
	if r := f.do(t, "GET", policyPath, f.manager, nil, ""); r.etag != `"0"` {
		t.Fatalf("after refusals: %q", r.etag)
	}
}

func TestPolicyAuthorization(t *testing.T) {
	f := setup(t, "private")
	for _, m := range []string{"GET", "PUT"} {
		if r := f.do(t, m, policyPath, f.viewer, withMatch(`"0"`), `{}`); r.status != 403 || errCode(r) != "forbidden" {
			t.Errorf("%s as repo:review: %d %v", m, r.status, r.body)
		}
		if r := f.do(t, m, policyPath, f.other, withMatch(`"0"`), `{}`); r.status != 404 || errCode(r) != "not_found" {
			t.Errorf("%s from another tenant: %d %v", m, r.status, r.body)
		}
	}
	if r := f.do(t, "GET", "/api/v1/repos/acme/nope/policy", f.manager, nil, ""); r.status != 404 {
		t.Errorf("unknown repository: %d", r.status)
	}
}

// auto on a public repository is stored as asked but applies as approval.
func TestAutoIsDowngradedOnPublicRepositories(t *testing.T) {
	f := setup(t, "public")
	r := f.do(t, "PUT", policyPath, f.manager, withMatch(`"0"`), `{"features":{"fix":{"mode":"auto"}}}`)
	if r.status != 200 {
		t.Fatalf("%d %v", r.status, r.body)
	}
	eff := r.body["effective"].(map[string]any)
	if eff["fix"] != "approval" || eff["downgrades"] == nil {
		t.Fatalf("effective on a public repository: %v", eff)
	}
}

// Concurrent writers with the same ETag: exactly one wins.
func TestConcurrentPutsOneWins(t *testing.T) {
	f := setup(t, "private")
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for i := range 10 {
		wg.Go(func() {
			body := `{"features":{"fix":{"triggerLabels":["fix-` + string(rune('a'+i)) + `"]}}}`
			r := f.do(t, "PUT", policyPath, f.manager, withMatch(`"0"`), body)
			mu.Lock()
			statuses[r.status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if statuses[200] != 1 || statuses[412] != 9 {
		t.Fatalf("statuses %v, want one 200 and nine 412", statuses)
	}
}
