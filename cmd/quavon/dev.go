package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/quavon/quavon/internal/devenv"
)

type devServicesOptions struct {
	env           *env
	EnvFile       string
	WorkDir       string
	ACLTemplate   string
	Runsc         string
	RunscPlatform string
	StateDir      string
	NoDocker      bool
}

func newDevCmd(e *env, runF func(context.Context, *devServicesOptions) error) *cobra.Command {
	if runF == nil {
		runF = runDevServices
	}
	cmd := &cobra.Command{Use: "dev", Short: "Run Quavon's services on this machine, for tests and development", Args: cobra.ArbitraryArgs, RunE: groupRunE}
	o := &devServicesOptions{env: e}
	svc := &cobra.Command{
		Use:   "services --work-dir DIR",
		Short: "Start PostgreSQL, Valkey with Quavon's ACL users and Docker with runsc until interrupted",
		Long: `Start the services the test suite runs against (scripts/test uses this):
a throwaway PostgreSQL 15 cluster, redis-server with Quavon's ACL users and fresh
passwords, and a Docker Engine with runsc registered (a running one that has runsc
is reused; one started here is shared with concurrent runs and stopped by the last).
Once all are up, the QUAVON_TEST_* variables are printed as export lines (and written
to --env-file); the services stop on SIGINT or SIGTERM. Needs root.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.WorkDir == "" {
				return usageError(cmd, "--work-dir is required")
			}
			return runF(cmd.Context(), o)
		},
	}
	f := svc.Flags()
	f.StringVar(&o.EnvFile, "env-file", "", "also write the export lines to `FILE` once every service is up")
	f.StringVar(&o.WorkDir, "work-dir", "", "`DIR` for the clusters' data, logs and passwords (removed by the caller)")
	f.StringVar(&o.ACLTemplate, "acl-template", "deploy/valkey/users.acl.tmpl", "the Valkey ACL `template`")
	f.StringVar(&o.Runsc, "runsc", "/usr/local/bin/runsc", "the runsc `binary` to register")
	f.StringVar(&o.RunscPlatform, "runsc-platform", "systrap", "runsc's `platform` (systrap or ptrace)")
	f.StringVar(&o.StateDir, "state-dir", "/run/quavon-test", "`DIR` of the locks shared with concurrent runs")
	f.BoolVar(&o.NoDocker, "no-docker", false, "start only PostgreSQL and Valkey")
	cmd.AddCommand(svc)
	addDevUp(cmd, e, nil)
	return cmd
}

func runDevServices(ctx context.Context, o *devServicesOptions) (err error) {
	log := func(format string, args ...any) { fmt.Fprintf(o.env.stderr, "==> "+format+"\n", args...) }
	var stops []func() error
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			if serr := stops[i](); serr != nil {
				log("stopping: %v", serr)
			}
		}
	}()
	var env devenv.Env
	if !o.NoDocker {
		d, err := devenv.EnsureDockerd(ctx, devenv.DockerOptions{StateDir: o.StateDir, Runsc: o.Runsc, Platform: o.RunscPlatform,
			WorkDir: filepath.Join(o.WorkDir, "docker")})
		if err != nil {
			return err
		}
		stops = append(stops, d.Release)
		env.RunscPlatform = d.Platform
		log("Docker Engine with runsc (%s); %s", d.Platform, d.HugePages)
	}
	pg, err := devenv.StartPostgres(ctx, filepath.Join(o.WorkDir, "pg"))
	if err != nil {
		return err
	}
	stops = append(stops, pg.Stop)
	env.DatabaseURL = pg.URL
	log("postgres on 127.0.0.1:%d", pg.Port)
	vk, err := devenv.StartValkey(ctx, filepath.Join(o.WorkDir, "valkey"), o.ACLTemplate)
	if err != nil {
		return err
	}
	stops = append(stops, vk.Stop)
	env.ValkeyAddr, env.ValkeySecretsDir = vk.Addr, vk.SecretsDir
	log("redis-server on %s", vk.Addr)
	if o.EnvFile != "" {
		tmp := o.EnvFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(env.Script()), 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, o.EnvFile); err != nil {
			return err
		}
	}
	fmt.Fprint(o.env.stdout, env.Script())
	log("services running; interrupt (SIGINT/SIGTERM) to stop them")
	<-ctx.Done()
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil
	}
	return ctx.Err()
}
