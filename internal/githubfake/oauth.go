package githubfake

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The OAuth web flow of a GitHub App (user-to-server tokens), as GitHub
// documents it ("Generating a user access token for a GitHub App"):
//
//	GET  /login/oauth/authorize     client_id, redirect_uri, state, code_challenge (S256)
//	                                → 302 redirect_uri?code=…&state=…
//	POST /login/oauth/access_token  client_id, client_secret, code, redirect_uri, code_verifier
//	                                → {"access_token":"ghu_…","token_type":"bearer","scope":""}
//	GET  /user                      with the user token → the public-user shape
//
// The emulator has no consent screen: authorize signs in as the account
// SignInAs named (a test stands for the person at the browser). Token
// errors are answered as GitHub does: status 200 with {"error",
// "error_description", "error_uri"}.

const (
	oauthCodeTTL      = 10 * time.Minute
	userTokenTTL      = 8 * time.Hour
	oauthErrorDocsURI = "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/"
)

type oauthCode struct {
	app         *App
	user        *Account
	redirectURI string
	challenge   string // S256 code challenge; "" when none was sent
	expires     time.Time
}

type userToken struct {
	app     *App
	user    *Account
	expires time.Time
}

// SetCallbackURL registers the app's OAuth callback URL; authorize refuses
// a redirect_uri that is not it or below it.
func (s *Server) SetCallbackURL(app *App, callback string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	app.callbackURL = callback
}

// SignInAs makes login the user who approves the next authorizations
// (nil: nobody is signed in, and authorize answers 403).
func (s *Server) SignInAs(login string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if login == "" {
		s.signedIn = nil
		return
	}
	s.signedIn = s.accounts[strings.ToLower(login)]
}

// UserTokens counts the user tokens issued and not expired (a test checks
// that the dashboard keeps none: it cannot, but it can check that it
// revokes nothing it should not have).
func (s *Server) UserTokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.userTokens {
		if s.now().Before(t.expires) {
			n++
		}
	}
	return n
}

func (s *Server) appByClientID(id string) *App {
	for _, a := range s.apps {
		if a.ClientID == id {
			return a
		}
	}
	return nil
}

// redirectAllowed follows GitHub's rule: the redirect URI's host and port
// match the callback URL's exactly, and its path is the callback's path or
// below it.
func redirectAllowed(callback, redirect string) bool {
	cb, err1 := url.Parse(callback)
	rd, err2 := url.Parse(redirect)
	if err1 != nil || err2 != nil || callback == "" {
		return false
	}
	if cb.Scheme != rd.Scheme || cb.Host != rd.Host || rd.Fragment != "" || strings.Contains(rd.Path, "..") {
		return false
	}
	p := strings.TrimSuffix(cb.Path, "/")
	return rd.Path == cb.Path || strings.HasPrefix(rd.Path, p+"/")
}

// serveOAuth answers the web flow's two endpoints; it reports whether the
// path was one of them.
func (s *Server) serveOAuth(w http.ResponseWriter, c *call) bool {
	switch c.r.URL.Path {
	case "/login/oauth/authorize":
		s.oauthAuthorize(w, c.r)
	case "/login/oauth/access_token":
		s.oauthAccessToken(w, c)
	default:
		return false
	}
	s.requests = append(s.requests, Request{Method: c.r.Method, Path: c.r.URL.Path, TokenKind: TokenNone, Status: c.status, Operation: "oauth"})
	return true
}

