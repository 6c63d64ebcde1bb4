package githubfake_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/google/go-github/v75/github"
	"golang.org/x/oauth2"

	"github.com/quavon/quavon/internal/githubfake"
)

// oauthFlow runs authorize with the stdlib client (no redirects followed)
// and returns the Location it answered with.
func authorize(t *testing.T, s *githubfake.Server, cfg *oauth2.Config, state string, opts ...oauth2.AuthCodeOption) (*http.Response, *url.URL) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(cfg.AuthCodeURL(state, opts...))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	return resp, loc
}

func TestOAuthWebFlowWithPKCE(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := githubfake.New(t)
	app := s.RegisterApp("quavon-review")
	octo := s.AddUser("octocat")
	s.SetCallbackURL(app, "https://quavon.example/auth/callback")
	cfg := &oauth2.Config{ClientID: app.ClientID, ClientSecret: app.ClientSecret, RedirectURL: "https://quavon.example/auth/callback",
		Endpoint: oauth2.Endpoint{AuthURL: s.URL + "/login/oauth/authorize", TokenURL: s.URL + "/login/oauth/access_token", AuthStyle: oauth2.AuthStyleInParams}}

	// Nobody signed in: no code.
	if resp, _ := authorize(t, s, cfg, "st"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("authorize without a signed-in user: %d", resp.StatusCode)
	}
	s.SignInAs("octocat")

	// A redirect_uri outside the callback is refused, not followed.
	bad := *cfg
	bad.RedirectURL = "https://evil.example/auth/callback"
	if resp, _ := authorize(t, s, &bad, "st"); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("foreign redirect_uri: %d", resp.StatusCode)
	}

	verifier := oauth2.GenerateVerifier()
	resp, loc := authorize(t, s, cfg, "state-1", oauth2.S256ChallengeOption(verifier))
	if resp.StatusCode != http.StatusFound || loc.Host != "quavon.example" || loc.Query().Get("state") != "state-1" {
		t.Fatalf("authorize: %d %v", resp.StatusCode, loc)
	}
	code := loc.Query().Get("code")
	// A wrong verifier: GitHub's bad_verification_code.
	if _, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(oauth2.GenerateVerifier())); err == nil {
		t.Fatal("a wrong PKCE verifier was accepted")
	}
	// The code was spent by the failed attempt too.
	if _, err := cfg.Exchange(ctx, code, oauth2.VerifierOption(verifier)); err == nil {
		t.Fatal("a code was accepted twice")
	}

	_, loc = authorize(t, s, cfg, "state-2", oauth2.S256ChallengeOption(verifier))
	tok, err := cfg.Exchange(ctx, loc.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	gh := github.NewClient(cfg.Client(ctx, tok))
	gh.BaseURL, _ = url.Parse(s.URL + "/")
	u, _, err := gh.Users.Get(ctx, "")
	if err != nil {
		t.Fatal(err) // the answer is also checked against GitHub's description
	}
	if u.GetLogin() != "octocat" || u.GetID() != octo.ID {
		t.Fatalf("GET /user: %s %d", u.GetLogin(), u.GetID())
	}

	wrong := *cfg
	wrong.ClientSecret = "nope"
	_, loc = authorize(t, s, cfg, "state-3")
	if _, err := wrong.Exchange(ctx, loc.Query().Get("code")); err == nil {
		t.Fatal("a wrong client secret was accepted")
	}
}
