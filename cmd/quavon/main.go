// Command quavon is the operator's and developer's CLI.
//
//	quavon scan            the deterministic scanners, in the sandbox, over the
//	                       current branch's changes (quavon scan -h)
//	quavon migrate         apply the control plane's database migrations
//	quavon api-token create --tenant T --user U --name N
//	                       print a new API token (shown once)
//	quavon keys generate   print a new sandbox pool key (base64, 32 random bytes)
//	quavon keys id         print the ids of the configured sandbox keys
//
// Further subcommands (doctor, sandbox run) arrive with the
// features they drive.
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/sandbox"
)

const usage = `usage: quavon <command>

commands:
  scan            run the deterministic scanners in the sandbox over the
                  current branch's changes (quavon scan -h)
  migrate         apply the database migrations (QUAVON_DATABASE_URL, as a role
                  that may create roles and tables); idempotent, refuses a
                  newer schema
  api-token create --tenant UUID --user UUID --name NAME [--expires-in 2160h]
                  print a new API token for the user (shown once; only its
                  SHA-256 is stored)
  keys generate   print a new sandbox pool key: put it in the file named by
                  QUAVON_SANDBOX_SIGNING_KEY_FILE (mode 0600)
  keys id         print the ids of the keys in QUAVON_SANDBOX_SIGNING_KEY_FILE
                  and QUAVON_SANDBOX_PREVIOUS_KEYS_FILE
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	stop()
	if err != nil {
		var ee *scanExit
		if errors.As(err, &ee) {
			if ee.err != nil && !errors.Is(ee.err, errUsage) {
				fmt.Fprintln(os.Stderr, "quavon:", ee.err)
			}
			os.Exit(ee.code)
		}
		if errors.Is(err, errUsage) {
			fmt.Fprint(os.Stderr, usage)
			os.Exit(2)
		}
		fmt.Fprintln(os.Stderr, "quavon:", err)
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	if len(args) >= 1 && args[0] == "scan" {
		return runScan(ctx, args[1:], environ, stdout, stderr)
	}
	if len(args) >= 2 && args[0] == "api-token" && args[1] == "create" {
		return runTokenCreate(ctx, args[2:], environ, stdout, stderr)
	}
	if len(args) == 1 && args[0] == "migrate" {
		return runMigrate(ctx, environ, stdout)
	}
	if len(args) == 2 && args[0] == "keys" {
		switch args[1] {
		case "generate":
			k := make([]byte, sandbox.MinKeyBytes)
			rand.Read(k)
			_, err := fmt.Fprintln(stdout, base64.StdEncoding.EncodeToString(k))
			return err
		case "id":
			cfg, err := config.Load(environ)
			if err != nil {
				return err
			}
			ring, err := cfg.SandboxKeys()
			if err != nil {
				return err
			}
			for i, id := range ring.IDs() {
				role := "previous (verify only)"
				if i == 0 {
					role = "current"
				}
				fmt.Fprintf(stdout, "%s\t%s\n", id, role)
			}
			return nil
		}
	}
	if len(args) == 1 && (args[0] == "help" || args[0] == "-h" || args[0] == "--help") {
		_, err := fmt.Fprint(stdout, usage)
		return err
	}
	return errUsage
}