func (s *Server) oauthAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	app := s.appByClientID(q.Get("client_id"))
	if r.Method != http.MethodGet || app == nil {
		http.Error(w, "The client_id is not valid.", http.StatusNotFound)
		return
	}
	redirect := q.Get("redirect_uri")
	if redirect == "" {
		redirect = app.callbackURL
	}
	if !redirectAllowed(app.callbackURL, redirect) {
		// GitHub shows an error page, it never redirects to an unknown URI.
		http.Error(w, "The redirect_uri is not associated with this application.", http.StatusBadRequest)
		return
	}
	if s.signedIn == nil {
		http.Error(w, "Sign in to GitHub to continue.", http.StatusForbidden)
		return
	}
	challenge := q.Get("code_challenge")
	if challenge != "" && q.Get("code_challenge_method") != "S256" {
		http.Error(w, "code_challenge_method must be S256.", http.StatusBadRequest)
		return
	}
	raw := make([]byte, 10)
	_, _ = rand.Read(raw)
	code := hex.EncodeToString(raw)
	if s.oauthCodes == nil {
		s.oauthCodes = map[string]*oauthCode{}
	}
	s.oauthCodes[code] = &oauthCode{app: app, user: s.signedIn, redirectURI: redirect, challenge: challenge, expires: s.now().Add(oauthCodeTTL)}
	u, _ := url.Parse(redirect)
	v := u.Query()
	v.Set("code", code)
	if st := q.Get("state"); st != "" {
		v.Set("state", st)
	}
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func (s *Server) oauthAccessToken(w http.ResponseWriter, c *call) {
	answer := func(v map[string]any) {
		b, _ := json.Marshal(v)
		if strings.Contains(c.r.Header.Get("Accept"), "application/json") {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
		} else { // GitHub's default is a form-encoded body
			form := url.Values{}
			for k, x := range v {
				form.Set(k, x.(string))
			}
			b = []byte(form.Encode())
			w.Header().Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
		}
		c.status = http.StatusOK
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(b)
	}
	fail := func(code, desc string) {
		answer(map[string]any{"error": code, "error_description": desc, "error_uri": oauthErrorDocsURI + "#" + strings.ReplaceAll(code, "_", "-")})
	}
	if c.r.Method != http.MethodPost {
		c.status = http.StatusNotFound
		http.NotFound(w, c.r)
		return
	}
	form, err := url.ParseQuery(string(c.body))
	if err != nil {
		fail("bad_verification_code", "The code passed is incorrect or expired.")
		return
	}
	get := func(k string) string {
		if v := form.Get(k); v != "" {
			return v
		}
		return c.r.URL.Query().Get(k)
	}
	id, secret := get("client_id"), get("client_secret")
	if u, p, ok := c.r.BasicAuth(); ok {
		id, secret = u, p
	}
	app := s.appByClientID(id)
	if app == nil || subtle.ConstantTimeCompare([]byte(secret), []byte(app.ClientSecret)) != 1 {
		fail("incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect.")
		return
	}
	code := s.oauthCodes[get("code")]
	if code == nil || code.app != app || !s.now().Before(code.expires) {
		fail("bad_verification_code", "The code passed is incorrect or expired.")
		return
	}
	delete(s.oauthCodes, get("code")) // a code is good for one exchange
	if ru := get("redirect_uri"); ru != "" && ru != code.redirectURI {
		fail("redirect_uri_mismatch", "The redirect_uri MUST match the registered callback URL for this application.")
		return
	}
	if code.challenge != "" {
		sum := sha256.Sum256([]byte(get("code_verifier")))
		if get("code_verifier") == "" || subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(code.challenge)) != 1 {
			fail("bad_verification_code", "The code passed is incorrect or expired.")
			return
		}
	}
	raw := make([]byte, 18)
	_, _ = rand.Read(raw)
	tok := "ghu_" + hex.EncodeToString(raw) // 36 characters, as GitHub's
	if s.userTokens == nil {
		s.userTokens = map[string]*userToken{}
	}
	s.userTokens[tok] = &userToken{app: app, user: code.user, expires: s.now().Add(userTokenTTL)}
	answer(map[string]any{"access_token": tok, "token_type": "bearer", "scope": ""})
}

// handleGetAuthenticatedUser is GET /user: a user token's account in the
// public-user shape (a GitHub App without the email permission sees no
// private fields).
func (s *Server) handleGetAuthenticatedUser(c *call) {
	switch {
	case c.tok != nil || c.app != nil:
		c.fail(http.StatusForbidden, "Resource not accessible by integration")
		return
	case c.user == nil:
		c.fail(http.StatusUnauthorized, "Requires authentication")
		return
	}
	u := s.userJSON(c.user)
	u["user_view_type"] = "public"
	for _, k := range []string{"name", "company", "blog", "location", "email", "hireable", "bio", "twitter_username"} {
		u[k] = nil
	}
	u["blog"] = ""
	u["public_repos"], u["public_gists"], u["followers"], u["following"] = 0, 0, 0, 0
	ts := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC).Format(time.RFC3339)
	u["created_at"], u["updated_at"] = ts, ts
	c.json(http.StatusOK, u)
}

// UserToken issues a user-to-server token of app for login directly, as
// the web flow would.
func (s *Server) UserToken(app *App, login string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	raw := make([]byte, 18)
	_, _ = rand.Read(raw)
	tok := "ghu_" + hex.EncodeToString(raw)
	if s.userTokens == nil {
		s.userTokens = map[string]*userToken{}
	}
	s.userTokens[tok] = &userToken{app: app, user: s.accounts[strings.ToLower(login)], expires: s.now().Add(userTokenTTL)}
	return tok
}
