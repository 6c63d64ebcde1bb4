package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/quavon/quavon/internal/github"
	"github.com/quavon/quavon/internal/tokenbroker"
)

type brokerCredentialOptions struct {
	env  *env
	Role string
	Sets []string
	Out  string
}

func newBrokerCmd(e *env, runF func(context.Context, *brokerCredentialOptions) error) *cobra.Command {
	if runF == nil {
		runF = runBrokerCredential
	}
	cmd := &cobra.Command{Use: "broker", Short: "The token broker", Args: cobra.ArbitraryArgs, RunE: groupRunE}
	o := &brokerCredentialOptions{env: e}
	cred := &cobra.Command{
		Use:   "credential --role ROLE --out FILE",
		Short: "Create a broker credential and print its callers-file line",
		Long: `Create a random credential for a caller of the token broker, write it to FILE
(mode 0600: the caller's QUAVON_BROKER_CREDENTIAL_FILE) and print the line to add
to the broker's QUAVON_BROKER_CALLERS_FILE: the role, the token sets it may have
and the credential's SHA-256 (the broker never holds the credential itself).

Roles and the widest sets each may have:
  api        review-read
  worker     review-read
  publisher  review-read, review-write, code-scanning, fixer`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Role == "" || o.Out == "" {
				return usageError(cmd, "--role and --out are required")
			}
			return runF(cmd.Context(), o)
		},
	}
	cred.Flags().StringVar(&o.Role, "role", "", "caller `role`: api, worker or publisher")
	cred.Flags().StringSliceVar(&o.Sets, "sets", nil, "token `sets` to grant (default: all the role may have)")
	cred.Flags().StringVar(&o.Out, "out", "", "write the credential to `FILE` (created, mode 0600; never overwritten)")
	cmd.AddCommand(cred)
	return cmd
}

func runBrokerCredential(_ context.Context, o *brokerCredentialOptions) error {
	sets := make([]github.TokenSet, len(o.Sets))
	for i, s := range o.Sets {
		sets[i] = github.TokenSet(s)
	}
	credential, line, err := tokenbroker.NewCredential(tokenbroker.Role(o.Role), sets)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(o.Out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(f, credential); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(o.env.stderr, "quavon: wrote the %s credential to %s; add this line to the broker's callers file:\n", o.Role, o.Out)
	_, err = fmt.Fprintln(o.env.stdout, line)
	return err
}
