// Package egress is the one assembly of quavon-sandbox-egress: the pool's
// grants in Valkey (read-only user egress) and the CONNECT proxy on its
// listener.
package egress

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/valkey-io/valkey-go"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/egress"
	"github.com/quavon/quavon/internal/sandbox/valkeyq"
	qvalkey "github.com/quavon/quavon/internal/valkey"
)

// ValkeyUser is the proxy's ACL user (read-only on the grant keys).
const ValkeyUser = "egress"

// Service is quavon-sandbox-egress.
type Service struct {
	vk    valkey.Client
	ln    net.Listener
	proxy *egress.Proxy
}

// New connects to Valkey and listens.
func New(ctx context.Context, cfg config.EgressConfig, log *slog.Logger) (*Service, error) {
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	user := cfg.Valkey.User
	if user == "" {
		user = ValkeyUser
	} else if user != ValkeyUser {
		log.Warn("Valkey user is not egress: the proxy then holds more rights than it needs",
			slog.String("valkey_user", user))
	}
	names, err := valkeyq.NamesFor(cfg.Pool)
	if err != nil {
		return nil, fmt.Errorf("QUAVON_SANDBOX_POOL: %w", err)
	}
	vk, err := qvalkey.Open(ctx, qvalkey.Config{Addr: cfg.Valkey.Addr, Username: user, PasswordFile: cfg.Valkey.PasswordFile})
	if err != nil {
		return nil, err
	}
	proxy, err := egress.New(egress.Config{Grants: valkeyq.NewEgressGrants(vk, names), Log: log})
	if err != nil {
		vk.Close()
		return nil, err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.Listen)
	if err != nil {
		vk.Close()
		return nil, fmt.Errorf("listen %s: %w", cfg.Listen, err)
	}
	log.Info("egress proxy started", slog.String("listen", ln.Addr().String()),
		slog.String("pool", cfg.Pool), slog.String("valkey_user", user))
	return &Service{vk: vk, ln: ln, proxy: proxy}, nil
}

// Addr is the listening address.
func (s *Service) Addr() string { return s.ln.Addr().String() }

// Run serves until ctx ends.
func (s *Service) Run(ctx context.Context) error { return s.proxy.Serve(ctx, s.ln) }

// Close releases Valkey.
func (s *Service) Close() { s.vk.Close() }
