// Package testbroker starts a real token broker (internal/tokenbroker) for
// tests, holding the keys of emulator apps (internal/githubfake). It is its
// own package because the emulator itself uses internal/testenv.
package testbroker

import (
	"github.com/quavon/quavon/internal/testenv"

	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/github/appauth"
	"github.com/quavon/quavon/internal/githubfake"
	"github.com/quavon/quavon/internal/tokenbroker"
)

// Broker is a real token broker (internal/tokenbroker) on a Unix socket,
// holding the keys of emulator apps, with one credential per role. Tests
// that talk to the emulator get their tokens through it, as every Quavon
// service does.
type Broker struct {
	// Addr is "unix:<socket>".
	Addr string
	// Logs is everything the broker logged.
	Logs  *testenv.LogBuffer
	creds map[tokenbroker.Role]string
	gh    *githubfake.Server
}

// Options tune Start.
type Options struct {
	// HTTP configures the transport of the broker's mint requests (a Sleep
	// that advances the emulator's clock, say).
	HTTP github.TransportConfig
}

// Start starts a broker for the emulator's apps, stopped at cleanup.
func Start(tb testing.TB, srv *githubfake.Server, apps map[github.AppKind]*githubfake.App, opt Options) *Broker {
	tb.Helper()
	b := &Broker{Logs: &testenv.LogBuffer{}, creds: map[tokenbroker.Role]string{}, gh: srv}
	minters := map[github.AppKind]tokenbroker.Minter{}
	log := slog.New(slog.NewJSONHandler(b.Logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	for kind, fa := range apps {
		app, err := appauth.NewApp(appauth.AppConfig{ID: fa.ID, PrivateKeyPEM: fa.PrivateKeyPEM, APIURL: srv.URL + "/",
			Now: srv.Now, HTTP: opt.HTTP, Logger: log})
		if err != nil {
			tb.Fatal(err)
		}
		minters[kind] = app
	}
	var lines []string
	for _, role := range []tokenbroker.Role{tokenbroker.RoleAPI, tokenbroker.RoleWorker, tokenbroker.RolePublisher} {
		cred, line, err := tokenbroker.NewCredential(role, nil)
		if err != nil {
			tb.Fatal(err)
		}
		b.creds[role] = cred
		lines = append(lines, line)
	}
	callers, err := tokenbroker.ParseCallers(strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		tb.Fatal(err)
	}
	s, err := tokenbroker.New(tokenbroker.Config{Apps: minters, Callers: callers, Log: log})
	if err != nil {
		tb.Fatal(err)
	}
	// Unix socket paths are short (108 bytes): not under t.TempDir().
	dir, err := os.MkdirTemp("", "qbroker")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	b.Addr = "unix:" + filepath.Join(dir, "broker.sock")
	ln, err := tokenbroker.Listen(b.Addr)
	if err != nil {
		tb.Fatal(err)
	}
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := hs.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			tb.Log(err)
		}
	})
	return b
}

// Credential is the credential of role.
func (b *Broker) Credential(role tokenbroker.Role) string { return b.creds[role] }

// Client is a broker client authenticating as role.
func (b *Broker) Client(tb testing.TB, role tokenbroker.Role) *github.BrokerClient {
	tb.Helper()
	c, err := github.NewBrokerClient(b.Addr, []byte(b.creds[role]))
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// Conn is a connection to the emulator whose tokens come from the broker as
// role.
func (b *Broker) Conn(tb testing.TB, role tokenbroker.Role, httpCfg github.TransportConfig) *github.Conn {
	tb.Helper()
	conn, err := github.NewConn(github.ConnConfig{APIURL: b.gh.URL + "/", GraphQLURL: b.gh.URL + "/graphql",
		Tokens: b.Client(tb, role), HTTP: httpCfg})
	if err != nil {
		tb.Fatal(err)
	}
	return conn
}
