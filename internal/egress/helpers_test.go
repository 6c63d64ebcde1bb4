package egress

import (
	"github.com/quavon/quavon/internal/sandbox"

	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/testenv"
)

// publicLabel is a public-looking address that only the test dialer knows
// how to reach: it routes it to a local server. Nothing ever leaves
// loopback.
const publicLabel = "93.184.215.14"

func newToken(tb testing.TB) string {
	tb.Helper()
	var b [32]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func basic(user, token string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+token))
}

// fakeGrants is an in-memory GrantStore.
type fakeGrants struct {
	mu     sync.Mutex
	grants map[string]sandbox.EgressGrant
	err    error // returned by every Lookup when set
}

var _ GrantStore = (*fakeGrants)(nil)

func (f *fakeGrants) Lookup(_ context.Context, token string) (sandbox.EgressGrant, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return sandbox.EgressGrant{}, f.err
	}
	g, ok := f.grants[token]
	if !ok {
		return sandbox.EgressGrant{}, sandbox.ErrUnknownEgressToken
	}
	return g, nil
}

func (f *fakeGrants) set(token string, g sandbox.EgressGrant) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.grants == nil {
		f.grants = map[string]sandbox.EgressGrant{}
	}
	f.grants[token] = g
}

func (f *fakeGrants) remove(token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.grants, token)
}

func (f *fakeGrants) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// fakeResolver answers from a map; names it does not know do not resolve.
type fakeResolver map[string][]netip.Addr

var _ Resolver = fakeResolver(nil)

func (r fakeResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	if network != "ip" {
		return nil, fmt.Errorf("network %q", network)
	}
	a, ok := r[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return a, nil
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

// routeDialer connects only addresses it has a route for, to local
// servers, and records every call.
type routeDialer struct {
	routes map[string]string // "ip:443" → local "127.0.0.1:port"
	calls  atomic.Int32
	mu     sync.Mutex
	dialed []string
}

func (d *routeDialer) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	d.calls.Add(1)
	d.mu.Lock()
	d.dialed = append(d.dialed, address)
	d.mu.Unlock()
	to, ok := d.routes[address]
	if !ok {
		return nil, fmt.Errorf("dial %s: no route in the test", address)
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, to)
}

func (d *routeDialer) seen() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.dialed...)
}

// echoServer echoes every connection on 127.0.0.1.
func echoServer(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// startProxy serves p on 127.0.0.1 until the test ends.
func startProxy(tb testing.TB, cfg Config) (addr string, logs *testenv.LogBuffer, stop func()) {
	tb.Helper()
	logs = &testenv.LogBuffer{}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	p, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					tb.Errorf("Serve: %v", err)
				}
			case <-time.After(10 * time.Second):
				tb.Errorf("Serve did not return after its context ended")
			}
		})
	}
	tb.Cleanup(stop)
	return ln.Addr().String(), logs, stop
}

// rawRequest sends one request line with headers to the proxy and reads
// the response; on 200 the connection is the open tunnel.
func rawRequest(tb testing.TB, proxyAddr, requestLine string, header map[string]string, extra string) (*http.Response, string, net.Conn, *bufio.Reader) {
	tb.Helper()
	c, err := net.DialTimeout("tcp", proxyAddr, 5*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	b.WriteString(requestLine + "\r\n")
	for k, v := range header {
		b.WriteString(k + ": " + v + "\r\n")
	}
	b.WriteString("\r\n" + extra)
	if _, err := io.WriteString(c, b.String()); err != nil {
		tb.Fatal(err)
	}
	br := bufio.NewReader(c)
	method, _, _ := strings.Cut(requestLine, " ")
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		tb.Fatalf("%s: reading the response: %v", requestLine, err)
	}
	var body string
	if resp.StatusCode != http.StatusOK {
		bb, _ := io.ReadAll(resp.Body)
		body = string(bb)
	}
	c.SetDeadline(time.Time{})
	return resp, body, c, br
}

func connectReq(tb testing.TB, proxyAddr, target, auth string) (*http.Response, string, net.Conn, *bufio.Reader) {
	tb.Helper()
	h := map[string]string{"Host": target}
	if auth != "" {
		h["Proxy-Authorization"] = auth
	}
	return rawRequest(tb, proxyAddr, "CONNECT "+target+" HTTP/1.1", h, "")
}

// waitClosed fails unless the peer closes c within d.
func waitClosed(tb testing.TB, c net.Conn, br *bufio.Reader, d time.Duration) time.Duration {
	tb.Helper()
	start := time.Now()
	c.SetReadDeadline(start.Add(d))
	_, err := io.Copy(io.Discard, br)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		tb.Fatalf("tunnel still open after %v", d)
	}
	return time.Since(start)
}

// waitLog polls logs until it contains want.
func waitLog(tb testing.TB, logs *testenv.LogBuffer, want string) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			tb.Fatalf("log never contained %q:\n%s", want, logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
