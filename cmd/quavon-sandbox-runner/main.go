// Command quavon-sandbox-runner runs signed sandbox jobs (zone Z3),
// assembled by internal/app/runner.
//
// It pulls jobs from its pool's Valkey stream as the sandbox ACL user,
// verifies each completely, runs it in a gVisor (or, in development only,
// runc) container through the Docker Engine API, a Firecracker microVM or a
// Kubernetes pod with runtimeClassName gvisor, and pushes a signed result.
// It holds the pool key and its Valkey password, nothing else: no database,
// no tokens, no model keys, and it listens on no port.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	runnerapp "github.com/quavon/quavon/internal/app/runner"
	kubeapp "github.com/quavon/quavon/internal/app/runner/kube"
	"github.com/quavon/quavon/internal/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Environ(), os.Stderr)
	stop()
	if err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "quavon-sandbox-runner:", err)
		os.Exit(1)
	}
}

// run builds the runner from environ and serves until ctx ends.
func run(ctx context.Context, environ []string, logOut io.Writer) error {
	log := slog.New(slog.NewJSONHandler(logOut, nil))
	cfg, err := config.LoadRunner(environ)
	if err != nil {
		return err
	}
	openers := runnerapp.DefaultOpeners()
	openers[config.BackendKubeGVisor] = kubeapp.Open
	s, err := runnerapp.New(ctx, cfg, log, openers)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Run(ctx)
}
