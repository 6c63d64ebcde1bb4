package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/sandbox"
)

type keysOptions struct {
	env *env
	// generate or id
	action string
}

func newKeysCmd(e *env, runF func(context.Context, *keysOptions) error) *cobra.Command {
	if runF == nil {
		runF = runKeys
	}
	cmd := &cobra.Command{Use: "keys", Short: "Sandbox pool keys", Args: cobra.ArbitraryArgs, RunE: groupRunE}
	for _, c := range []struct{ use, short, long string }{
		{"generate", "Print a new sandbox pool key", "Print a new sandbox pool key (standard base64 of 32 random bytes): put it in the file\nnamed by QUAVON_SANDBOX_SIGNING_KEY_FILE (mode 0600)."},
		{"id", "Print the ids of the configured sandbox keys", "Print the ids of the keys in QUAVON_SANDBOX_SIGNING_KEY_FILE and\nQUAVON_SANDBOX_PREVIOUS_KEYS_FILE, never the keys."},
	} {
		action := c.use
		cmd.AddCommand(&cobra.Command{Use: c.use, Short: c.short, Long: c.long, Args: noArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return runF(cmd.Context(), &keysOptions{env: e, action: action})
			}})
	}
	return cmd
}

func runKeys(_ context.Context, o *keysOptions) error {
	if o.action == "generate" {
		k := make([]byte, sandbox.MinKeyBytes)
		rand.Read(k)
		_, err := fmt.Fprintln(o.env.stdout, base64.StdEncoding.EncodeToString(k))
		return err
	}
	cfg, err := config.LoadKeys(o.env.environ)
	if err != nil {
		return err
	}
	ring, err := sandbox.LoadKeyRing(cfg.SandboxKeys.SigningKeyFile, cfg.SandboxKeys.PreviousKeysFile)
	if err != nil {
		return err
	}
	for i, id := range ring.IDs() {
		role := "previous (verify only)"
		if i == 0 {
			role = "current"
		}
		fmt.Fprintf(o.env.stdout, "%s\t%s\n", id, role)
	}
	return nil
}
