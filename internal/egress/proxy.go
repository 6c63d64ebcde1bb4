package egress

import (
	"github.com/quavon/quavon/internal/sandbox"

	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"time"
)

// GrantStore looks up the grant of a token (valkeyq.EgressGrants in
// production). The proxy needs nothing else from Valkey.
type GrantStore interface {
	Lookup(ctx context.Context, token string) (sandbox.EgressGrant, error)
}

// Resolver resolves names; *net.Resolver implements it.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DialFunc connects to address, always an "ip:port" the proxy checked.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// Defaults of Config.
const (
	DefaultRecheckInterval = time.Second
	DefaultIdleTimeout     = 60 * time.Second
	DefaultResolveTimeout  = 5 * time.Second
	DefaultDialTimeout     = 10 * time.Second
	DefaultLookupTimeout   = 2 * time.Second
)

const (
	// ProxyUser is the only user name a client may authenticate as.
	ProxyUser = "job"
	realm     = `Basic realm="quavon-sandbox-egress"`

	readHeaderTimeout = 10 * time.Second
	maxHeaderBytes    = 16 << 10
	copyBuffer        = 32 << 10
)

// Config of a Proxy. Grants and Log are required; zero durations take the
// defaults above.
type Config struct {
	Grants   GrantStore
	Log      *slog.Logger
	Resolver Resolver         // nil: net.DefaultResolver
	Dial     DialFunc         // nil: a net.Dialer that re-checks each address with Classify
	Now      func() time.Time // nil: time.Now; decides grant expiry

	RecheckInterval time.Duration // how often an open tunnel's grant is re-read
	IdleTimeout     time.Duration // a tunnel without traffic for this long is closed
	ResolveTimeout  time.Duration
	DialTimeout     time.Duration // for all addresses of one name together
	LookupTimeout   time.Duration // one grant GET
}

// Proxy is the egress proxy; it is an http.Handler.
type Proxy struct {
	cfg      Config
	handlers sync.WaitGroup // Serve waits for them, tunnels included
}

