package egress

import (
	"github.com/quavon/quavon/internal/sandbox"

	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/testenv"
)

// fixture is a proxy with in-memory grants, a fake resolver and a dialer
// that reaches only a local echo server.
type fixture struct {
	addr   string
	token  string
	grants *fakeGrants
	dialer *routeDialer
	logs   *testenv.LogBuffer
	stop   func()
}

func newFixture(t *testing.T, mod func(*Config)) *fixture {
	t.Helper()
	echo := echoServer(t)
	f := &fixture{
		token:  newToken(t),
		grants: &fakeGrants{},
		dialer: &routeDialer{routes: map[string]string{publicLabel + ":443": echo}},
	}
	f.grants.set(f.token, sandbox.EgressGrant{JobID: "job-00000001", Hosts: []string{"registry.quavon.test", "evil.quavon.test", "mixed.quavon.test", "unreachable.quavon.test", "empty.quavon.test", "gone.quavon.test"}, NotAfter: time.Now().Add(time.Hour)})
	cfg := Config{
		Grants: f.grants,
		Resolver: fakeResolver{
			"registry.quavon.test":    addrs(publicLabel),
			"evil.quavon.test":        addrs("127.0.0.1", "10.1.2.3", "169.254.169.254", "::ffff:127.0.0.1", "fe80::1%eth0", "64:ff9b::a9fe:a9fe"),
			"mixed.quavon.test":       addrs("127.0.0.1", "93.184.215.1", "::ffff:10.0.0.1", publicLabel),
			"unreachable.quavon.test": addrs("93.184.215.1"),
			"empty.quavon.test":       nil,
		},
		Dial: f.dialer.Dial,
	}
	if mod != nil {
		mod(&cfg)
	}
	f.addr, f.logs, f.stop = startProxy(t, cfg)
	return f
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	expired := newToken(t)
	f.grants.set(expired, sandbox.EgressGrant{JobID: "job-00000002", Hosts: []string{"registry.quavon.test"}, NotAfter: time.Now().Add(-time.Second)})
	auth := basic("job", f.token)
	cases := []struct {
		name, line string
		header     map[string]string
		status     int
		reason     string
	}{
		{"plain http proxying", "GET http://registry.quavon.test/ HTTP/1.1", map[string]string{"Host": "registry.quavon.test", "Proxy-Authorization": auth}, 405, "only CONNECT"},
		{"POST", "POST http://registry.quavon.test/ HTTP/1.1", map[string]string{"Host": "registry.quavon.test", "Proxy-Authorization": auth, "Content-Length": "0"}, 405, "only CONNECT"},
		{"origin-form GET", "GET / HTTP/1.1", map[string]string{"Host": "registry.quavon.test"}, 405, "only CONNECT"},
		{"no credentials", "CONNECT registry.quavon.test:443 HTTP/1.1", nil, 407, "credentials required"},
		{"bearer", "CONNECT registry.quavon.test:443 HTTP/1.1", map[string]string{"Proxy-Authorization": "Bearer " + f.token}, 407, "malformed proxy credentials"},
		{"not base64", "CONNECT registry.quavon.test:443 HTTP/1.1", map[string]string{"Proxy-Authorization": "Basic job:" + f.token}, 407, "malformed proxy credentials"},
		{"no colon", "CONNECT registry.quavon.test:443 HTTP/1.1", map[string]string{"Proxy-Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(f.token))}, 407, "malformed proxy credentials"},
		{"wrong user", "CONNECT registry.quavon.test:443 HTTP/1.1", map[string]string{"Proxy-Authorization": basic("root", f.token)}, 407, "wrong proxy user"},
		{"token upper case", "CONNECT registry.quavon.test:443 HTTP/1.1", map[string]string{"Proxy-Authorization": basic("job", strings.ToUpper(f.token))}, 407, "malformed token"},
		{"token short", "CONNECT registry.quavon.test:443 HTTP/1.1", map[string]string{"Proxy-Authorization": basic("job", f.token[:63])}, 407, "malformed token"},
		{"unknown token", "CONNECT registry.quavon.test:443 HTTP/1.1", map[string]string{"Proxy-Authorization": basic("job", newToken(t))}, 407, "unknown token"},
		{"expired", "CONNECT registry.quavon.test:443 HTTP/1.1", map[string]string{"Proxy-Authorization": basic("job", expired)}, 407, "grant expired"},
		{"ip literal", "CONNECT 127.0.0.1:443 HTTP/1.1", map[string]string{"Proxy-Authorization": auth}, 403, "ip literal"},
		{"decimal ip", "CONNECT 2130706433:443 HTTP/1.1", map[string]string{"Proxy-Authorization": auth}, 403, "ip literal"},
		{"ipv6 literal", "CONNECT [::ffff:127.0.0.1]:443 HTTP/1.1", map[string]string{"Proxy-Authorization": auth}, 403, "ip literal"},
		{"zoned ipv6", "CONNECT [fe80::1%25eth0]:443 HTTP/1.1", map[string]string{"Proxy-Authorization": auth}, 403, "ip literal"},
		{"port 80", "CONNECT registry.quavon.test:80 HTTP/1.1", map[string]string{"Proxy-Authorization": auth}, 403, "port not allowed"},
		{"trailing dot", "CONNECT registry.quavon.test.:443 HTTP/1.1", map[string]string{"Proxy-Authorization": auth}, 403, "trailing dot"},
		{"userinfo", "CONNECT job:x@registry.quavon.test:443 HTTP/1.1", map[string]string{"Proxy-Authorization": auth}, 403, "malformed target"},
		{"not granted", "CONNECT other.quavon.test:443 HTTP/1.1", map[string]string{"Proxy-Authorization": auth}, 403, "host not granted: other.quavon.test"},
		{"suffix of a grant", "CONNECT quavon.test:443 HTTP/1.1", map[string]string{"Proxy-Authorization": auth}, 403, "host not granted"},
		{"only refused addresses", "CONNECT evil.quavon.test:443 HTTP/1.1", map[string]string{"Proxy-Authorization": auth}, 403,
			"no allowed address: 127.0.0.1 loopback, 10.1.2.3 private, 169.254.169.254 metadata, ::ffff:127.0.0.1 loopback, fe80::1%eth0 zone, 64:ff9b::a9fe:a9fe 64:ff9b::/96 of metadata"},
		{"does not resolve", "CONNECT gone.quavon.test:443 HTTP/1.1", map[string]string{"Proxy-Authorization": auth}, 502, "resolve failed"},
		{"no addresses", "CONNECT empty.quavon.test:443 HTTP/1.1", map[string]string{"Proxy-Authorization": auth}, 502, "resolve failed: no addresses"},
		{"dial fails", "CONNECT unreachable.quavon.test:443 HTTP/1.1", map[string]string{"Proxy-Authorization": auth}, 502, "dial failed"},
	}
	for _, c := range cases {
		resp, body, _, _ := rawRequest(t, f.addr, c.line, c.header, "")
		if resp.StatusCode != c.status || !strings.HasPrefix(body, "quavon-sandbox-egress: ") || !strings.Contains(body, c.reason) ||
			strings.Count(body, "\n") != 1 || !strings.HasSuffix(body, "\n") {
			t.Errorf("%s: %d %q, want %d with %q", c.name, resp.StatusCode, body, c.status, c.reason)
		}
		if !resp.Close {
			t.Errorf("%s: connection kept open after a refusal", c.name)
		}
		if got := resp.Header.Get("Proxy-Authenticate"); (c.status == 407) != (got == `Basic realm="quavon-sandbox-egress"`) {
			t.Errorf("%s: Proxy-Authenticate %q", c.name, got)
		}
		if c.status == 405 && resp.Header.Get("Allow") != "CONNECT" {
			t.Errorf("%s: Allow %q", c.name, resp.Header.Get("Allow"))
		}
	}
	// Only the two reachable-looking names were ever dialled.
	for _, a := range f.dialer.seen() {
		if a != "93.184.215.1:443" {
			t.Errorf("dialled %s", a)
		}
	}
	f.stop()
	if n := strings.Count(f.logs.String(), `"msg":"egress decision"`); n != len(cases) {
		t.Errorf("%d decisions logged for %d requests:\n%s", n, len(cases), f.logs.String())
	}
}

func TestStoreUnavailable(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	f.grants.fail(errors.New("connection refused"))
	resp, body, _, _ := connectReq(t, f.addr, "registry.quavon.test:443", basic("job", f.token))
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "grant store unavailable") {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	f.grants.fail(sandbox.ErrInvalidEgressGrant)
	resp, body, _, _ = connectReq(t, f.addr, "registry.quavon.test:443", basic("job", f.token))
	if resp.StatusCode != http.StatusProxyAuthRequired || !strings.Contains(body, "invalid grant") {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
}

// TestTunnel: bytes flow both ways, including those sent in the same
// packet as the CONNECT; the dialer sees only the allowed addresses, in
// order, as the checked IP, never the name.
func TestTunnel(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	h := map[string]string{"Host": "mixed.quavon.test:443", "Proxy-Authorization": basic("job", f.token)}
	resp, body, c, br := rawRequest(t, f.addr, "CONNECT mixed.quavon.test:443 HTTP/1.1", h, "early bytes|")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	io.WriteString(c, "later bytes")
	got := make([]byte, len("early bytes|later bytes"))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(br, got); err != nil || string(got) != "early bytes|later bytes" {
		t.Fatalf("echo %q, %v", got, err)
	}
	if seen := strings.Join(f.dialer.seen(), " "); seen != "93.184.215.1:443 "+publicLabel+":443" {
		t.Fatalf("dialled %s", seen)
	}
	c.Close()
	waitLog(t, f.logs, `"reason":"closed"`)
	var allow map[string]any
	for _, l := range strings.Split(f.logs.String(), "\n") {
		if strings.Contains(l, `"decision":"allow"`) {
			json.Unmarshal([]byte(l), &allow)
		}
	}
	if allow["job_id"] != "job-00000001" || allow["host"] != "mixed.quavon.test" || allow["addr"] != publicLabel+":443" ||
		allow["reason"] != "granted" || allow["status"] != float64(200) {
		t.Fatalf("allow decision logged as %v", allow)
	}
}

// TestTunnelEnds: each reason to close an open tunnel closes it.
func TestTunnelEnds(t *testing.T) {
	t.Parallel()
	fast := func(c *Config) { c.RecheckInterval = 20 * time.Millisecond }
	cases := []struct {
		name   string
		mod    func(*Config)
		act    func(f *fixture)
		reason string
	}{
		{"revoked", fast, func(f *fixture) { f.grants.remove(f.token) }, "grant revoked"},
		{"store fails", fast, func(f *fixture) { f.grants.fail(errors.New("down")) }, "grant check failed"},
		{"host removed", fast, func(f *fixture) {
			f.grants.set(f.token, sandbox.EgressGrant{JobID: "job-00000001", Hosts: []string{"other.quavon.test"}, NotAfter: time.Now().Add(time.Hour)})
		}, "grant changed"},
		{"shortened", fast, func(f *fixture) {
			f.grants.set(f.token, sandbox.EgressGrant{JobID: "job-00000001", Hosts: []string{"registry.quavon.test"}, NotAfter: time.Now().Add(-time.Second)})
		}, "grant expired"},
		{"not after", func(c *Config) { c.RecheckInterval = time.Hour }, func(f *fixture) {
			// The grant looks valid to the recheck; only the lifetime cap
			// can end this tunnel.
			f.grants.set(f.token, sandbox.EgressGrant{JobID: "job-00000001", Hosts: []string{"registry.quavon.test"}, NotAfter: time.Now().Add(200 * time.Millisecond)})
		}, "grant expired"},
		{"idle", func(c *Config) { c.RecheckInterval = 20 * time.Millisecond; c.IdleTimeout = 200 * time.Millisecond }, nil, "idle timeout"},
		{"shutdown", func(c *Config) { c.RecheckInterval = time.Hour }, func(f *fixture) { f.stop() }, "shutdown"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, c.mod)
			if c.name == "not after" {
				c.act(f)
				c.act = nil
			}
			resp, body, conn, br := connectReq(t, f.addr, "registry.quavon.test:443", basic("job", f.token))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %q", resp.StatusCode, body)
			}
			io.WriteString(conn, "ping")
			buf := make([]byte, 4)
			if _, err := io.ReadFull(br, buf); err != nil {
				t.Fatal(err)
			}
			if c.act != nil {
				c.act(f)
			}
			waitClosed(t, conn, br, 3*time.Second)
			waitLog(t, f.logs, `"reason":"`+c.reason+`"`)
		})
	}
}

