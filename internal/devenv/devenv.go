// Package devenv starts the real services Quavon's tests and development
// setup run against, on one machine: a throwaway PostgreSQL cluster from
// the Debian binaries, Valkey/Redis with Quavon's ACL users and fresh
// passwords, and a Docker Engine with gVisor's runsc registered (shared
// between concurrent runs). scripts/test, `quavon dev services` and the
// coming `quavon dev` use it; scripts/test keeps only the bootstrap
// (installing packages, runsc and test tools) in bash.
//
// Env is the contract with the tests: the QUAVON_TEST_* variables
// internal/testenv reads.
package devenv

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Deadline is how long each service may take to come up.
const Deadline = 60 * time.Second

// The variables Env exports; internal/testenv reads them.
const (
	VarDatabaseURL      = "QUAVON_TEST_DATABASE_URL"
	VarValkeyAddr       = "QUAVON_TEST_VALKEY_ADDR"
	VarValkeySecretsDir = "QUAVON_TEST_VALKEY_SECRETS_DIR"
	VarRunscPlatform    = "QUAVON_TEST_RUNSC_PLATFORM"
)

// Env is what the services export to the tests.
type Env struct {
	DatabaseURL      string // QUAVON_TEST_DATABASE_URL: superuser URL of a test database
	ValkeyAddr       string // QUAVON_TEST_VALKEY_ADDR
	ValkeySecretsDir string // QUAVON_TEST_VALKEY_SECRETS_DIR: one password file per ACL user
	RunscPlatform    string // QUAVON_TEST_RUNSC_PLATFORM
}

// Vars are the environment variables of e, in a fixed order.
func (e Env) Vars() [][2]string {
	return [][2]string{
		{VarDatabaseURL, e.DatabaseURL},
		{VarValkeyAddr, e.ValkeyAddr},
		{VarValkeySecretsDir, e.ValkeySecretsDir},
		{VarRunscPlatform, e.RunscPlatform},
	}
}

// Script renders e as POSIX shell export lines (values never hold a
// quote: they are generated here).
func (e Env) Script() string {
	var b strings.Builder
	for _, v := range e.Vars() {
		if v[1] != "" {
			fmt.Fprintf(&b, "export %s='%s'\n", v[0], v[1])
		}
	}
	return b.String()
}

// FreePort returns a TCP port on 127.0.0.1 nothing listens on. (Another
// process may take it before the caller does; the services retry once.)
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// RandomPassword is 24 random bytes as [A-Za-z0-9] (safe in SQL, URLs and
// ACL files).
func RandomPassword() string {
	b := make([]byte, 24)
	rand.Read(b)
	s := base64.RawStdEncoding.EncodeToString(b)
	return strings.NewReplacer("+", "", "/", "").Replace(s)
}

// waitFor polls ok every 100 ms until it succeeds, the process dies
// (alive false) or the deadline passes.
func waitFor(ctx context.Context, what string, deadline time.Duration, alive func() bool, ok func() bool) error {
	end := time.Now().Add(deadline)
	for {
		if ok() {
			return nil
		}
		if alive != nil && !alive() {
			return fmt.Errorf("%s exited during start-up", what)
		}
		if time.Now().After(end) {
			return fmt.Errorf("%s did not come up within %s", what, deadline)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// tail returns the last n lines of the file at path, for error messages.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// output runs a command and returns its trimmed combined output.
func output(ctx context.Context, name string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}
