package web_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/repos"
	"github.com/quavon/quavon/internal/web/webtest"
)

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sessionCookie(t *testing.T, f *webtest.Fixture, c *http.Client) *http.Cookie {
	t.Helper()
	u, _ := url.Parse(f.URL)
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == "__Host-quavon-session" {
			return ck
		}
	}
	return nil
}

var formTokenRE = regexp.MustCompile(`name="form_token" value="([^"]+)"`)

func formToken(t *testing.T, page string) string {
	t.Helper()
	m := formTokenRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no form token in the page")
	}
	return m[1]
}

func TestSignInStoresHashedSessionsAndRotates(t *testing.T) {
	f := webtest.New(t, webtest.Options{})
	f.AddUser(t, "alice", "write", repos.RoleReview, repos.RoleManage)
	c := f.Client(t)

	// The login answer sets the login cookie with the right attributes.
	noFollow := *c
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noFollow.Get(f.URL + "/auth/login?return=/repos")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sc := resp.Header.Get("Set-Cookie")
	for _, want := range []string{"__Host-quavon-login=", "Path=/", "HttpOnly", "Secure", "SameSite=Lax"} {
		if !strings.Contains(sc, want) {
			t.Errorf("login cookie %q lacks %s", sc, want)
		}
	}
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if loc.Query().Get("code_challenge_method") != "S256" || loc.Query().Get("code_challenge") == "" || loc.Query().Get("state") == "" {
		t.Fatalf("authorize URL without PKCE or state: %s", loc)
	}

	resp = f.SignIn(t, c, "alice", "/repos")
	page := body(t, resp)
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/repos" || !strings.Contains(page, "acme/app") {
		t.Fatalf("after sign-in: %d %s\n%s", resp.StatusCode, resp.Request.URL, page)
	}
	first := sessionCookie(t, f, c)
	if first == nil {
		t.Fatal("no session cookie")
	}
	// Only the hash is stored; the user token is not stored anywhere.
	f.InTenant(t, func(ctx context.Context, tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM web_sessions WHERE secret_hash = sha256(convert_to($1, 'UTF8'))`, first.Value).Scan(&n); err != nil {
			return err
		}
		if n != 1 {
			t.Errorf("sessions with the cookie's hash: %d", n)
		}
		var leaked int
		err := tx.QueryRow(ctx, `SELECT count(*) FROM web_sessions WHERE position($1 in row_to_json(web_sessions)::text) > 0`, strings.SplitN(first.Value, ".", 2)[1]).Scan(&leaked)
		if leaked != 0 {
			t.Errorf("the cookie's secret is stored in clear")
		}
		return err
	})

	// Signing in again rotates: the earlier session is revoked.
	page = body(t, f.SignIn(t, c, "alice", "/repos"))
	second := sessionCookie(t, f, c)
	if second == nil || second.Value == first.Value {
		t.Fatal("no new session at sign-in")
	}
	old := f.Client(t)
	u, _ := url.Parse(f.URL)
	old.Jar.SetCookies(u, []*http.Cookie{{Name: first.Name, Value: first.Value, Path: "/"}})
	if resp, _ := old.Get(f.URL + "/repos"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the session before the new sign-in still works: %d", resp.StatusCode)
	}

	// Sign-out revokes.
	resp, err = c.PostForm(f.URL+"/auth/logout", url.Values{"form_token": {formToken(t, page)}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	again := f.Client(t)
	again.Jar.SetCookies(u, []*http.Cookie{{Name: second.Name, Value: second.Value, Path: "/"}})
	if resp, _ := again.Get(f.URL + "/repos"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a signed-out session still works: %d", resp.StatusCode)
	}
}

func TestSessionExpiry(t *testing.T) {
	f := webtest.New(t, webtest.Options{SessionIdle: time.Hour, SessionAbsolute: 3 * time.Hour})
	f.AddUser(t, "alice", "write", repos.RoleReview)
	c := f.Client(t)
	body(t, f.SignIn(t, c, "alice", "/repos"))
	get := func() int {
		resp, err := c.Get(f.URL + "/repos")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// Activity keeps the session past its first idle expiry…
	for i := 0; i < 2; i++ {
		f.Advance(50 * time.Minute)
		if s := get(); s != 200 {
			t.Fatalf("active session refused after %d × 50 min: %d", i+1, s)
		}
	}
	// …but not past the absolute one.
	f.Advance(50 * time.Minute)
	if s := get(); s != 200 {
		t.Fatalf("2h30: %d", s)
	}
	f.Advance(40 * time.Minute)
	if s := get(); s != http.StatusUnauthorized {
		t.Fatalf("past the absolute expiry: %d", s)
	}
	// Idle: a fresh session left alone for longer than the idle expiry.
	body(t, f.SignIn(t, c, "alice", "/repos"))
	f.Advance(61 * time.Minute)
	if s := get(); s != http.StatusUnauthorized {
		t.Fatalf("past the idle expiry: %d", s)
	}
}

func TestOAuthStateMustMatch(t *testing.T) {
	f := webtest.New(t, webtest.Options{})
	f.AddUser(t, "alice", "write", repos.RoleReview)
	f.GH.SignInAs("alice")
	c := f.Client(t)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Get(f.URL + "/auth/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	authURL, _ := url.Parse(resp.Header.Get("Location"))
	q := authURL.Query()
	q.Set("state", "forged")
	authURL.RawQuery = q.Encode()
	resp, err = c.Get(authURL.String())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cb := resp.Header.Get("Location")
	if !strings.Contains(cb, "state=forged") {
		t.Fatalf("emulator redirect: %s", cb)
	}
	resp, err = c.Get(cb)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadRequest || sessionCookie(t, f, c) != nil {
		t.Fatalf("a forged state signed in: %d", resp.StatusCode)
	}
	resp.Body.Close()
	// A callback without any login cookie (another browser) is refused too.
	other := f.Client(t)
	if resp, _ := other.Get(f.URL + "/auth/callback?code=x&state=y"); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("callback without the login cookie: %d", resp.StatusCode)
	}
}

func TestUnknownIdentityIsRefused(t *testing.T) {
	f := webtest.New(t, webtest.Options{})
	f.GH.AddUser("mallory")
	resp := f.SignIn(t, f.Client(t), "mallory", "/repos")
	if page := body(t, resp); resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "not a Quavon user") {
		t.Fatalf("unknown identity: %d", resp.StatusCode)
	}
}

func TestReturnURLStaysLocal(t *testing.T) {
	f := webtest.New(t, webtest.Options{})
	f.AddUser(t, "alice", "write", repos.RoleReview)
	for _, ret := range []string{"//evil.example/x", "https://evil.example/", `/\evil.example`, "/%2F%2Fevil.example", "javascript:alert(1)",
		"/auth/logout", "%0d%0aLocation:%20https://evil.example"} {
		c := f.Client(t)
		resp := f.SignIn(t, c, "alice", url.QueryEscape(ret))
		body(t, resp)
		if resp.Request.URL.Host != strings.TrimPrefix(f.URL, "https://") {
			t.Errorf("return %q led to %s", ret, resp.Request.URL)
		}
		if p := resp.Request.URL.Path; p != "/repos" {
			t.Errorf("return %q ended on %s, want / → /repos", ret, p)
		}
	}
}

func TestStateChangesNeedSameOriginAndFormToken(t *testing.T) {
	f := webtest.New(t, webtest.Options{})
	f.AddUser(t, "alice", "write", repos.RoleReview, repos.RoleManage)
	c := f.Client(t)
	page := body(t, f.SignIn(t, c, "alice", "/repos"))
	tok := formToken(t, page)
	post := func(form url.Values, hdr map[string]string) int {
		req, _ := http.NewRequest(http.MethodPost, f.URL+"/auth/logout", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		nc := *c
		nc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := nc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	cases := []struct {
		name string
		form url.Values
		hdr  map[string]string
		want int
	}{
		{"cross-site fetch metadata", url.Values{"form_token": {tok}}, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"foreign Origin", url.Values{"form_token": {tok}}, map[string]string{"Origin": "https://evil.example"}, 403},
		{"no form token", url.Values{}, nil, 403},
		{"another session's form token", url.Values{"form_token": {"AAAA" + tok[4:]}}, nil, 403},
		{"same origin with the token", url.Values{"form_token": {tok}}, map[string]string{"Sec-Fetch-Site": "same-origin"}, 303},
	}
	for _, tc := range cases {
		if got := post(tc.form, tc.hdr); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestSecurityHeaders(t *testing.T) {
	f := webtest.New(t, webtest.Options{})
	resp, err := f.Client(t).Get(f.URL + "/repos")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "frame-ancestors 'none'", "style-src 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %s", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "script-src") {
		t.Errorf("CSP allows scripts or inline code: %q", csp)
	}
	if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Error("no nosniff")
	}
}

func TestPaginationBounds(t *testing.T) {
	f := webtest.New(t, webtest.Options{})
	f.AddUser(t, "alice", "write", repos.RoleReview, repos.RoleManage)
	c := f.Client(t)
	body(t, f.SignIn(t, c, "alice", "/repos"))
	for _, p := range []string{"0", "-1", "abc", "10001", "99999999999999999999"} {
		for _, path := range []string{"/audit", "/repos/acme/app/fixes", "/repos/acme/app/reviews"} {
			resp, err := c.Get(f.URL + path + "?page=" + p)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("%s?page=%s: %d", path, p, resp.StatusCode)
			}
		}
	}
	resp, _ := c.Get(f.URL + "/audit?page=2")
	if page := body(t, resp); resp.StatusCode != 200 {
		t.Errorf("/audit?page=2: %d %s", resp.StatusCode, page)
	}
}