// TestLogsNeverHoldToken: whatever a client sends, including its own token
// in the target, the log holds neither the token nor its header.
func TestLogsNeverHoldToken(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	auth := basic("job", f.token)
	upper := basic("job", strings.ToUpper(f.token))
	for _, target := range []string{
		"registry.quavon.test:443", f.token + ".quavon.test:443", f.token + ":443", "x." + f.token + ":443",
		"job:" + f.token + "@registry.quavon.test:443", "[::1]:443", "evil.quavon.test:443",
	} {
		for _, a := range []string{auth, upper, basic("root", f.token), "Basic " + f.token, ""} {
			resp, _, c, _ := connectReq(t, f.addr, target, a)
			if resp.StatusCode == http.StatusOK {
				c.Close()
			}
		}
	}
	rawRequest(t, f.addr, "GET http://job:"+f.token+"@registry.quavon.test/"+f.token+" HTTP/1.1", map[string]string{"Host": "registry.quavon.test", "Proxy-Authorization": auth}, "")
	f.stop()
	logs := f.logs.String()
	for _, secret := range []string{f.token[:16], f.token[48:], strings.ToUpper(f.token[:16]), strings.TrimPrefix(auth, "Basic ")[:16], strings.TrimPrefix(upper, "Basic ")[:16]} {
		if strings.Contains(logs, secret) {
			t.Fatalf("log holds a secret:\n%s", logs)
		}
	}
	if !strings.Contains(logs, `"decision":"allow"`) || !strings.Contains(logs, `"reason":"malformed token"`) ||
		!strings.Contains(logs, `"reason":"malformed target: want a fully qualified host name"`) {
		t.Fatalf("the requests were not all made:\n%s", logs)
	}
}

func TestNewRefusesNonsense(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.DiscardHandler)
	for _, cfg := range []Config{
		{},
		{Grants: &fakeGrants{}},
		{Log: log},
		{Grants: &fakeGrants{}, Log: log, IdleTimeout: -1},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

// TestDefaultDialerRefusesForbidden: even the default dialer refuses a
// forbidden address on its own, before connecting.
func TestDefaultDialerRefusesForbidden(t *testing.T) {
	t.Parallel()
	p, err := New(Config{Grants: &fakeGrants{}, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	echo := echoServer(t)
	_, err = p.cfg.Dial(context.Background(), "tcp", echo)
	if err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("default dialer to %s: %v", echo, err)
	}
	if refuseForbidden(context.Background(), "tcp", netip.MustParseAddrPort(publicLabel+":443").String(), nil) != nil {
		t.Fatal("public address refused")
	}
}
