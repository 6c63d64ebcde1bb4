package github

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock whose Sleep advances time instead of
// sleeping and records each wait.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *fakeClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

// fakeTokens is a TokenSource for unit tests: it issues tok-<n> tokens
// for any valid request, records requests, and re-issues when a request
// names the current token as stale. The real source is the broker
// (internal/tokenbroker tests, and the emulator tests here).
type fakeTokens struct {
	mu       sync.Mutex
	issued   int
	current  map[TokenRequest]string
	requests []TokenRequest
}

func (f *fakeTokens) Token(_ context.Context, req TokenRequest) (*InstallationToken, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, req)
	key := req
	key.Stale = ""
	if f.current == nil {
		f.current = map[TokenRequest]string{}
	}
	tok, ok := f.current[key]
	if !ok || (req.Stale != "" && req.Stale == TokenDigest(tok)) {
		f.issued++
		tok = "tok-" + strings.Repeat("x", f.issued)
		f.current[key] = tok
	}
	return NewInstallationToken(tok, req.InstallationID, req.Repo, req.Set.Permissions(), time.Now().Add(time.Hour)), nil
}

func (f *fakeTokens) Issued() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.issued
}

// newTestConn serves routes (installation-token requests need none: the
// tokens come from fakeTokens) and returns a Conn pointed at them.
func newTestConn(tb testing.TB, routes map[string]http.HandlerFunc) (*Conn, *fakeTokens) {
	tb.Helper()
	mux := http.NewServeMux()
	for pattern, h := range routes {
		mux.HandleFunc(pattern, h)
	}
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	ft := &fakeTokens{}
	clock := newFakeClock()
	conn, err := NewConn(ConnConfig{APIURL: srv.URL + "/", GraphQLURL: srv.URL + "/graphql", Tokens: ft,
		HTTP: TransportConfig{Now: clock.Now, Sleep: clock.Sleep, Base: srv.Client().Transport}})
	if err != nil {
		tb.Fatal(err)
	}
	return conn, ft
}
