// Command quavon is the operator's and developer's CLI, on cobra: each
// command is an options struct and a run function that tests call directly
// (the cli/cli habit), with generated help (`quavon help <command>`) and
// shell completion (`quavon completion bash|zsh|fish|powershell`).
//
//	quavon scan             the deterministic scanners, in the sandbox, over the
//	                        current branch's changes
//	quavon migrate          apply the control plane's database migrations
//	quavon api-token create print a new API token (shown once)
//	quavon keys generate    print a new sandbox pool key
//	quavon keys id          print the ids of the configured sandbox keys
//	quavon broker credential
//	                        create a token-broker credential and its callers line
//	quavon dev              the whole system on this machine against the GitHub
//	                        emulator (--scenario demo: scripts/demo)
//	quavon dev services     PostgreSQL, Valkey and Docker with runsc for the tests
//	quavon doctor           check an install from a process's environment and host
//	quavon llm probe        check that the configured model really calls tools
//	quavon audit verify     prove each tenant's audit hash chain intact
//	quavon audit export     write the audit log as JSON Lines with its hashes
//	quavon fix              the fix agent on a local repository: a validated patch
//
// Further commands (review, eval, github setup)
// arrive with the features they drive.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// env is what every command gets instead of globals: the environment and
// the output streams.
type env struct {
	environ        []string
	stdout, stderr io.Writer
}

// run executes one command line.
func run(ctx context.Context, args, environ []string, stdout, stderr io.Writer) error {
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	root := newRoot(&env{environ: environ, stdout: stdout, stderr: stderr})
	root.SetArgs(args)
	return root.ExecuteContext(ctx)
}

func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:           "quavon",
		Short:         "Quavon's operator and developer CLI",
		Long:          "Quavon reviews pull requests and fixes issues; this is its operator and developer CLI.\nSettings are QUAVON_* environment variables (see docs/configuration.md).",
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.ArbitraryArgs,
		RunE:          groupRunE,
	}
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageError(cmd, err.Error()) })
	root.AddCommand(newScanCmd(e, nil), newMigrateCmd(e, nil), newAPITokenCmd(e, nil), newKeysCmd(e, nil), newBrokerCmd(e, nil),
		newDevCmd(e, nil), newLLMCmd(e, nil), newAuditCmd(e, nil), newAdminCmd(e, nil), newFixCmd(e, nil), newGitHubCmd(e, nil), newReviewCmd(e, nil),
		newEvalCmd(e, nil), newDoctorCmd(e, nil))
	return root
}

// groupRunE is the RunE of a command that only groups others: without a
// known subcommand it is a usage error.
func groupRunE(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return usageError(cmd, "a command is required")
	}
	return usageError(cmd, fmt.Sprintf("unknown command %q", args[0]))
}

// noArgs is cobra.NoArgs as a usage error (exit 2).
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageError(cmd, fmt.Sprintf("%s takes no arguments, got %q", cmd.CommandPath(), args))
	}
	return nil
}

// errUsage marks a command line that could not be understood (exit 2).
var errUsage = errors.New("usage")

type usageErr struct {
	cmd *cobra.Command
	msg string
}

func (e *usageErr) Error() string { return e.msg }
func (e *usageErr) Unwrap() error { return errUsage }

func usageError(cmd *cobra.Command, msg string) error { return &usageErr{cmd: cmd, msg: msg} }

// exitCode reports err on stderr and maps it to the process's exit status:
// 0 success, 2 usage, the code of an *exitStatus (quavon scan's 1 and 3),
// 1 anything else.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ee *exitStatus
	if errors.As(err, &ee) {
		if ee.err != nil && !errors.Is(ee.err, errUsage) {
			fmt.Fprintln(stderr, "quavon:", ee.err)
		}
		if errors.Is(ee.err, errUsage) {
			printUsage(ee.err, stderr)
		}
		return ee.code
	}
	if errors.Is(err, errUsage) {
		printUsage(err, stderr)
		return 2
	}
	fmt.Fprintln(stderr, "quavon:", err)
	return 1
}

func printUsage(err error, stderr io.Writer) {
	var ue *usageErr
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "quavon: %s\n\n", ue.msg)
		ue.cmd.SetOut(stderr)
		_ = ue.cmd.Usage()
	}
}

// exitStatus carries a specific exit status (quavon scan: 1 findings, 2
// errors, 3 incomplete).
type exitStatus struct {
	code int
	err  error
}

func (e *exitStatus) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitStatus) Unwrap() error { return e.err }