// New validates cfg and fills in the defaults.
func New(cfg Config) (*Proxy, error) {
	if cfg.Grants == nil || cfg.Log == nil {
		return nil, errors.New("egress.New: Grants and Log are required")
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Dial == nil {
		d := &net.Dialer{ControlContext: refuseForbidden}
		cfg.Dial = d.DialContext
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{
		{&cfg.RecheckInterval, DefaultRecheckInterval}, {&cfg.IdleTimeout, DefaultIdleTimeout},
		{&cfg.ResolveTimeout, DefaultResolveTimeout}, {&cfg.DialTimeout, DefaultDialTimeout},
		{&cfg.LookupTimeout, DefaultLookupTimeout},
	} {
		if *d.v < 0 {
			return nil, errors.New("egress.New: negative duration")
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	return &Proxy{cfg: cfg}, nil
}

// refuseForbidden is the default dialer's last check on the socket
// address, in case a future change ever dials something unchecked.
func refuseForbidden(_ context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("egress dial %s: %w", address, err)
	}
	if why := Classify(ap.Addr()); why != "" {
		return fmt.Errorf("egress dial %s: refused: %s", address, why)
	}
	return nil
}

// Serve answers on ln until ctx ends, then closes open tunnels and waits
// for them.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           p,
		ReadHeaderTimeout: readHeaderTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		IdleTimeout:       p.cfg.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(p.cfg.Log.Handler(), slog.LevelWarn),
		// Tunnels run inside the handler on hijacked connections, which
		// Shutdown does not track; they end when ctx does.
		BaseContext: func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("egress proxy: %w", err)
	case <-ctx.Done():
	}
	// Every handler's work is bound to ctx and a slow client's headers to
	// readHeaderTimeout, so this does not wait long.
	sctx, cancel := context.WithTimeout(context.Background(), readHeaderTimeout+5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	p.handlers.Wait()
	return err
}

// denial is a refused request: the status the client gets and the reason
// both the client and the log see.
type denial struct {
	status int
	reason string
}

func deny(status int, format string, args ...any) *denial {
	return &denial{status: status, reason: oneLine(fmt.Sprintf(format, args...))}
}

// decision is what is logged about one request.
type decision struct {
	client, jobID, host, addr, token string
}

// ServeHTTP decides one request and, when it is allowed, runs the tunnel
// until it ends.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.handlers.Add(1)
	defer p.handlers.Done()
	ctx := r.Context()
	dec := decision{client: r.RemoteAddr}
	if r.Method != http.MethodConnect {
		p.refuse(w, r, dec, deny(http.StatusMethodNotAllowed, "method %s not allowed: only CONNECT host:443", methodName(r.Method)))
		return
	}
	// The target is parsed first only so that refusals can name the host.
	host, targetErr := ParseTarget(r.RequestURI)
	dec.host = host
	grant, token, d := p.authenticate(ctx, r)
	dec.jobID, dec.token = grant.JobID, token
	if d != nil {
		p.refuse(w, r, dec, d)
		return
	}
	if targetErr != nil {
		p.refuse(w, r, dec, deny(http.StatusForbidden, "%v", targetErr))
		return
	}
	if !grant.Allows(host) {
		p.refuse(w, r, dec, deny(http.StatusForbidden, "host not granted: %s", host))
		return
	}
	upstream, d := p.connect(ctx, host, &dec)
	if d != nil {
		p.refuse(w, r, dec, d)
		return
	}
	client, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		upstream.Close()
		p.refuse(w, r, dec, deny(http.StatusInternalServerError, "cannot take over the connection"))
		return
	}
	p.logDecision(ctx, dec, http.StatusOK, "granted", slog.LevelInfo, "allow")
	t := &tunnel{client: client, upstream: upstream}
	start := time.Now()
	var reason string
	// Clear the server's header deadlines; the tunnel keeps its own time.
	client.SetDeadline(time.Time{})
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		client.Close()
		upstream.Close()
		reason = "client gone"
	} else {
		// Bytes a client sent right after the CONNECT (its TLS
		// ClientHello) may already sit in the server's read buffer.
		early, _ := brw.Reader.Peek(brw.Reader.Buffered())
		reason = p.runTunnel(ctx, t, early, token, grant, host)
	}
	p.cfg.Log.LogAttrs(ctx, slog.LevelInfo, "egress tunnel closed",
		slog.String("job_id", dec.jobID), slog.String("host", redact(dec.host, token)),
		slog.String("reason", reason), slog.Int64("bytes_up", t.up.Load()),
		slog.Int64("bytes_down", t.down.Load()), slog.Duration("duration", time.Since(start)))
}

// authenticate checks the Basic credentials and returns the token's grant.
func (p *Proxy) authenticate(ctx context.Context, r *http.Request) (sandbox.EgressGrant, string, *denial) {
	vals := r.Header.Values("Proxy-Authorization")
	if len(vals) == 0 {
		return sandbox.EgressGrant{}, "", deny(http.StatusProxyAuthRequired, "proxy credentials required")
	}
	bad := deny(http.StatusProxyAuthRequired, "malformed proxy credentials: want Basic job:<token>")
	if len(vals) > 1 {
		return sandbox.EgressGrant{}, "", bad
	}
	scheme, enc, ok := strings.Cut(strings.TrimSpace(vals[0]), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return sandbox.EgressGrant{}, "", bad
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return sandbox.EgressGrant{}, "", bad
	}
	user, token, ok := strings.Cut(string(raw), ":")
	if !ok {
		return sandbox.EgressGrant{}, "", bad
	}
	if user != ProxyUser {
		return sandbox.EgressGrant{}, "", deny(http.StatusProxyAuthRequired, "wrong proxy user: want %s", ProxyUser)
	}
	if !sandbox.ValidEgressToken(token) {
		return sandbox.EgressGrant{}, "", deny(http.StatusProxyAuthRequired, "malformed token")
	}
	lctx, cancel := context.WithTimeout(ctx, p.cfg.LookupTimeout)
	defer cancel()
	g, err := p.cfg.Grants.Lookup(lctx, token)
	switch {
	case errors.Is(err, sandbox.ErrUnknownEgressToken):
		return sandbox.EgressGrant{}, token, deny(http.StatusProxyAuthRequired, "unknown token")
	case errors.Is(err, sandbox.ErrInvalidEgressGrant):
		return sandbox.EgressGrant{}, token, deny(http.StatusProxyAuthRequired, "invalid grant")
	case err != nil:
		return sandbox.EgressGrant{}, token, deny(http.StatusServiceUnavailable, "grant store unavailable")
	case !p.cfg.Now().Before(g.NotAfter):
		return g, token, deny(http.StatusProxyAuthRequired, "grant expired")
	}
	return g, token, nil
}

