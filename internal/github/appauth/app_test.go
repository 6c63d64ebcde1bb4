package appauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/quavon/quavon/internal/github"
)

func TestJWTClaims(t *testing.T) {
	t.Parallel()
	for name, keyPEM := range map[string][]byte{"pkcs1": pkcs1PEM(t), "pkcs8": pkcs8PEM(t)} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			app, err := NewApp(AppConfig{ID: 12345, PrivateKeyPEM: keyPEM})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
			signed, err := app.JWT(now)
			if err != nil {
				t.Fatal(err)
			}
			var claims jwt.RegisteredClaims
			tok, err := jwt.ParseWithClaims(signed, &claims,
				func(*jwt.Token) (any, error) { return &testKey().PublicKey, nil },
				jwt.WithValidMethods([]string{"RS256"}), jwt.WithTimeFunc(func() time.Time { return now }))
			if err != nil {
				t.Fatal(err)
			}
			if tok.Method.Alg() != "RS256" || tok.Header["alg"] != "RS256" {
				t.Errorf("alg = %v", tok.Header["alg"])
			}
			if claims.Issuer != "12345" {
				t.Errorf("iss = %q", claims.Issuer)
			}
			if got := claims.IssuedAt.Time; !got.Equal(now.Add(-60 * time.Second)) {
				t.Errorf("iat = %s, want now-60s", got)
			}
			if got := claims.ExpiresAt.Time; !got.Equal(now.Add(9 * time.Minute)) {
				t.Errorf("exp = %s, want now+9m", got)
			}
			if span := claims.ExpiresAt.Sub(claims.IssuedAt.Time); span > 10*time.Minute {
				t.Errorf("exp-iat = %s exceeds GitHub's 10 minutes", span)
			}
		})
	}
}

func TestNewAppRefusesNonsense(t *testing.T) {
	t.Parallel()
	key := pkcs1PEM(t)
	for name, cfg := range map[string]AppConfig{
		"no id":       {PrivateKeyPEM: key},
		"no key":      {ID: 1},
		"garbage key": {ID: 1, PrivateKeyPEM: []byte("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n")},
		"bad api url": {ID: 1, PrivateKeyPEM: key, APIURL: "ftp://x/"},
	} {
		if _, err := NewApp(cfg); err == nil {
			t.Errorf("%s: NewApp accepted", name)
		}
	}
}

func TestTokenRequestsExactlyRepoAndPermissions(t *testing.T) {
	t.Parallel()
	ts := &tokenServer{}
	app, _ := newTestApp(t, ts)
	tok, err := app.Token(context.Background(), 9, "o/r", github.FixerPermissions())
	if err != nil {
		t.Fatal(err)
	}
	if len(ts.requests) != 1 {
		t.Fatalf("%d mint requests", len(ts.requests))
	}
	req := ts.requests[0]
	if len(req.Repositories) != 1 || req.Repositories[0] != "r" {
		t.Errorf("repositories = %v, want [r]", req.Repositories)
	}
	if !req.Permissions.Equal(github.FixerPermissions()) {
		t.Errorf("requested permissions %s", req.Permissions)
	}
	if !tok.Permissions.Equal(github.FixerPermissions()) || tok.Repo != "o/r" || tok.InstallationID != 9 {
		t.Errorf("token = %s", tok)
	}
}

func TestTokenRefusesMismatch(t *testing.T) {
	t.Parallel()
	cases := map[string]func(tokenRequest) (github.Permissions, string){
		"wider": func(r tokenRequest) (github.Permissions, string) {
			p := r.Permissions.Clone()
			p["administration"] = "write"
			return p, "o/r"
		},
		"narrower": func(r tokenRequest) (github.Permissions, string) {
			p := r.Permissions.Clone()
			delete(p, "metadata")
			return p, "o/r"
		},
		"different level": func(r tokenRequest) (github.Permissions, string) {
			p := r.Permissions.Clone()
			p["contents"] = "read"
			return p, "o/r"
		},
		"other owner's repository": func(r tokenRequest) (github.Permissions, string) {
			return r.Permissions, "evil/r"
		},
	}
	for name, grant := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ts := &tokenServer{grant: grant}
			app, _ := newTestApp(t, ts)
			_, err := app.Token(context.Background(), 9, "o/r", github.FixerPermissions())
			if !errors.Is(err, github.ErrTokenMismatch) {
				t.Fatalf("err = %v, want github.ErrTokenMismatch", err)
			}
			if len(ts.revoked) != 1 || !strings.HasPrefix(ts.revoked[0], "ghs_token") {
				t.Errorf("refused token not revoked: %v", ts.revoked)
			}
			if strings.Contains(err.Error(), "ghs_token") {
				t.Errorf("error leaks the token: %v", err)
			}
		})
	}
}

