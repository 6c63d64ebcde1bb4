package github

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"

	gh "github.com/google/go-github/v75/github"
	"github.com/shurcooL/githubv4"
)

// Endpoints and headers.
const (
	// DefaultAPIURL and DefaultGraphQLURL are github.com's endpoints. For
	// GitHub Enterprise Server use https://HOST/api/v3/ and
	// https://HOST/api/graphql.
	DefaultAPIURL     = "https://api.github.com/"
	DefaultGraphQLURL = "https://api.github.com/graphql"
	// APIVersion is the REST API version header sent on every request.
	APIVersion = "2022-11-28"
)

// ConnConfig configures NewConn.
type ConnConfig struct {
	// APIURL is the REST root ending in "/"; empty means DefaultAPIURL.
	APIURL string
	// GraphQLURL is the GraphQL endpoint; empty means DefaultGraphQLURL.
	GraphQLURL string
	// Tokens hands out installation tokens (the broker's client). Required.
	Tokens TokenSource
	// HTTP configures the shared rate-limit transport. Its Logger defaults
	// to Logger; ETags defaults to a bounded cache.
	HTTP TransportConfig
	// Logger; nil discards.
	Logger *slog.Logger
}

// Conn is one process's connection to one GitHub host: the endpoints, the
// one rate-limit transport every client shares, and the token source.
type Conn struct {
	apiURL     *url.URL
	graphqlURL string
	transport  *Transport
	tokens     TokenSource
}

// NewConn validates cfg and returns the connection.
func NewConn(cfg ConnConfig) (*Conn, error) {
	if cfg.Tokens == nil {
		return nil, errors.New("github.NewConn: a token source is required")
	}
	apiURL := cmpOr(cfg.APIURL, DefaultAPIURL)
	if !strings.HasSuffix(apiURL, "/") {
		apiURL += "/"
	}
	u, err := ParseHTTPURL(apiURL)
	if err != nil {
		return nil, fmt.Errorf("github.NewConn: api url: %w", err)
	}
	gql := cmpOr(cfg.GraphQLURL, DefaultGraphQLURL)
	if _, err := ParseHTTPURL(gql); err != nil {
		return nil, fmt.Errorf("github.NewConn: graphql url: %w", err)
	}
	tc := cfg.HTTP
	if tc.Logger == nil {
		tc.Logger = cfg.Logger
	}
	if tc.ETags == nil {
		tc.ETags = NewETagCache(0, 0, 0)
	}
	return &Conn{apiURL: u, graphqlURL: gql, transport: NewTransport(tc), tokens: cfg.Tokens}, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ParseHTTPURL parses an absolute http(s) URL.
func ParseHTTPURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	return u, nil
}

// Clients are a REST (go-github) and a GraphQL (githubv4) client that
// authenticate as one installation, for one repository, with one token set.
// Every request asks the token source, so a long-lived Clients keeps
// working across token refreshes. Consumers use Reader or the writer
// package, which choose the set themselves.
type Clients struct {
	REST    *gh.Client
	GraphQL *githubv4.Client
	// Owner and Name are the repository the token is restricted to.
	Owner, Name string
	// InstallationID is the installation the token is minted from.
	InstallationID int64
}

// Clients asks for a token of (installationID, repo, set) right away, so a
// missing installation, repository, permission or broker grant fails here
// rather than on first use, and returns clients bound to it.
func (c *Conn) Clients(ctx context.Context, installationID int64, repo string, set TokenSet) (*Clients, error) {
	owner, name, err := SplitRepo(repo)
	if err != nil {
		return nil, fmt.Errorf("github.Clients: %w", err)
	}
	at := &authTransport{conn: c, req: TokenRequest{InstallationID: installationID, Repo: owner + "/" + name, Set: set}}
	if err := at.req.Validate(); err != nil {
		return nil, fmt.Errorf("github.Clients: %w", err)
	}
	if _, err := at.token(ctx); err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: at}
	rest := gh.NewClient(hc)
	rest.BaseURL = c.apiURL
	// The Transport is the single rate-limit policy; go-github's own
	// pre-emptive check would fail requests the Transport would wait for.
	rest.DisableRateLimitCheck = true
	return &Clients{
		REST:           rest,
		GraphQL:        githubv4.NewEnterpriseClient(c.graphqlURL, hc),
		Owner:          owner,
		Name:           name,
		InstallationID: installationID,
	}, nil
}

// authTransport sets the installation token on each request. When GitHub
// answers 401 (revoked, or the installation changed) the next token request
// names that token as stale, so the broker mints a new one.
type authTransport struct {
	conn *Conn
	req  TokenRequest

	mu    sync.Mutex
	stale string
}

func (t *authTransport) token(ctx context.Context) (*InstallationToken, error) {
	req := t.req
	t.mu.Lock()
	req.Stale, t.stale = t.stale, ""
	t.mu.Unlock()
	return t.conn.tokens.Token(ctx, req)
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, err := t.token(req.Context())
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
	resp, err := t.conn.transport.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		t.mu.Lock()
		t.stale = TokenDigest(tok.secret)
		t.mu.Unlock()
	}
	return resp, err
}
