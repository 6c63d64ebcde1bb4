// Command quavon-entry is PID 1 in every sandbox container. It reads the
// authenticated job input (internal/sandbox/frame) from stdin, runs the
// setup and run steps and sends the authenticated output to stdout; see
// internal/sandbox/entry for what it does and guarantees. It takes no
// arguments.
//
// It must be built static and link no network code:
//
//	CGO_ENABLED=0 go build -trimpath ./cmd/quavon-entry
//
// deps_test.go holds it to both.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/quavon/quavon/internal/sandbox/entry"
	"github.com/quavon/quavon/internal/sandbox/entry/vm"
)

func main() {
	// No signal.NotifyContext: as PID 1 the entry program catches every
	// signal itself (entry.Config.PID1), so a step cannot stop it; the
	// runner ends a job by killing the container.
	if err := run(context.Background(), os.Args[1:], os.Environ(), os.Getpid(), os.Stdin, os.Stdout); err != nil {
		// The entry program's own failure only, never a step's output.
		fmt.Fprintln(os.Stderr, "quavon-entry:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args, environ []string, pid int, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 1 && args[0] == "vm" {
		// The init of a Firecracker guest (the kernel passes what follows
		// -- on its command line): the job comes over vsock.
		return vm.Run(ctx)
	}
	if len(args) != 0 {
		return errors.New("takes no arguments: the job comes on stdin (or, as a microVM's init, vm)")
	}
	cfg := entry.DefaultConfig()
	cfg.Env = environ
	cfg.PID1 = pid == 1
	return entry.Run(ctx, cfg, stdin, stdout)
}
