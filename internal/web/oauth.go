package web

import (
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"

	gh "github.com/google/go-github/v75/github"
	"github.com/quavon/quavon/internal/postgres"
	"golang.org/x/oauth2"
)

func (s *Server) oauthConfig() *oauth2.Config {
	base := strings.TrimSuffix(s.cfg.GitHubURL, "/")
	return &oauth2.Config{
		ClientID: s.cfg.ClientID, ClientSecret: s.cfg.ClientSecret,
		RedirectURL: strings.TrimSuffix(s.cfg.PublicURL, "/") + "/auth/callback",
		Endpoint: oauth2.Endpoint{AuthURL: base + "/login/oauth/authorize", TokenURL: base + "/login/oauth/access_token",
			AuthStyle: oauth2.AuthStyleInParams},
	}
}

// safeReturn accepts only a local path ("/repos?x=1"), never a URL that a
// browser would take to another origin: no scheme or host, no "//" or "/\"
// start, no backslash or control character anywhere.
func safeReturn(raw string) string {
	if raw == "" || len(raw) > 2048 || !strings.HasPrefix(raw, "/") || strings.HasPrefix(raw, "//") ||
		strings.ContainsAny(raw, "\\") || strings.IndexFunc(raw, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return "/"
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return "/"
	}
	clean := path.Clean(u.Path)
	if strings.HasPrefix(u.Path, "//") || strings.Contains(u.Path, "\\") || !strings.HasPrefix(clean, "/") || clean == "/auth" || strings.HasPrefix(clean, "/auth/") {
		return "/"
	}
	return (&url.URL{Path: clean, RawQuery: u.RawQuery}).String()
}

// login starts the web flow: state and PKCE verifier in the login cookie,
// the browser to GitHub.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	state, verifier := randomToken(), oauth2.GenerateVerifier()
	ret := base64.RawURLEncoding.EncodeToString([]byte(safeReturn(r.URL.Query().Get("return"))))
	s.setCookie(w, s.loginCookie(), state+"."+verifier+"."+ret, int(loginTTL.Seconds()))
	http.Redirect(w, r, s.oauthConfig().AuthCodeURL(state, oauth2.S256ChallengeOption(verifier)), http.StatusFound)
}

// callback finishes the web flow and signs in.
func (s *Server) callback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c, err := r.Cookie(s.loginCookie())
	s.setCookie(w, s.loginCookie(), "", -1) // one attempt per login
	parts := []string{}
	if err == nil {
		parts = strings.Split(c.Value, ".")
	}
	q := r.URL.Query()
	if len(parts) != 3 || q.Get("state") == "" || subtle.ConstantTimeCompare([]byte(parts[0]), []byte(q.Get("state"))) != 1 {
		s.renderError(w, r, http.StatusBadRequest, "The sign-in could not be verified (its state does not match this browser's). Start again.")
		return
	}
	if e := q.Get("error"); e != "" {
		s.renderError(w, r, http.StatusForbidden, "GitHub did not authorize the sign-in.")
		return
	}
	retRaw, _ := base64.RawURLEncoding.DecodeString(parts[2])
	ret := safeReturn(string(retRaw))
	octx := ctxWithClient(ctx, s.http)
	cfg := s.oauthConfig()
	tok, err := cfg.Exchange(octx, q.Get("code"), oauth2.VerifierOption(parts[1]))
	if err != nil {
		s.log.Warn("web: sign-in: token exchange failed", slog.String("error", err.Error()))
		s.renderError(w, r, http.StatusBadRequest, "GitHub refused the sign-in code. Start again.")
		return
	}
	client := gh.NewClient(cfg.Client(octx, tok))
	client.BaseURL, _ = url.Parse(strings.TrimSuffix(s.cfg.GitHubAPIURL, "/") + "/")
	user, _, err := client.Users.Get(ctx, "")
	tok = nil // the user token is used for this one read only
	if err != nil || user.GetID() <= 0 || user.GetLogin() == "" {
		s.fail(w, r, fmt.Errorf("web: sign-in: GET /user: %w", err))
		return
	}
	login, ghID := user.GetLogin(), user.GetID()
	tenants, err := s.identityTenants(ctx, s.cfg.Host, ghID)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	switch len(tenants) {
	case 0:
		s.renderError(w, r, http.StatusForbidden, fmt.Sprintf("The GitHub account %s is not a Quavon user here. An instance admin grants roles with `quavon admin grant`.", login))
	case 1:
		err = s.bindSession(w, r, tenants[0], login, ghID, ret, "")
	default:
		// Several tenants know the identity: the browser chooses among
		// those where it holds a role, unless there is just one.
		var cs []tenantChoice
		if cs, err = s.choices(ctx, s.cfg.Host, ghID, ""); err == nil {
			if len(cs) == 1 {
				err = s.bindSession(w, r, postgres.TenantID(cs[0].ID), login, ghID, ret, "")
			} else {
				err = s.holdSignIn(w, r, pendingSignIn{Host: s.cfg.Host, Login: login, ID: ghID, Return: ret})
			}
		}
	}
	if err != nil {
		s.fail(w, r, err)
	}
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request, _ *Session) error {
	c, err := r.Cookie(s.sessionCookie())
	if err != nil {
		return errors.New("web: logout without a cookie")
	}
	if err := s.revoke(r.Context(), c.Value, revokedSignOut); err != nil {
		return err
	}
	s.setCookie(w, s.sessionCookie(), "", -1)
	http.Redirect(w, r, "/", http.StatusSeeOther)
	return nil
}
