// Command quavon-sandbox-egress is the allowlisting CONNECT proxy of the
// sandbox setup step (spec §3 "Egress", threat SB3; see internal/egress).
//
// It reads per-job grants from Valkey as the read-only ACL user egress and
// listens on QUAVON_EGRESS_LISTEN (default :3128) on the internal network
// quavon-sandbox-egress. It holds that Valkey password and nothing else: no
// database, no tokens, no model keys, no Docker socket.
package main

import (
	"github.com/quavon/quavon/internal/sandbox/valkeyq"

	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/egress"
	qvalkey "github.com/quavon/quavon/internal/valkey"
)

// valkeyUser is the ACL user the proxy needs (GET quavon-sandbox:egress:*).
const valkeyUser = "egress"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Environ(), os.Stderr)
	stop()
	if err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "quavon-sandbox-egress:", err)
		os.Exit(1)
	}
}

// run wires the proxy from environ and serves until ctx ends.
func run(ctx context.Context, environ []string, logOut io.Writer) error {
	log := slog.New(slog.NewJSONHandler(logOut, nil))
	cfg, err := config.Load(environ)
	if err != nil {
		return err
	}
	listen := cfg.Egress.Listen
	user := cfg.Valkey.User
	if user == "" {
		user = valkeyUser
	} else if user != valkeyUser {
		log.Warn("Valkey user is not egress: the proxy then holds more rights than it needs",
			slog.String("valkey_user", user))
	}
	names, err := valkeyq.NamesFor(cfg.Sandbox.Pool)
	if err != nil {
		return err
	}
	vk, err := qvalkey.Open(ctx, qvalkey.Config{Addr: cfg.Valkey.Addr, Username: user, PasswordFile: cfg.Valkey.PasswordFile})
	if err != nil {
		return err
	}
	defer vk.Close()
	proxy, err := egress.New(egress.Config{Grants: valkeyq.NewEgressGrants(vk, names), Log: log})
	if err != nil {
		return err
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", listen, err)
	}
	log.Info("egress proxy started", slog.String("listen", ln.Addr().String()),
		slog.String("pool", cfg.Sandbox.Pool), slog.String("valkey_user", user))
	return proxy.Serve(ctx, ln)
}
