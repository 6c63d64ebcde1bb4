package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/doctor"
)

type doctorOptions struct {
	env     *env
	Service string
	JSON    bool
	Proc    string
	Canary  bool
}

func newDoctorCmd(e *env, runF func(context.Context, *doctorOptions) error) *cobra.Command {
	if runF == nil {
		runF = runDoctor
	}
	o := &doctorOptions{env: e}
	cmd := &cobra.Command{
		Use:   "doctor --service NAME",
		Short: "Check an install from a process's environment and host",
		Long: `Check an install with the environment of one of its processes (run it where
that process runs, with its QUAVON_* settings): the process's configuration, the
sandbox backend (docker-runc-insecure fails in production and warns elsewhere;
firecracker fails without a usable KVM device), the runner's placement (fails in
the enterprise edition next to quavon-api or quavon-worker), the Docker socket
(only the runner may reach it), the database and the schema's migrations, Valkey's
ACL user, the token broker and, through it, both GitHub Apps' installations against
the permissions and events Quavon registers them with (api, publisher), the webhook
secrets (api), the clock against GitHub's (api, worker, publisher, broker; 5 s warns,
30 s fails) and each configured model's tool calling with llm.Probe (worker). Each
check is pass, warn or fail with a fix; --json for automation; exit 1 when any fails.

--canary (with --service quavon-worker, on a live install) adds a self-test
that must fail at everything it tries: a signed sandbox job through the
worker's own client builds the escape probe from source in the go image class
(no Go toolchain needed here) and tries the network (canary-network), a fresh
canary in this process's environment and in a 0600 file here, the worker's
secret files and cloud metadata (canary-secrets), and the Docker socket, host
processes, capabilities, read-only mounts and the seccomp deny list
(canary-escape); then the fix agent loop runs in process with a scripted model
that obeys an injected issue (a workflow edit, the repository's secret copied
into a file, an unknown tool) and must be refused (canary-injection).`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Service == "" {
				return usageError(cmd, fmt.Sprintf("--service is required: one of %v", doctor.Services))
			}
			if o.Canary && config.Service(o.Service) != config.ServiceWorker {
				return usageError(cmd, "--canary needs --service quavon-worker: the worker's environment holds the sandbox client")
			}
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVar(&o.Service, "service", "", "the `process` whose environment this is: quavon-api, quavon-worker, quavon-publisher, quavon-sandbox-runner, quavon-sandbox-egress, quavon-token-broker, 'quavon migrate' (the operator's database settings)")
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print the results as JSON")
	cmd.Flags().BoolVar(&o.Canary, "canary", false, "also run the self-test: a sandbox job that tries the network, canary secrets and escapes, and an injection through the fix path (quavon-worker)")
	cmd.Flags().StringVar(&o.Proc, "proc", "/proc", "the proc file system to look for Quavon's processes in")
	return cmd
}

func runDoctor(ctx context.Context, o *doctorOptions) error {
	if o.Canary {
		fmt.Fprintln(o.env.stderr, "quavon doctor: the canary self-test sends a sandbox job (up to 5 min) and runs the fix agent on an injected issue")
	}
	rs := doctor.Run(ctx, doctor.Options{Service: config.Service(o.Service), Environ: o.env.environ, Proc: o.Proc, Canary: o.Canary})
	if o.JSON {
		if err := doctor.WriteJSON(o.env.stdout, rs); err != nil {
			return err
		}
	} else {
		doctor.WriteText(o.env.stdout, rs)
	}
	if doctor.Failed(rs) {
		return &exitStatus{code: 1, err: errors.New("a check failed")}
	}
	return nil
}
