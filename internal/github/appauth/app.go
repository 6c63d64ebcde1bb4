// Package appauth is GitHub App authentication with the app's private key:
// RS256 app JWTs and installation tokens minted for exactly one repository
// and one permission set, verified against the request, cached in memory.
//
// Only the token broker (cmd/quavon-token-broker, internal/tokenbroker) may
// link this package: whoever holds an app's private key can mint any token
// the installation allows. Every other process asks the broker for tokens of
// a named set (github.TokenSet) and gets only the sets its role allows. The
// per-binary dependency tests enforce it.
package appauth

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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/quavon/quavon/internal/github"
)

// App auth constants.
const (
	// JWTClockSkew backdates iat so a server clock slightly ahead of ours
	// still accepts the token (GitHub's recommendation is 60 s).
	JWTClockSkew = 60 * time.Second
	// JWTLifetime is the app JWT's exp offset from now; GitHub refuses more
	// than 10 minutes, and with the backdated iat 9 keeps the span at 10.
	JWTLifetime = 9 * time.Minute
	// TokenRefreshMargin: a cached installation token is replaced this long
	// before its expires_at (GitHub issues them for one hour), so a token
	// handed out is good for at least this long.
	TokenRefreshMargin = 5 * time.Minute

	maxTokenResponse = 1 << 20
)

// AppConfig configures NewApp.
type AppConfig struct {
	// ID is the GitHub App id (the JWT issuer).
	ID int64
	// PrivateKeyPEM is the App's RSA private key, PKCS#1 or PKCS#8 PEM.
	PrivateKeyPEM []byte
	// APIURL is the REST root ending in "/"; empty means
	// github.DefaultAPIURL.
	APIURL string
	// HTTP configures the rate-limit transport of the mint requests. Its
	// Now and Logger default to the fields below.
	HTTP github.TransportConfig
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
	id        int64
	key       *rsa.PrivateKey
	apiURL    *url.URL
	transport *github.Transport
	now       func() time.Time
	log       *slog.Logger

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
	tok *github.InstallationToken
}

// NewApp validates cfg and returns the App. It refuses a missing id, a key
// that is not RSA, and an API URL that is not an absolute http(s) URL.
func NewApp(cfg AppConfig) (*App, error) {
	if cfg.ID <= 0 {
		return nil, errors.New("appauth.NewApp: app id must be positive")
	}
	key, err := jwt.ParseRSAPrivateKeyFromPEM(cfg.PrivateKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("appauth.NewApp: private key: %w", err)
	}
	apiURL := cfg.APIURL
	if apiURL == "" {
		apiURL = github.DefaultAPIURL
	}
	if !strings.HasSuffix(apiURL, "/") {
		apiURL += "/"
	}
	u, err := github.ParseHTTPURL(apiURL)
	if err != nil {
		return nil, fmt.Errorf("appauth.NewApp: api url: %w", err)
	}
	a := &App{id: cfg.ID, key: key, apiURL: u, now: cfg.Now, log: cfg.Logger, tokens: map[tokenKey]*tokenSlot{}}
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
	a.transport = github.NewTransport(tc)
	return a, nil
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
		return "", fmt.Errorf("appauth.JWT: %w", err)
	}
	return s, nil
}

// Token returns an installation token for installationID restricted to the
// single repository repo ("owner/name") and exactly perms. A cached token is
// reused until TokenRefreshMargin before it expires. A token whose returned
// permissions or repositories differ from the request is refused with
// github.ErrTokenMismatch and never used.
func (a *App) Token(ctx context.Context, installationID int64, repo string, perms github.Permissions) (*github.InstallationToken, error) {
	owner, name, err := github.SplitRepo(repo)
	if err != nil {
		return nil, fmt.Errorf("appauth.Token: %w", err)
	}
	if installationID <= 0 {
		return nil, fmt.Errorf("appauth.Token: installation id must be positive")
	}
	if err := perms.Validate(); err != nil {
		return nil, fmt.Errorf("appauth.Token: %w", err)
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
		return slot.tok.Clone(), nil
	}
	slot.tok = nil
	tok, err := a.mint(ctx, installationID, owner, name, perms)
	if err != nil {
		return nil, err
	}
	slot.tok = tok
	return tok.Clone(), nil
}

