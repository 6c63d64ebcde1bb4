// Package testenv connects tests to the real services that scripts/test
// starts (Valkey/Redis with Quavon's ACL users, PostgreSQL, Docker).
//
// A test that needs a service calls the helper here. When the service is
// not configured the test is skipped on a developer's `go test ./...`, and
// fails when QUAVON_TEST_REQUIRE_SERVICES=1, which scripts/test (and so CI)
// sets: CI never skips silently.
package testenv

import (
	"github.com/quavon/quavon/internal/devenv"

	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	qvalkey "github.com/quavon/quavon/internal/valkey"
)

// Valkey ACL users created by scripts/test from deploy/valkey/users.acl.tmpl.
const (
	UserControlPlane = "quavon"
	UserSandbox      = "sandbox"
	UserEgress       = "egress"
)

// Required reports whether missing services must fail tests.
func Required() bool { return os.Getenv("QUAVON_TEST_REQUIRE_SERVICES") == "1" }

func unavailable(tb testing.TB, what string) {
	tb.Helper()
	if Required() {
		tb.Fatalf("%s is required (QUAVON_TEST_REQUIRE_SERVICES=1) but not available; run scripts/test", what)
	}
	tb.Skipf("%s not configured; run scripts/test (or scripts/test --services-only) to start it", what)
}

// ValkeyConfig returns how to connect as user.
func ValkeyConfig(tb testing.TB, user string) qvalkey.Config {
	tb.Helper()
	addr := os.Getenv(devenv.VarValkeyAddr)
	dir := os.Getenv(devenv.VarValkeySecretsDir)
	if addr == "" || dir == "" {
		unavailable(tb, "Valkey (QUAVON_TEST_VALKEY_ADDR, QUAVON_TEST_VALKEY_SECRETS_DIR)")
	}
	return qvalkey.Config{Addr: addr, Username: user, PasswordFile: filepath.Join(dir, user)}
}

// Valkey returns a client authenticated as user, closed at cleanup.
func Valkey(tb testing.TB, user string) valkey.Client {
	tb.Helper()
	cfg := ValkeyConfig(tb, user)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := qvalkey.Open(ctx, cfg)
	if err != nil {
		if Required() {
			tb.Fatalf("valkey as %s: %v", user, err)
		}
		tb.Skipf("valkey as %s: %v", user, err)
	}
	tb.Cleanup(c.Close)
	return c
}

// Pool returns a fresh sandbox pool name, so each test has its own key
// prefix (quavon-sandbox-<pool>:*), and deletes that prefix's keys at
// cleanup through admin, a control-plane client.
func Pool(tb testing.TB, admin valkey.Client) string {
	tb.Helper()
	var b [6]byte
	rand.Read(b[:])
	pool := "t" + hex.EncodeToString(b[:])
	tb.Cleanup(func() { DeletePrefix(tb, admin, "quavon-sandbox-"+pool+":") })
	return pool
}

// DeletePrefix deletes every key starting with prefix.
func DeletePrefix(tb testing.TB, c valkey.Client, prefix string) {
	tb.Helper()
	ctx := context.Background()
	var cursor uint64
	for {
		e, err := c.Do(ctx, c.B().Scan().Cursor(cursor).Match(prefix+"*").Count(1000).Build()).AsScanEntry()
		if err != nil {
			tb.Errorf("scan %s*: %v", prefix, err)
			return
		}
		if len(e.Elements) > 0 {
			if err := c.Do(ctx, c.B().Del().Key(e.Elements...).Build()).Error(); err != nil {
				tb.Errorf("del %s*: %v", prefix, err)
				return
			}
		}
		if e.Cursor == 0 {
			return
		}
		cursor = e.Cursor
	}
}

// Program returns the path of the program name on PATH; a missing one
// skips the test, or fails it under scripts/test.
func Program(tb testing.TB, name string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		unavailable(tb, name+" (not on PATH)")
	}
	return p
}

// SARIFMultitool is Microsoft's SARIF Multitool that scripts/test installs
// (QUAVON_TEST_SARIF_MULTITOOL).
func SARIFMultitool(tb testing.TB) string {
	tb.Helper()
	p := os.Getenv("QUAVON_TEST_SARIF_MULTITOOL")
	if p == "" {
		unavailable(tb, "the SARIF Multitool (QUAVON_TEST_SARIF_MULTITOOL)")
	}
	return p
}

// RandomString returns n characters drawn from alphabet with crypto/rand:
// secret-shaped test data is made at run time, never committed, and has
// the entropy of real secrets.
func RandomString(tb testing.TB, alphabet string, n int) string {
	tb.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