// connect resolves host, keeps the addresses Classify allows and dials
// them in order.
func (p *Proxy) connect(ctx context.Context, host string, dec *decision) (net.Conn, *denial) {
	rctx, cancel := context.WithTimeout(ctx, p.cfg.ResolveTimeout)
	addrs, err := p.cfg.Resolver.LookupNetIP(rctx, "ip", host)
	cancel()
	if err != nil {
		return nil, deny(http.StatusBadGateway, "resolve failed: %v", err)
	}
	if len(addrs) == 0 {
		return nil, deny(http.StatusBadGateway, "resolve failed: no addresses")
	}
	var allowed []netip.Addr
	var refused []string
	for _, a := range addrs {
		if why := Classify(a); why != "" {
			refused = append(refused, a.String()+" "+why)
		} else {
			allowed = append(allowed, a)
		}
	}
	if len(allowed) == 0 {
		return nil, deny(http.StatusForbidden, "no allowed address: %s", strings.Join(refused, ", "))
	}
	dctx, cancel := context.WithTimeout(ctx, p.cfg.DialTimeout)
	defer cancel()
	deadline, _ := dctx.Deadline()
	var errs []string
	for i, a := range allowed {
		addr := netip.AddrPortFrom(a, Port).String()
		// Share the time left between the addresses left, as net.Dialer
		// does, so one black hole does not starve the rest.
		actx, acancel := context.WithTimeout(dctx, time.Until(deadline)/time.Duration(len(allowed)-i))
		c, err := p.cfg.Dial(actx, "tcp", addr)
		acancel()
		if err == nil {
			dec.addr = addr
			return c, nil
		}
		errs = append(errs, err.Error())
	}
	return nil, deny(http.StatusBadGateway, "dial failed: %s", strings.Join(errs, "; "))
}

func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, dec decision, d *denial) {
	reason := redact(d.reason, dec.token)
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Connection", "close")
	switch d.status {
	case http.StatusProxyAuthRequired:
		h.Set("Proxy-Authenticate", realm)
	case http.StatusMethodNotAllowed:
		h.Set("Allow", http.MethodConnect)
	}
	w.WriteHeader(d.status)
	fmt.Fprintf(w, "quavon-sandbox-egress: %s\n", reason)
	p.logDecision(r.Context(), dec, d.status, reason, slog.LevelWarn, "deny")
}

func (p *Proxy) logDecision(ctx context.Context, dec decision, status int, reason string, level slog.Level, verdict string) {
	attrs := []slog.Attr{slog.String("decision", verdict)}
	if dec.jobID != "" {
		attrs = append(attrs, slog.String("job_id", dec.jobID))
	}
	if dec.host != "" {
		attrs = append(attrs, slog.String("host", redact(dec.host, dec.token)))
	}
	if dec.addr != "" {
		attrs = append(attrs, slog.String("addr", dec.addr))
	}
	attrs = append(attrs, slog.String("reason", redact(reason, dec.token)), slog.Int("status", status), slog.String("client", dec.client))
	p.cfg.Log.LogAttrs(ctx, level, "egress decision", attrs...)
}

// redact removes token from s: a client may well echo its own token into
// the target, and the log must never hold one.
func redact(s, token string) string {
	if token == "" {
		return s
	}
	return strings.ReplaceAll(s, token, "[token]")
}

// oneLine keeps a reason on one line of the response body and the log.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// methodName clips a hostile method name for the response.
func methodName(m string) string {
	if len(m) > 16 {
		return m[:16] + "…"
	}
	return m
}
