package egress

import (
	"github.com/quavon/quavon/internal/sandbox"

	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// tunnel is one established CONNECT: bytes are copied both ways while the
// proxy keeps checking that it may stay open.
type tunnel struct {
	client, upstream net.Conn
	up, down         atomic.Int64 // bytes client→upstream, upstream→client
	last             atomic.Int64 // time of the last traffic, as nanoseconds since start
}

// runTunnel copies until either side is done or the tunnel must close, and
// returns why it ended. early holds bytes the client sent before the 200.
func (p *Proxy) runTunnel(ctx context.Context, t *tunnel, early []byte, token string, g sandbox.EgressGrant, host string) string {
	start := time.Now()
	touch := func() { t.last.Store(int64(time.Since(start))) }
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if len(early) > 0 {
			touch()
			n, err := t.upstream.Write(early)
			t.up.Add(int64(n))
			if err != nil {
				t.client.Close()
				t.upstream.Close()
				return
			}
		}
		pipe(t.upstream, t.client, &t.up, touch)
	}()
	go func() {
		defer wg.Done()
		pipe(t.client, t.upstream, &t.down, touch)
	}()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()

	expiry := time.NewTimer(g.NotAfter.Sub(p.cfg.Now()))
	defer expiry.Stop()
	tick := time.NewTicker(p.cfg.RecheckInterval)
	defer tick.Stop()
	reason := func() string {
		for {
			select {
			case <-done:
				return "closed"
			case <-ctx.Done():
				return "shutdown"
			case <-expiry.C:
				return "grant expired"
			case <-tick.C:
				if time.Since(start)-time.Duration(t.last.Load()) >= p.cfg.IdleTimeout {
					return "idle timeout"
				}
				if why := p.recheck(ctx, token, g, host); why != "" {
					return why
				}
			}
		}
	}()
	t.client.Close()
	t.upstream.Close()
	<-done
	return reason
}

// recheck re-reads the grant of an open tunnel and says why the tunnel
// must close, or "" when it may stay. It fails closed: a grant that cannot
// be read closes the tunnel too.
func (p *Proxy) recheck(ctx context.Context, token string, g sandbox.EgressGrant, host string) string {
	lctx, cancel := context.WithTimeout(ctx, p.cfg.LookupTimeout)
	defer cancel()
	cur, err := p.cfg.Grants.Lookup(lctx, token)
	switch {
	case errors.Is(err, sandbox.ErrUnknownEgressToken):
		return "grant revoked"
	case ctx.Err() != nil:
		return "shutdown"
	case err != nil:
		return "grant check failed"
	case cur.JobID != g.JobID || !cur.Allows(host):
		return "grant changed"
	case !p.cfg.Now().Before(cur.NotAfter):
		return "grant expired"
	}
	return ""
}

// pipe copies src to dst. At EOF it half-closes dst so the other direction
// can finish (TLS close_notify, HTTP responses after the request); on any
// other end it closes both, which ends the other direction too.
func pipe(dst, src net.Conn, n *atomic.Int64, touch func()) {
	buf := make([]byte, copyBuffer)
	for {
		k, err := src.Read(buf)
		if k > 0 {
			touch()
			w, werr := dst.Write(buf[:k])
			n.Add(int64(w))
			if werr != nil {
				src.Close()
				dst.Close()
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				if cw, ok := dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
					return
				}
			}
			src.Close()
			dst.Close()
			return
		}
	}
}
