package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/repos"
	"github.com/quavon/quavon/internal/web/webtest"
)

type auditRow struct {
	Actor, ActorUser, Action string
	Meta                     map[string]any
}

func lastAudit(t *testing.T, f *webtest.Fixture, tenant postgres.TenantID, action string) *auditRow {
	t.Helper()
	var a auditRow
	var meta string
	err := f.CP.App.InTenant(context.Background(), tenant, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT actor, coalesce(actor_user_id::text, ''), action, metadata::text FROM audit_log
			WHERE action = $1 ORDER BY seq DESC LIMIT 1`, action).Scan(&a.Actor, &a.ActorUser, &a.Action, &meta)
	})
	if err == pgx.ErrNoRows {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(meta), &a.Meta); err != nil {
		t.Fatal(err)
	}
	return &a
}

func grantCount(t *testing.T, f *webtest.Fixture, tenant postgres.TenantID, ghID int64, role string) int {
	t.Helper()
	var n int
	err := f.CP.App.InTenant(context.Background(), tenant, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT count(*) FROM role_grants g JOIN user_identities i ON i.user_id = g.user_id
			WHERE i.external_id = $1 AND g.role = $2`, ghID, role).Scan(&n)
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Instance admins (from the configuration) list, grant and revoke roles in
// every tenant, audited with their identity; anyone else gets 403 on the
// page and on a forged POST and sees no link; logins are escaped.
func TestAdminGrantsPage(t *testing.T) {
	f := webtest.New(t, webtest.Options{Admins: []string{"root"}})
	rootID := f.AddUser(t, "root", "") // known in acme, no roles
	f.AddUser(t, "bob", "write", repos.RoleManage, repos.RoleReview)
	globex := f.CP.Seed(t, "globex", "site", "private")
	dave := f.GH.AddUser("dave")
	// A login as stored can be anything a row holds: escaped on the page.
	evil := `<img src=x onerror=alert(1)>`
	f.InTenant(t, func(ctx context.Context, tx pgx.Tx) error {
		var uid string
		if err := tx.QueryRow(ctx, `INSERT INTO users (tenant_id) VALUES (quavon_current_tenant()) RETURNING id::text`).Scan(&uid); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO user_identities (tenant_id, user_id, host, login, external_id) VALUES (quavon_current_tenant(), $1, 'github.com', $2, 99999)`, uid, evil); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO role_grants (tenant_id, user_id, repository_id, role) VALUES (quavon_current_tenant(), $1, $2, 'repo:review')`, uid, f.Seed.Repository)
		return err
	})

	root := f.Client(t)
	page := body(t, f.SignIn(t, root, "root", "/repos"))
	if !strings.Contains(page, `id="nav-grants"`) {
		t.Fatal("the admin sees no link to the grants page")
	}
	resp := mustGet(t, root, f.URL+"/admin/grants")
	page = body(t, resp)
	if resp.StatusCode != 200 || !strings.Contains(page, "globex") || !strings.Contains(page, "bob") || !strings.Contains(page, "acme/app") {
		t.Fatalf("grants page: %d\n%s", resp.StatusCode, page)
	}
	if strings.Contains(page, "<img src=x") || !strings.Contains(page, "&lt;img src=x onerror=alert(1)&gt;") {
		t.Error("a stored login is not escaped on the grants page")
	}
	tok := formToken(t, page)
	change := func(c *http.Client, tok string, tenant postgres.TenantID, op, login string, id int64, repo, role string) (*http.Response, string) {
		return postForm(t, c, f.URL+"/admin/grants", url.Values{"form_token": {tok}, "tenant": {string(tenant)}, "op": {op},
			"login": {login}, "github_id": {strconv.FormatInt(id, 10)}, "repo": {repo}, "role": {role}}, nil)
	}

	// Grant in the admin's own tenant: the row, and the audit entry with
	// the admin as the acting user.
	resp, page = change(root, tok, f.Seed.Tenant, "grant", "dave", dave.ID, "ACME/app", repos.RoleReview)
	if resp.StatusCode != 200 || !strings.Contains(page, "The role was granted.") || !strings.Contains(page, `<td class="login">dave</td>`) {
		t.Fatalf("grant: %d %s", resp.StatusCode, resp.Request.URL)
	}
	if grantCount(t, f, f.Seed.Tenant, dave.ID, repos.RoleReview) != 1 {
		t.Fatal("no grant row")
	}
	rootGH := f.GH.AddUser("root").ID
	a := lastAudit(t, f, f.Seed.Tenant, "role.grant")
	if a == nil || a.Actor != "instance-admin:github.com/"+strconv.FormatInt(rootGH, 10) || a.ActorUser != rootID ||
		a.Meta["login"] != "dave" || a.Meta["repository"] != "ACME/app" {
		t.Fatalf("grant audit: %+v", a)
	}
	if by, _ := a.Meta["by"].(map[string]any); by["login"] != "root" {
		t.Errorf("the audit entry does not name the admin: %+v", a.Meta)
	}
	// Granted again: nothing changes, nothing is audited.
	if _, page := change(root, tok, f.Seed.Tenant, "grant", "dave", dave.ID, "acme/app", repos.RoleReview); !strings.Contains(page, "already held") {
		t.Error("a second grant is not reported as already held")
	}
	// Another tenant: audited there, without a user of that tenant.
	if resp, _ := change(root, tok, globex.Tenant, "grant", "dave", dave.ID, "globex/site", repos.RoleManage); resp.StatusCode != 200 {
		t.Fatalf("grant in globex: %d", resp.StatusCode)
	}
	if g := lastAudit(t, f, globex.Tenant, "role.grant"); g == nil || g.ActorUser != "" || grantCount(t, f, globex.Tenant, dave.ID, repos.RoleManage) != 1 {
		t.Fatalf("grant in globex: %+v", g)
	}
	if page := body(t, mustGet(t, root, f.URL+"/admin/grants?tenant="+string(globex.Tenant))); !strings.Contains(page, "globex/site") || strings.Contains(page, "acme/app") {
		t.Error("the globex page does not list globex's grants only")
	}
	// Revoke.
	resp, page = change(root, tok, f.Seed.Tenant, "revoke", "dave", dave.ID, "acme/app", repos.RoleReview)
	if resp.StatusCode != 200 || !strings.Contains(page, "The role was revoked.") || grantCount(t, f, f.Seed.Tenant, dave.ID, repos.RoleReview) != 0 {
		t.Fatalf("revoke: %d", resp.StatusCode)
	}
	if a := lastAudit(t, f, f.Seed.Tenant, "role.revoke"); a == nil || a.ActorUser != rootID {
		t.Fatalf("revoke audit: %+v", a)
	}
	// A stored login need not be a GitHub login (the CLI takes any): its
	// revoke form still works, matched by id.
	if resp, page := change(root, tok, f.Seed.Tenant, "revoke", evil, 99999, "acme/app", repos.RoleReview); resp.StatusCode != 200 ||
		!strings.Contains(page, "The role was revoked.") || grantCount(t, f, f.Seed.Tenant, 99999, repos.RoleReview) != 0 {
		t.Fatalf("revoke of an odd login: %d", resp.StatusCode)
	}
	// Bad forms.
	for _, tc := range []struct {
		name       string
		tenant     postgres.TenantID
		op, login  string
		id         int64
		repo, role string
		want       int
	}{
		{"login with markup", f.Seed.Tenant, "grant", evil, 5, "acme/app", repos.RoleReview, 400},
		{"no id", f.Seed.Tenant, "grant", "eve", 0, "acme/app", repos.RoleReview, 400},
		{"unknown role", f.Seed.Tenant, "grant", "eve", 5, "acme/app", "admin", 400},
		{"unknown op", f.Seed.Tenant, "delete", "eve", 5, "acme/app", repos.RoleReview, 400},
		{"another tenant's repository", f.Seed.Tenant, "grant", "eve", 5, "globex/site", repos.RoleReview, 404},
		{"no such tenant", "00000000-0000-4000-8000-000000000000", "grant", "eve", 5, "acme/app", repos.RoleReview, 404},
	} {
		if resp, _ := change(root, tok, tc.tenant, tc.op, tc.login, tc.id, tc.repo, tc.role); resp.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}

	// bob (repo:manage, not an instance admin): no link, 403 on the page
	// and on a forged POST with his own form token; nothing changes.
	bob := f.Client(t)
	page = body(t, f.SignIn(t, bob, "bob", "/repos"))
	if strings.Contains(page, "/admin/grants") {
		t.Error("a non-admin sees the grants link")
	}
	if resp := mustGet(t, bob, f.URL+"/admin/grants"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("non-admin GET: %d", resp.StatusCode)
	}
	resp, page = change(bob, formToken(t, page), f.Seed.Tenant, "grant", "bob", f.GH.AddUser("bob").ID, "acme/app", "repo:manage")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "instance admins") {
		t.Errorf("non-admin forged POST: %d", resp.StatusCode)
	}
	resp, _ = change(bob, formToken(t, body(t, mustGet(t, bob, f.URL+"/repos"))), f.Seed.Tenant, "revoke", "root", rootGH, "acme/app", repos.RoleReview)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("non-admin forged revoke: %d", resp.StatusCode)
	}
	if n := auditCount(t, f, "role.grant"); n != 1 {
		t.Errorf("grants audited in acme: %d, want 1", n)
	}
	// The admin's POST needs the form token and the same origin too.
	if resp, _ := change(root, "", f.Seed.Tenant, "grant", "eve", 5, "acme/app", repos.RoleReview); resp.StatusCode != http.StatusForbidden {
		t.Errorf("admin POST without the form token: %d", resp.StatusCode)
	}
	if resp, _ := postForm(t, root, f.URL+"/admin/grants", url.Values{"form_token": {tok}, "tenant": {string(f.Seed.Tenant)}, "op": {"grant"},
		"login": {"eve"}, "github_id": {"5"}, "repo": {"acme/app"}, "role": {repos.RoleReview}}, map[string]string{"Origin": "https://evil.example"}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin admin POST: %d", resp.StatusCode)
	}
}