// Installations lists the app's installations as GitHub reports them
// (GET /app/installations with the app's JWT), at most
// github.MaxAppInstallations.
func (a *App) Installations(ctx context.Context) ([]github.AppInstallation, error) {
	const op = "appauth.Installations"
	var out []github.AppInstallation
	for page := 1; len(out) < github.MaxAppInstallations; page++ {
		signed, err := a.JWT(a.now())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		u := a.apiURL.JoinPath("app", "installations")
		u.RawQuery = url.Values{"per_page": {"100"}, "page": {strconv.Itoa(page)}}.Encode()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		req.Header.Set("Authorization", "Bearer "+signed)
		req.Header.Set("Accept", "application/vnd.github+json")
		req.Header.Set("X-GitHub-Api-Version", github.APIVersion)
		resp, err := a.transport.RoundTrip(req)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		var batch []struct {
			ID      int64 `json:"id"`
			Account struct {
				Login string `json:"login"`
			} `json:"account"`
			Permissions github.Permissions `json:"permissions"`
			Events      []string           `json:"events"`
			SuspendedAt *time.Time         `json:"suspended_at"`
		}
		if resp.StatusCode != http.StatusOK {
			err := github.ResponseError(resp)
			resp.Body.Close()
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, maxTokenResponse)).Decode(&batch)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: decode: %w", op, err)
		}
		for _, in := range batch {
			out = append(out, github.AppInstallation{ID: in.ID, Account: in.Account.Login, Permissions: in.Permissions,
				Events: in.Events, Suspended: in.SuspendedAt != nil})
		}
		if len(batch) < 100 {
			break
		}
	}
	if len(out) > github.MaxAppInstallations {
		out = out[:github.MaxAppInstallations]
	}
	return out, nil
}

// Forget drops the cached token whose github.TokenDigest is digest (one
// GitHub answered 401 to), so the next Token call mints a new one. A digest
// that does not match the cached token changes nothing: a caller can only
// refresh a token it holds.
func (a *App) Forget(installationID int64, repo string, perms github.Permissions, digest string) {
	key := tokenKey{installation: installationID, repo: strings.ToLower(repo), perms: perms.String()}
	a.mu.Lock()
	slot := a.tokens[key]
	a.mu.Unlock()
	if slot == nil {
		return
	}
	slot.mu.Lock()
	if slot.tok != nil && github.TokenDigest(slot.tok.Secret()) == digest {
		slot.tok = nil
	}
	slot.mu.Unlock()
}

type tokenResponse struct {
	Token        string             `json:"token"`
	ExpiresAt    time.Time          `json:"expires_at"`
	Permissions  github.Permissions `json:"permissions"`
	Repositories []struct {
		ID       int64  `json:"id"`
		Name     string `json:"name"`
		FullName string `json:"full_name"`
	} `json:"repositories"`
}

// mint calls POST /app/installations/{id}/access_tokens with
// repositories: [name] and permissions: perms and verifies the answer.
func (a *App) mint(ctx context.Context, installationID int64, owner, name string, perms github.Permissions) (*github.InstallationToken, error) {
	op := fmt.Sprintf("appauth.Token installation %d %s/%s", installationID, owner, name)
	now := a.now()
	signed, err := a.JWT(now)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	body, err := json.Marshal(struct {
		Repositories []string           `json:"repositories"`
		Permissions  github.Permissions `json:"permissions"`
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
	req.Header.Set("X-GitHub-Api-Version", github.APIVersion)
	resp, err := a.transport.RoundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return nil, fmt.Errorf("%s: %w", op, github.ResponseError(resp))
	}
	var tr tokenResponse
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxTokenResponse)).Decode(&tr); err != nil {
		return nil, fmt.Errorf("%s: decode: %w", op, err)
	}
	tok := github.NewInstallationToken(tr.Token, installationID, owner+"/"+name, tr.Permissions, tr.ExpiresAt)
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

func verifyMinted(tr tokenResponse, owner, name string, perms github.Permissions, now time.Time) error {
	switch {
	case tr.Token == "":
		return fmt.Errorf("%w: empty token", github.ErrTokenMismatch)
	case !tr.ExpiresAt.After(now):
		return fmt.Errorf("%w: expires_at %s is not in the future", github.ErrTokenMismatch, tr.ExpiresAt.Format(time.RFC3339))
	case !tr.Permissions.Equal(perms):
		return fmt.Errorf("%w: permissions %q, requested %q", github.ErrTokenMismatch, tr.Permissions.String(), perms.String())
	case len(tr.Repositories) != 1:
		return fmt.Errorf("%w: %d repositories, requested 1", github.ErrTokenMismatch, len(tr.Repositories))
	case !strings.EqualFold(tr.Repositories[0].FullName, owner+"/"+name):
		// Only the name is sent; an installation on another account could
		// otherwise hand back a token for its own repository of that name.
		return fmt.Errorf("%w: repository %q, requested %q", github.ErrTokenMismatch, tr.Repositories[0].FullName, owner+"/"+name)
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
	req.Header.Set("X-GitHub-Api-Version", github.APIVersion)
	if resp, err := a.transport.RoundTrip(req); err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
	}
}
