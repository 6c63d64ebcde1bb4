package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/repos"
	"github.com/quavon/quavon/internal/testenv"
	"github.com/quavon/quavon/internal/web/webtest"
)

// addToTenant makes login (an emulator user) a user of another tenant with
// role on its seeded repository (none for "").
func addToTenant(t *testing.T, f *webtest.Fixture, s testenv.Seeded, login, role string) {
	t.Helper()
	acct := f.GH.AddUser(login)
	err := f.CP.App.InTenant(context.Background(), s.Tenant, func(tx pgx.Tx) error {
		ctx := context.Background()
		if _, err := tx.Exec(ctx, `INSERT INTO user_identities (tenant_id, user_id, host, login, external_id)
			VALUES (quavon_current_tenant(), $1, 'github.com', $2, $3)`, s.User, login, acct.ID); err != nil {
			return err
		}
		if role == "" {
			return nil
		}
		_, err := tx.Exec(ctx, `INSERT INTO role_grants (tenant_id, user_id, repository_id, role) VALUES (quavon_current_tenant(), $1, $2, $3)`,
			s.User, s.Repository, role)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func postForm(t *testing.T, c *http.Client, u string, form url.Values, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body(t, resp)
}

// An identity known in two tenants chooses one after the OAuth callback
// (a plain form); the choice is checked against the tenants that know the
// identity; switching tenants rotates the session.
func TestTenantChooserAndSwitch(t *testing.T) {
	f := webtest.New(t, webtest.Options{})
	f.AddUser(t, "alice", "write", repos.RoleReview)
	globex := f.CP.Seed(t, "globex", "site", "private")
	addToTenant(t, f, globex, "alice", repos.RoleManage)
	initech := f.CP.Seed(t, "initech", "tps", "private") // alice is not known there
	hooli := f.CP.Seed(t, "hooli", "box", "private")
	addToTenant(t, f, hooli, "alice", "") // known, but no role: not offered

	c := f.Client(t)
	resp := f.SignIn(t, c, "alice", "/repos")
	page := body(t, resp)
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/auth/choose" || sessionCookie(t, f, c) != nil {
		t.Fatalf("sign-in of a two-tenant identity: %d %s (session %v)", resp.StatusCode, resp.Request.URL, sessionCookie(t, f, c) != nil)
	}
	for _, want := range []string{"acme", "globex", "2 Quavon tenants"} {
		if !strings.Contains(page, want) {
			t.Errorf("the chooser lacks %q", want)
		}
	}
	if strings.Contains(page, "initech") || strings.Contains(page, "hooli") {
		t.Error("the chooser shows a tenant where the identity holds no role")
	}
	tok := formToken(t, page)
	u, _ := url.Parse(f.URL)
	var choose *http.Cookie
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == "__Host-quavon-choose" {
			choose = ck
		}
	}
	if choose == nil {
		t.Fatal("no chooser cookie")
	}

	// Refusals: another site, no token, a tenant that does not know the
	// identity (forged id). The forged choice uses up the waiting sign-in.
	if resp, _ := postForm(t, c, f.URL+"/auth/choose", url.Values{"form_token": {tok}, "tenant": {string(globex.Tenant)}},
		map[string]string{"Sec-Fetch-Site": "cross-site"}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site choice: %d", resp.StatusCode)
	}
	if resp, _ := postForm(t, c, f.URL+"/auth/choose", url.Values{"tenant": {string(globex.Tenant)}}, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("choice without the form token: %d", resp.StatusCode)
	}
	resp, page = postForm(t, c, f.URL+"/auth/choose", url.Values{"form_token": {tok}, "tenant": {string(initech.Tenant)}}, nil)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "no role in that tenant") || sessionCookie(t, f, c) != nil {
		t.Fatalf("forged tenant: %d", resp.StatusCode)
	}
	// The browser dropped the cookie; replayed, the sign-in is used up.
	c.Jar.SetCookies(u, []*http.Cookie{{Name: choose.Name, Value: choose.Value, Path: "/"}})
	if resp, _ := postForm(t, c, f.URL+"/auth/choose", url.Values{"form_token": {tok}, "tenant": {string(globex.Tenant)}}, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a used sign-in chose again: %d", resp.StatusCode)
	}

	// A tenant that knows alice but where she holds no role is refused too.
	page = body(t, f.SignIn(t, c, "alice", "/repos"))
	if resp, _ = postForm(t, c, f.URL+"/auth/choose", url.Values{"form_token": {formToken(t, page)}, "tenant": {string(hooli.Tenant)}}, nil); resp.StatusCode != http.StatusForbidden || sessionCookie(t, f, c) != nil {
		t.Fatalf("a tenant without a role: %d", resp.StatusCode)
	}

	// A fresh sign-in, then globex.
	page = body(t, f.SignIn(t, c, "alice", "/repos"))
	resp, page = postForm(t, c, f.URL+"/auth/choose", url.Values{"form_token": {formToken(t, page)}, "tenant": {string(globex.Tenant)}}, nil)
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/repos" || !strings.Contains(page, "globex/site") || strings.Contains(page, "acme/app") {
		t.Fatalf("after choosing globex: %d %s", resp.StatusCode, resp.Request.URL)
	}
	if !strings.Contains(page, `id="nav-tenants"`) || !strings.Contains(page, `<span id="tenant-name">globex</span>`) {
		t.Error("a two-tenant user is not offered switching or not told the tenant")
	}
	first := sessionCookie(t, f, c)

	// Switching: the list, a forged tenant (403), then acme (rotation).
	page = body(t, mustGet(t, c, f.URL+"/auth/tenants"))
	if !strings.Contains(page, "acme") || !strings.Contains(page, "current") {
		t.Fatalf("the switch page: %s", page)
	}
	tok = formToken(t, page)
	for _, forged := range []testenv.Seeded{initech, hooli} {
		if resp, _ := postForm(t, c, f.URL+"/auth/tenants", url.Values{"form_token": {tok}, "tenant": {string(forged.Tenant)}}, nil); resp.StatusCode != http.StatusForbidden {
			t.Errorf("switch to a tenant without a role: %d", resp.StatusCode)
		}
	}
	if resp, _ := postForm(t, c, f.URL+"/auth/tenants", url.Values{"tenant": {string(f.Seed.Tenant)}}, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("switch without the form token: %d", resp.StatusCode)
	}
	if sessionCookie(t, f, c).Value != first.Value {
		t.Fatal("a refused switch changed the session")
	}
	resp, page = postForm(t, c, f.URL+"/auth/tenants", url.Values{"form_token": {tok}, "tenant": {string(f.Seed.Tenant)}}, nil)
	if resp.StatusCode != 200 || !strings.Contains(page, "acme/app") || strings.Contains(page, "globex/site") {
		t.Fatalf("after switching to acme: %d %s", resp.StatusCode, resp.Request.URL)
	}
	second := sessionCookie(t, f, c)
	if second == nil || second.Value == first.Value {
		t.Fatal("switching did not rotate the session")
	}
	old := f.Client(t)
	old.Jar.SetCookies(u, []*http.Cookie{{Name: first.Name, Value: first.Value, Path: "/"}})
	if resp, _ := old.Get(f.URL + "/repos"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the session before the switch still works: %d", resp.StatusCode)
	}
	var reason string
	err := f.CP.App.InTenant(context.Background(), globex.Tenant, func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT revoked_reason FROM web_sessions WHERE secret_hash = sha256(convert_to($1, 'UTF8'))`, first.Value).Scan(&reason)
	})
	if err != nil || reason != "switched_tenant" {
		t.Errorf("the left session: %q %v", reason, err)
	}
	if n := auditCount(t, f, "web.sign_in"); n != 1 {
		t.Errorf("sign-ins audited in acme: %d, want 1 (the switch)", n)
	}
}

// A user with roles in one tenant is signed in directly (even if another
// tenant knows the identity without a role) and offered no switching.
func TestSingleTenantNoChooser(t *testing.T) {
	f := webtest.New(t, webtest.Options{})
	f.AddUser(t, "bob", "write", repos.RoleReview)
	addToTenant(t, f, f.CP.Seed(t, "hooli", "box", "private"), "bob", "")
	c := f.Client(t)
	resp := f.SignIn(t, c, "bob", "/repos")
	page := body(t, resp)
	if resp.Request.URL.Path != "/repos" || !strings.Contains(page, "acme/app") {
		t.Fatalf("single tenant: %s", resp.Request.URL)
	}
	if resp, _ := c.Get(f.URL + "/auth/choose"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the chooser without a waiting sign-in: %d", resp.StatusCode)
	}
}
