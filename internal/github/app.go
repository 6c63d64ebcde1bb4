package github

import (
	"bytes"
	"context"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// App auth constants.
const (
	// DefaultAPIURL and DefaultGraphQLURL are github.com's endpoints. For
	// GitHub Enterprise Server use https://HOST/api/v3/ and
	// https://HOST/api/graphql.
	DefaultAPIURL     = "https://api.github.com/"
	DefaultGraphQLURL = "https://api.github.com/graphql"
	// JWTClockSkew backdates iat so a server clock slightly ahead of ours
	// still accepts the token (GitHub's recommendation is 60 s).
	JWTClockSkew = 60 * time.Second
	// JWTLifetime is the app JWT's exp offset from now; GitHub refuses more
	// than 10 minutes, and with the backdated iat 9 keeps the span at 10.
	JWTLifetime = 9 * time.Minute
	// TokenRefreshMargin: a cached installation token is replaced this long
	// before its expires_at (GitHub issues them for one hour).
	TokenRefreshMargin = 5 * time.Minute
	// APIVersion is the REST API version header sent on every request.
	APIVersion = "2022-11-28"

	maxTokenResponse = 1 << 20
)

// AppConfig configures NewApp.
type AppConfig struct {
	// ID is the GitHub App id (the JWT issuer).
	ID int64
	// PrivateKeyPEM is the App's RSA private key, PKCS#1 or PKCS#8 PEM.
	PrivateKeyPEM []byte
	// APIURL is the REST root ending in "/"; empty means DefaultAPIURL.
	APIURL string
	// GraphQLURL is the GraphQL endpoint; empty means DefaultGraphQLURL.
	GraphQLURL string
	// HTTP configures the shared rate-limit transport. Its Now and Logger
	// default to the fields below; ETags defaults to a bounded cache.
	HTTP TransportConfig
	// Now is the clock for JWTs and token expiry; nil means time.Now.
	Now func() time.Time
	// Logger receives token mint events (never token values); nil discards.
	Logger *slog.Logger
}

// App is a GitHub App identity: it signs app JWTs and mints installation
// tokens, each for exactly one repository and exactly one permission set.
//
// Installation tokens are cached in memory only, keyed by (installation,
// repository, permission set), and replaced TokenRefreshMargin before they
// expire. Nothing is ever written to disk, so no sealed cache (and no
// QUAVON_ENCRYPTION_KEY) is involved; a restarted process mints afresh.
type App struct {
	id         int64
	key        *rsa.PrivateKey
	apiURL     *url.URL
	graphqlURL string
	transport  *Transport
	now        func() time.Time
	log        *slog.Logger

	mu     sync.Mutex
	tokens map[tokenKey]*tokenSlot
}

type tokenKey struct {
	installation int64
	repo         string // lower-case owner/name
	perms        string // Permissions.String()
}

type tokenSlot struct {
	mu  sync.Mutex // serialises minting for one key
	tok *InstallationToken
}

// NewApp validates cfg and returns the App. It refuses a missing id, a key
// that is not RSA, and API URLs that are not absolute http(s) URLs.
func NewApp(cfg AppConfig) (*App, error) {
	if cfg.ID <= 0 {
		return nil, errors.New("github.NewApp: app id must be positive")
	}
	key, err := jwt.ParseRSAPrivateKeyFromPEM(cfg.PrivateKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("github.NewApp: private key: %w", err)
	}
	apiURL := cmpOr(cfg.APIURL, DefaultAPIURL)
	if !strings.HasSuffix(apiURL, "/") {
		apiURL += "/"
	}
	u, err := parseHTTPURL(apiURL)
	if err != nil {
		return nil, fmt.Errorf("github.NewApp: api url: %w", err)
	}
	gql := cmpOr(cfg.GraphQLURL, DefaultGraphQLURL)
	if _, err := parseHTTPURL(gql); err != nil {
		return nil, fmt.Errorf("github.NewApp: graphql url: %w", err)
	}
	a := &App{id: cfg.ID, key: key, apiURL: u, graphqlURL: gql, now: cfg.Now, log: cfg.Logger, tokens: map[tokenKey]*tokenSlot{}}
	if a.now == nil {
		a.now = time.Now
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	tc := cfg.HTTP
	if tc.Now == nil {
		tc.Now = a.now
	}
	if tc.Logger == nil {
		tc.Logger = a.log
	}
	if tc.ETags == nil {
		tc.ETags = NewETagCache(0, 0, 0)
	}
	a.transport = NewTransport(tc)
	return a, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func parseHTTPURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an absolute http(s) URL", s)
	}
	return u, nil
}

// ID returns the App id.
func (a *App) ID() int64 { return a.id }

// JWT returns the app's RS256 JSON Web Token for time now: iat = now −
// JWTClockSkew, exp = now + JWTLifetime, iss = the app id.
func (a *App) JWT(now time.Time) (string, error) {
	claims := jwt.RegisteredClaims{
		Issuer:    strconv.FormatInt(a.id, 10),
		IssuedAt:  jwt.NewNumericDate(now.Add(-JWTClockSkew)),
		ExpiresAt: jwt.NewNumericDate(now.Add(JWTLifetime)),
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodRS256, claims).SignedString(a.key)
	if err != nil {
		return "", fmt.Errorf("github.JWT: %w", err)
	}
	return s, nil
}

// InstallationToken is a minted installation access token. Its secret is
// only reachable through Secret; String, GoString and LogValue redact it so
// it cannot end up in a log line or an error by accident.
type InstallationToken struct {
	secret string
	// InstallationID, Repo ("owner/name") and Permissions are what the token
	// was minted for and GitHub confirmed.
	InstallationID int64
	Repo           string
	Permissions    Permissions
	// ExpiresAt is GitHub's expires_at.
	ExpiresAt time.Time
}

// Secret returns the token value for an Authorization header or a git
// credential passed per command. Never log or persist it.
func (t *InstallationToken) Secret() string { return t.secret }

// String redacts the secret.
func (t InstallationToken) String() string {
	return fmt.Sprintf("installation token (installation %d, %s, %s, expires %s)", t.InstallationID, t.Repo, t.Permissions, t.ExpiresAt.UTC().Format(time.RFC3339))
}

// GoString redacts the secret under %#v.
func (t InstallationToken) GoString() string { return t.String() }

// LogValue redacts the secret in slog.
func (t InstallationToken) LogValue() slog.Value { return slog.StringValue(t.String()) }

func (t *InstallationToken) clone() *InstallationToken {
	c := *t
	c.Permissions = t.Permissions.Clone()
	return &c
}

// Token returns an installation token for installationID restricted to the
// single repository repo ("owner/name") and exactly perms. A cached token is
// reused until TokenRefreshMargin before it expires. A token whose returned
// permissions or repositories differ from the request is refused with
// ErrTokenMismatch and never used.
func (a *App) Token(ctx context.Context, installationID int64, repo string, perms Permissions) (*InstallationToken, error) {
	owner, name, err := SplitRepo(repo)
	if err != nil {
		return nil, fmt.Errorf("github.Token: %w", err)
	}
	if installationID <= 0 {
		return nil, fmt.Errorf("github.Token: installation id must be positive")
	}
	if err := perms.Validate(); err != nil {
		return nil, fmt.Errorf("github.Token: %w", err)
	}
	key := tokenKey{installation: installationID, repo: strings.ToLower(owner + "/" + name), perms: perms.String()}
	a.mu.Lock()
	slot, ok := a.tokens[key]
	if !ok {
		slot = &tokenSlot{}
		a.tokens[key] = slot
	}
	a.mu.Unlock()

	slot.mu.Lock()
	defer slot.mu.Unlock()
	if slot.tok != nil && a.now().Before(slot.tok.ExpiresAt.Add(-TokenRefreshMargin)) {
		return slot.tok.clone(), nil
	}
	slot.tok = nil
	tok, err := a.mint(ctx, installationID, owner, name, perms)
	if err != nil {
		return nil, err
	}
	slot.tok = tok
	return tok.clone(), nil
}

// forget drops a cached token GitHub no longer accepts (a 401), so the next
// request mints a new one.
func (a *App) forget(installationID int64, repo string, perms Permissions, secret string) {
	key := tokenKey{installation: installationID, repo: strings.ToLower(repo), perms: perms.String()}
	a.mu.Lock()
	slot := a.tokens[key]
	a.mu.Unlock()
	if slot == nil {
		return
	}
	slot.mu.Lock()
	if slot.tok != nil && slot.tok.secret == secret {
		slot.tok = nil
	}
	slot.mu.Unlock()
}

type tokenResponse struct {
	Token        string      `json:"token"`
	ExpiresAt    time.Time   `json:"expires_at"`
	Permissions  Permissions `json:"permissions"`
	Repositories []struct {
		ID       int64  `json:"id"`
		Name     string `json:"name"`
		FullName string `json:"full_name"`
	} `json:"repositories"`
}

// mint calls POST /app/installations/{id}/access_tokens with
// repositories: [name] and permissions: perms and verifies the answer.
func (a *App) mint(ctx context.Context, installationID int64, owner, name string, perms Permissions) (*InstallationToken, error) {
	op := fmt.Sprintf("github.Token installation %d %s/%s", installationID, owner, name)
	now := a.now()
	signed, err := a.JWT(now)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	body, err := json.Marshal(struct {
		Repositories []string    `json:"repositories"`
		Permissions  Permissions `json:"permissions"`
	}{[]string{name}, perms})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	u := a.apiURL.JoinPath("app", "installations", strconv.FormatInt(installationID, 10), "access_tokens")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	req.Header.Set("Authorization", "Bearer "+signed)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Api-Version", APIVersion)
	resp, err := a.transport.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return nil, fmt.Errorf("%s: %w", op, responseError(resp))
	}
	var tr tokenResponse
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxTokenResponse)).Decode(&tr); err != nil {
		return nil, fmt.Errorf("%s: decode: %w", op, err)
	}
	tok := &InstallationToken{secret: tr.Token, InstallationID: installationID, Repo: owner + "/" + name, Permissions: tr.Permissions, ExpiresAt: tr.ExpiresAt}
	if err := verifyMinted(tr, owner, name, perms, now); err != nil {
		if tr.Token != "" {
			a.revoke(ctx, tr.Token)
		}
		a.log.LogAttrs(ctx, slog.LevelError, "github installation token refused",
			slog.Int64("installation", installationID), slog.String("repo", owner+"/"+name),
			slog.String("requested", perms.String()), slog.String("granted", tr.Permissions.String()),
			slog.String("reason", err.Error()))
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	a.log.LogAttrs(ctx, slog.LevelDebug, "github installation token minted",
		slog.Int64("installation", installationID), slog.String("repo", owner+"/"+name),
		slog.String("permissions", perms.String()), slog.Time("expires_at", tr.ExpiresAt))
	return tok, nil
}