func TestTokenCacheReuseAndRefresh(t *testing.T) {
	t.Parallel()
	ts := &tokenServer{lifetime: time.Hour}
	app, _ := newTestApp(t, ts)
	ctx := context.Background()
	first, err := app.Token(ctx, 9, "o/r", github.ReviewReadPermissions())
	if err != nil {
		t.Fatal(err)
	}
	ts.clock.Advance(54 * time.Minute) // 6 min left: still reused
	again, err := app.Token(ctx, 9, "O/R", github.ReviewReadPermissions())
	if err != nil {
		t.Fatal(err)
	}
	if again.Secret() != first.Secret() || ts.Mints() != 1 {
		t.Fatalf("token not reused (mints %d)", ts.Mints())
	}
	// Different permission set, repository or installation: separate tokens.
	if _, err := app.Token(ctx, 9, "o/r", github.FixerPermissions()); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Token(ctx, 9, "o/other", github.ReviewReadPermissions()); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Token(ctx, 10, "o/r", github.ReviewReadPermissions()); err != nil {
		t.Fatal(err)
	}
	if ts.Mints() != 4 {
		t.Fatalf("mints = %d, want 4", ts.Mints())
	}
	ts.clock.Advance(time.Minute + time.Second) // under 5 min left: refreshed
	fresh, err := app.Token(ctx, 9, "o/r", github.ReviewReadPermissions())
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Secret() == first.Secret() || ts.Mints() != 5 {
		t.Fatalf("token not refreshed near expiry (mints %d)", ts.Mints())
	}
	// Returned tokens are copies: mutating one cannot widen the cache.
	fresh.Permissions["administration"] = "write"
	cached, _ := app.Token(ctx, 9, "o/r", github.ReviewReadPermissions())
	if !cached.Permissions.Equal(github.ReviewReadPermissions()) {
		t.Fatal("cached token permissions were mutated through a returned copy")
	}
}

func TestTokenRefusesBadInput(t *testing.T) {
	t.Parallel()
	ts := &tokenServer{}
	app, _ := newTestApp(t, ts)
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"empty perms":  func() error { _, err := app.Token(ctx, 9, "o/r", github.Permissions{}); return err },
		"bad level":    func() error { _, err := app.Token(ctx, 9, "o/r", github.Permissions{"contents": "all"}); return err },
		"no owner":     func() error { _, err := app.Token(ctx, 9, "r", github.FixerPermissions()); return err },
		"path inject":  func() error { _, err := app.Token(ctx, 9, "o/r/../x", github.FixerPermissions()); return err },
		"dotdot":       func() error { _, err := app.Token(ctx, 9, "o/..", github.FixerPermissions()); return err },
		"installation": func() error { _, err := app.Token(ctx, 0, "o/r", github.FixerPermissions()); return err },
	} {
		if call() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if ts.Mints() != 0 {
		t.Errorf("bad input reached GitHub")
	}
}

func TestTokenNeverPrinted(t *testing.T) {
	t.Parallel()
	ts := &tokenServer{}
	app, _ := newTestApp(t, ts)
	var logs bytes.Buffer
	app.log = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tok, err := app.Token(context.Background(), 9, "o/r", github.FixerPermissions())
	if err != nil {
		t.Fatal(err)
	}
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("token", "tok", tok)
	printed := fmt.Sprintf("%v %+v %#v %s %v %+v %#v", tok, tok, tok, tok, *tok, *tok, *tok) + logs.String()
	if strings.Contains(printed, tok.Secret()) {
		t.Fatalf("secret printed: %s", printed)
	}
	if !strings.Contains(logs.String(), "installation token minted") {
		t.Fatalf("mint not logged: %s", logs.String())
	}
}

func TestForgetDropsOnlyTheNamedToken(t *testing.T) {
	t.Parallel()
	ts := &tokenServer{}
	app, _ := newTestApp(t, ts)
	ctx := context.Background()
	first, err := app.Token(ctx, 9, "o/r", github.ReviewReadPermissions())
	if err != nil {
		t.Fatal(err)
	}
	// A digest of some other token changes nothing: a caller can refresh
	// only a token it holds.
	app.Forget(9, "o/r", github.ReviewReadPermissions(), github.TokenDigest("ghs_other"))
	if again, _ := app.Token(ctx, 9, "o/r", github.ReviewReadPermissions()); again.Secret() != first.Secret() || ts.Mints() != 1 {
		t.Fatalf("a foreign digest dropped the cached token (mints %d)", ts.Mints())
	}
	app.Forget(9, "O/R", github.ReviewReadPermissions(), github.TokenDigest(first.Secret()))
	fresh, err := app.Token(ctx, 9, "o/r", github.ReviewReadPermissions())
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Secret() == first.Secret() || ts.Mints() != 2 {
		t.Fatalf("Forget did not drop the token (mints %d)", ts.Mints())
	}
}
