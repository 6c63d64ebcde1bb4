// Command quavon-dev-github is the GitHub emulator of `quavon dev` as a
// server of its own (internal/devstack/devgithub over internal/githubfake):
// a seeded organisation, both apps installed, a demo repository. For
// development only: it is never part of an install.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/quavon/quavon/internal/devstack/devgithub"
)

func main() {
	fs := flag.NewFlagSet("quavon-dev-github", flag.ExitOnError)
	stateDir := fs.String("state-dir", "", "`DIR` for state.json and the apps' secrets (created 0700)")
	webhookBase := fs.String("webhook-base", "", "the api's webhook `URL` root; the apps post to /review and /fixer below it")
	dashboard := fs.String("dashboard-url", "", "the dashboard's `URL`: the review app's OAuth callback is URL/auth/callback")
	control := fs.String("control-listen", "127.0.0.1:0", "`ADDR` of the scenario endpoints")
	fs.Parse(os.Args[1:])
	if *stateDir == "" || *webhookBase == "" {
		fmt.Fprintln(os.Stderr, "quavon-dev-github: --state-dir and --webhook-base are required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := devgithub.Serve(ctx, log, *stateDir, *webhookBase, *dashboard, *control); err != nil {
		fmt.Fprintln(os.Stderr, "quavon-dev-github:", err)
		os.Exit(1)
	}
}