func verifyMinted(tr tokenResponse, owner, name string, perms Permissions, now time.Time) error {
	switch {
	case tr.Token == "":
		return fmt.Errorf("%w: empty token", ErrTokenMismatch)
	case !tr.ExpiresAt.After(now):
		return fmt.Errorf("%w: expires_at %s is not in the future", ErrTokenMismatch, tr.ExpiresAt.Format(time.RFC3339))
	case !tr.Permissions.Equal(perms):
		return fmt.Errorf("%w: permissions %q, requested %q", ErrTokenMismatch, tr.Permissions.String(), perms.String())
	case len(tr.Repositories) != 1:
		return fmt.Errorf("%w: %d repositories, requested 1", ErrTokenMismatch, len(tr.Repositories))
	case !strings.EqualFold(tr.Repositories[0].FullName, owner+"/"+name):
		// Only the name is sent; an installation on another account could
		// otherwise hand back a token for its own repository of that name.
		return fmt.Errorf("%w: repository %q, requested %q", ErrTokenMismatch, tr.Repositories[0].FullName, owner+"/"+name)
	}
	return nil
}

// revoke is best effort: DELETE /installation/token with the refused token.
func (a *App) revoke(ctx context.Context, secret string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, a.apiURL.JoinPath("installation", "token").String(), nil)
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", APIVersion)
	if resp, err := a.transport.RoundTrip(req); err == nil {
		drain(resp)
	}
}

// responseError turns a non-success response into an error carrying the
// status sentinel and GitHub's message (bounded; never request headers).
func responseError(resp *http.Response) error {
	var msg struct {
		Message string `json:"message"`
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	_ = json.Unmarshal(raw, &msg)
	m := msg.Message
	if len(m) > 200 {
		m = m[:200]
	}
	err := fmt.Errorf("status %d: %q", resp.StatusCode, m)
	if s := statusSentinel(resp.StatusCode); s != nil {
		return fmt.Errorf("%w: %w", s, err)
	}
	return err
}

var (
	ownerPattern = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`)
	namePattern  = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
)

// SplitRepo parses "owner/name", refusing anything that is not a plausible
// GitHub owner and repository name (so no value can inject path segments
// into an API URL).
func SplitRepo(full string) (owner, name string, err error) {
	owner, name, ok := strings.Cut(full, "/")
	if !ok || !ownerPattern.MatchString(owner) || !namePattern.MatchString(name) || name == "." || name == ".." {
		return "", "", fmt.Errorf("invalid repository %q (want owner/name)", full)
	}
	return owner, name, nil
}
