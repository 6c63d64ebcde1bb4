package github

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"time"
)

// AppKind is which of Quavon's two GitHub Apps something is for.
type AppKind string

// The two apps: the review app reads and publishes reviews, check runs and
// SARIF; the Fixer app pushes bot branches and opens draft pull requests.
const (
	AppReview AppKind = "review"
	AppFixer  AppKind = "fixer"
)

// Valid reports whether k is one of the two apps.
func (k AppKind) Valid() bool { return k == AppReview || k == AppFixer }

// TokenSet names one permission set an installation token can be minted
// with. The set of sets is closed: nothing in this package, and nothing that
// talks to the token broker, can ask for an arbitrary permission map. Which
// caller may have which set is the broker's decision (internal/tokenbroker).
type TokenSet string

// The token sets.
const (
	// SetReviewRead is the review app's read set (ReviewReadPermissions):
	// the worker, the API and the publisher's re-checks read with it.
	SetReviewRead TokenSet = "review-read"
	// SetReviewWrite is the review app's publishing set
	// (ReviewWritePermissions).
	SetReviewWrite TokenSet = "review-write"
	// SetCodeScanning is the review app's SARIF upload set
	// (CodeScanningPermissions).
	SetCodeScanning TokenSet = "code-scanning"
	// SetFixer is the Fixer app's set (FixerPermissions).
	SetFixer TokenSet = "fixer"
)

var tokenSets = map[TokenSet]struct {
	app   AppKind
	perms func() Permissions
}{
	SetReviewRead:   {AppReview, ReviewReadPermissions},
	SetReviewWrite:  {AppReview, ReviewWritePermissions},
	SetCodeScanning: {AppReview, CodeScanningPermissions},
	SetFixer:        {AppFixer, FixerPermissions},
}

// TokenSets lists every set, sorted.
func TokenSets() []TokenSet {
	out := make([]TokenSet, 0, len(tokenSets))
	for s := range tokenSets {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// Valid reports whether s is a known set.
func (s TokenSet) Valid() bool { _, ok := tokenSets[s]; return ok }

// App is the app whose installation mints s.
func (s TokenSet) App() AppKind { return tokenSets[s].app }

// Permissions is a fresh copy of the permission map of s; nil for an
// unknown set.
func (s TokenSet) Permissions() Permissions {
	if d, ok := tokenSets[s]; ok {
		return d.perms()
	}
	return nil
}

// TokenRequest asks for a token of one installation, for exactly one
// repository and one set. It is also the token broker's request body.
type TokenRequest struct {
	InstallationID int64    `json:"installationId"`
	Repo           string   `json:"repository"`
	Set            TokenSet `json:"set"`
	// Stale, when set, is TokenDigest of a token GitHub refused with 401:
	// the broker drops that token from its cache and mints a new one.
	Stale string `json:"stale,omitempty"`
}

var digestRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Validate refuses malformed requests before they leave the process.
func (r TokenRequest) Validate() error {
	if r.InstallationID <= 0 {
		return errors.New("token request: installation id must be positive")
	}
	if _, _, err := SplitRepo(r.Repo); err != nil {
		return fmt.Errorf("token request: %w", err)
	}
	if !r.Set.Valid() {
		return fmt.Errorf("token request: unknown set %q", r.Set)
	}
	if r.Stale != "" && !digestRE.MatchString(r.Stale) {
		return errors.New("token request: stale must be a token digest")
	}
	return nil
}

// TokenSource hands out installation tokens. In every service it is the
// token broker's client (BrokerClient); only the broker itself holds the
// apps' private keys (internal/github/appauth).
type TokenSource interface {
	Token(ctx context.Context, req TokenRequest) (*InstallationToken, error)
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

// NewInstallationToken wraps a token value; the minting code and the
// broker's client build tokens with it.
func NewInstallationToken(secret string, installationID int64, repo string, perms Permissions, expiresAt time.Time) *InstallationToken {
	return &InstallationToken{secret: secret, InstallationID: installationID, Repo: repo, Permissions: perms.Clone(), ExpiresAt: expiresAt}
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

// Clone returns a copy that shares nothing with t.
func (t *InstallationToken) Clone() *InstallationToken {
	c := *t
	c.Permissions = t.Permissions.Clone()
	return &c
}

// TokenDigest is the SHA-256 (hex) of a token's value: how a caller names a
// token to the broker (TokenRequest.Stale) without sending it back.
func TokenDigest(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
