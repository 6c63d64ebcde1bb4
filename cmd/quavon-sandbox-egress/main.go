// Command quavon-sandbox-egress is the allowlisting CONNECT proxy of the
// sandbox setup step (spec §3 "Egress", threat SB3; see internal/egress),
// assembled by internal/app/egress.
//
// It reads per-job grants from Valkey as the read-only ACL user egress and
// listens on QUAVON_EGRESS_LISTEN (default :3128) on the internal network
// quavon-sandbox-egress. It holds that Valkey password and nothing else: no
// database, no tokens, no model keys, no Docker socket.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	egressapp "github.com/quavon/quavon/internal/app/egress"
	"github.com/quavon/quavon/internal/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Environ(), os.Stderr)
	stop()
	if err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "quavon-sandbox-egress:", err)
		os.Exit(1)
	}
}

// run builds the proxy from environ and serves until ctx ends.
func run(ctx context.Context, environ []string, logOut io.Writer) error {
	log := slog.New(slog.NewJSONHandler(logOut, nil))
	cfg, err := config.LoadEgress(environ)
	if err != nil {
		return err
	}
	s, err := egressapp.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Run(ctx)
}
