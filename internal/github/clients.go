package github

import (
	"context"
	"fmt"
	"net/http"

	gh "github.com/google/go-github/v75/github"
	"github.com/shurcooL/githubv4"
)

// Clients are a REST (go-github) and a GraphQL (githubv4) client that
// authenticate as one installation, for one repository, with one permission
// set. Every request asks the App for the token, so a long-lived Clients
// keeps working across token refreshes. Consumers should use Reader or the
// writer package, which choose the permission set themselves.
type Clients struct {
	REST    *gh.Client
	GraphQL *githubv4.Client
	// Owner and Name are the repository the token is restricted to.
	Owner, Name string
	// InstallationID is the installation the token is minted from.
	InstallationID int64
}

// Clients mints a token for (installationID, repo, perms) right away, so a
// missing installation, repository or permission fails here rather than on
// first use, and returns clients bound to it.
func (a *App) Clients(ctx context.Context, installationID int64, repo string, perms Permissions) (*Clients, error) {
	owner, name, err := SplitRepo(repo)
	if err != nil {
		return nil, fmt.Errorf("github.Clients: %w", err)
	}
	perms = perms.Clone()
	if _, err := a.Token(ctx, installationID, repo, perms); err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: &authTransport{app: a, installation: installationID, repo: owner + "/" + name, perms: perms}}
	rest := gh.NewClient(hc)
	rest.BaseURL = a.apiURL
	// The Transport is the single rate-limit policy; go-github's own
	// pre-emptive check would fail requests the Transport would wait for.
	rest.DisableRateLimitCheck = true
	return &Clients{
		REST:           rest,
		GraphQL:        githubv4.NewEnterpriseClient(a.graphqlURL, hc),
		Owner:          owner,
		Name:           name,
		InstallationID: installationID,
	}, nil
}

// authTransport sets the installation token on each request and drops the
// cached token when GitHub answers 401 (revoked, or installation changed).
type authTransport struct {
	app          *App
	installation int64
	repo         string
	perms        Permissions
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := t.app.Token(req.Context(), t.installation, t.repo, t.perms)
	if err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok.secret)
	if r.Header.Get("X-GitHub-Api-Version") == "" {
		r.Header.Set("X-GitHub-Api-Version", APIVersion)
	}
	resp, err := t.app.transport.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		t.app.forget(t.installation, t.repo, t.perms, tok.secret)
	}
	return resp, err
}
