package egress

import (
	"github.com/quavon/quavon/internal/sandbox/valkeyq"

	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/testenv"
)

// putGrant stores g under token as the runner does, as the control-plane
// user, and deletes it at cleanup.
func putGrant(tb testing.TB, admin valkey.Client, names valkeyq.Names, token string, g sandbox.EgressGrant) {
	tb.Helper()
	b, err := json.Marshal(g)
	if err != nil {
		tb.Fatal(err)
	}
	key := names.Egress(token)
	ctx := context.Background()
	if err := admin.Do(ctx, admin.B().Set().Key(key).Value(string(b)).ExSeconds(300).Build()).Error(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { admin.Do(context.Background(), admin.B().Del().Key(key).Build()) })
}

func delGrant(tb testing.TB, admin valkey.Client, names valkeyq.Names, token string) {
	tb.Helper()
	if err := admin.Do(context.Background(), admin.B().Del().Key(names.Egress(token)).Build()).Error(); err != nil {
		tb.Fatal(err)
	}
}

// TestIntegrationValkey runs the proxy against real Valkey, reading grants
// as the read-only ACL user egress, in front of a local TLS server that
// stands in for a registry. Nothing leaves loopback: the resolver is
// injected and the dialer routes only publicLabel, to the test server.
//
// The grants live under the default pool's prefix (quavon-sandbox:egress:),
// not testenv.Pool's: that is the only prefix the deployed egress ACL lets
// the proxy read, and that is part of what this test proves. Random tokens
// keep concurrent tests apart.
func TestIntegrationValkey(t *testing.T) {
	t.Parallel()
	admin := testenv.Valkey(t, testenv.UserControlPlane)
	reader := testenv.Valkey(t, testenv.UserEgress)
	names, err := valkeyq.NamesFor(sandbox.DefaultPool)
	if err != nil {
		t.Fatal(err)
	}

	registry := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "registry says hello to "+r.Host)
	}))
	t.Cleanup(registry.Close)
	dialer := &routeDialer{routes: map[string]string{publicLabel + ":443": registry.Listener.Addr().String()}}
	resolver := fakeResolver{
		"registry.quavon.test": addrs(publicLabel),
		"other.quavon.test":    addrs(publicLabel),
		"evil.quavon.test":     addrs("127.0.0.1", "10.0.0.7", "169.254.169.254", "::ffff:127.0.0.1"),
	}
	proxyAddr, logs, _ := startProxy(t, Config{Grants: valkeyq.NewEgressGrants(reader, names), Resolver: resolver, Dial: dialer.Dial})

	token := newToken(t)
	putGrant(t, admin, names, token, sandbox.EgressGrant{JobID: "job-integration", Hosts: []string{"registry.quavon.test", "evil.quavon.test"}, NotAfter: time.Now().Add(5 * time.Minute).UTC()})
	expired := newToken(t)
	putGrant(t, admin, names, expired, sandbox.EgressGrant{JobID: "job-expired", Hosts: []string{"registry.quavon.test"}, NotAfter: time.Now().Add(-time.Second).UTC()})
	auth := basic("job", token)

	// A client configured the way the sandbox is: HTTPS_PROXY with job:token.
	client := func(tok string) *http.Client {
		pool := registry.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			Proxy: http.ProxyURL(&url.URL{Scheme: "http", User: url.UserPassword("job", tok), Host: proxyAddr}),
			// httptest's certificate names example.com, not the test host.
			TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "example.com"},
		}}
	}

	t.Run("allowed host", func(t *testing.T) {
		resp, err := client(token).Get("https://registry.quavon.test/some/package")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || string(body) != "registry says hello to registry.quavon.test" {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		calls := dialer.calls.Load()
		for _, c := range []struct {
			name, target, auth string
			status             int
			reason             string
		}{
			{"other host", "other.quavon.test:443", auth, 403, "host not granted"},
			{"ip literal", "127.0.0.1:443", auth, 403, "ip literal"},
			{"ipv6 literal", "[::1]:443", auth, 403, "ip literal"},
			{"port 80", "registry.quavon.test:80", auth, 403, "port not allowed"},
			{"bad token", "registry.quavon.test:443", basic("job", newToken(t)), 407, "unknown token"},
			{"no token", "registry.quavon.test:443", "", 407, "credentials required"},
			{"expired grant", "registry.quavon.test:443", basic("job", expired), 407, "grant expired"},
			{"only forbidden addresses", "evil.quavon.test:443", auth, 403, "no allowed address: 127.0.0.1 loopback, 10.0.0.7 private, 169.254.169.254 metadata, ::ffff:127.0.0.1 loopback"},
		} {
			resp, body, _, _ := connectReq(t, proxyAddr, c.target, c.auth)
			if resp.StatusCode != c.status || !strings.Contains(body, c.reason) {
				t.Errorf("%s: %d %q, want %d %q", c.name, resp.StatusCode, body, c.status, c.reason)
			}
		}
		if n := dialer.calls.Load(); n != calls {
			t.Errorf("the dialer was called %d times for refused requests", n-calls)
		}
	})

	t.Run("plain http", func(t *testing.T) {
		resp, err := client(token).Get("http://registry.quavon.test/some/package")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(string(body), "only CONNECT") {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
	})

	t.Run("revoked while open, then replayed", func(t *testing.T) {
		tok := newToken(t)
		putGrant(t, admin, names, tok, sandbox.EgressGrant{JobID: "job-revoked", Hosts: []string{"registry.quavon.test"}, NotAfter: time.Now().Add(5 * time.Minute).UTC()})
		resp, body, conn, _ := connectReq(t, proxyAddr, "registry.quavon.test:443", basic("job", tok))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %q", resp.StatusCode, body)
		}
		// The tunnel works: a TLS handshake with the registry through it.
		tc := tls.Client(conn, &tls.Config{RootCAs: registry.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs, ServerName: "example.com"})
		tc.SetDeadline(time.Now().Add(5 * time.Second))
		if err := tc.Handshake(); err != nil {
			t.Fatalf("TLS through the tunnel: %v", err)
		}
		delGrant(t, admin, names, tok)
		tc.SetDeadline(time.Now().Add(3 * time.Second))
		start := time.Now()
		_, err := tc.Read(make([]byte, 1))
		if err == nil || isTimeout(err) {
			t.Fatalf("tunnel still open %v after the grant was deleted: %v", time.Since(start), err)
		}
		if d := time.Since(start); d > 2500*time.Millisecond {
			t.Fatalf("tunnel closed only %v after the grant was deleted", d)
		}
		waitLog(t, logs, `"reason":"grant revoked"`)
		resp, body, _, _ = connectReq(t, proxyAddr, "registry.quavon.test:443", basic("job", tok))
		if resp.StatusCode != http.StatusProxyAuthRequired || !strings.Contains(body, "unknown token") {
			t.Fatalf("replay after deletion: %d %q", resp.StatusCode, body)
		}
	})

	if l := logs.String(); strings.Contains(l, token) || strings.Contains(l, strings.TrimPrefix(auth, "Basic ")) || strings.Contains(l, expired) {
		t.Fatalf("the log holds a token:\n%s", l)
	}
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}
