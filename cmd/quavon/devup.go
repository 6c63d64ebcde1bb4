package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/quavon/quavon/internal/devstack"
	"github.com/quavon/quavon/internal/doctor"
)

type devUpOptions struct {
	env           *env
	WorkDir       string
	BinDir        string
	ACLTemplate   string
	NoSandbox     bool
	ImagesLock    string
	Runsc         string
	RunscPlatform string
	StateDir      string
	Scenario      string
	Exit          bool
	Approve       bool
	WaitReview    time.Duration
}

// addDevUp makes `quavon dev` (without a subcommand) run the whole system.
func addDevUp(cmd *cobra.Command, e *env, runF func(context.Context, *devUpOptions) error) {
	if runF == nil {
		runF = runDevUp
	}
	o := &devUpOptions{env: e}
	cmd.Use = "dev"
	cmd.Short = "Run the whole of Quavon on this machine against the GitHub emulator"
	cmd.Long = `Run the whole system on this machine, each part a process of its own with its
own credentials: a throwaway PostgreSQL cluster (migrated; one login role per
service, members of quavon_app only), Valkey with the ACL users, Docker with runsc,
the sandbox runner (docker-runsc) and egress proxy, the token broker, api (with the
dashboard), worker and publisher, and the GitHub emulator (quavon-dev-github) with
the organisation quavon-demo, the repository quavon-demo/demo-app and both apps
installed. It prints the dashboard's and the emulator's URLs; SIGINT (Ctrl-C) or
SIGTERM stops everything. Logs and secrets stay under --work-dir. Needs root.

--scenario demo then opens a pull request with planted problems and labels an issue
with quavon:fix, and reports what Quavon did with each: the review and check run
posted, and the fix run's patch awaiting approval in the dashboard (sign in there as
demo-admin). With --approve the scenario approves that patch itself through the
dashboard, as demo-admin (the same form, hashes, live permission check and audit entry
as a click on "Approve this exact patch"), and waits for the publisher's draft pull
request on the emulator.`
	cmd.Args = func(c *cobra.Command, args []string) error { return nil }
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if len(args) > 0 {
			return groupRunE(c, args)
		}
		if o.WorkDir == "" {
			return usageError(c, "--work-dir is required")
		}
		if o.Scenario != "" && o.Scenario != "demo" {
			return usageError(c, "--scenario: only demo exists")
		}
		if o.Approve && o.Scenario == "" {
			return usageError(c, "--approve needs --scenario demo")
		}
		return runF(c.Context(), o)
	}
	f := cmd.Flags()
	f.StringVar(&o.WorkDir, "work-dir", "", "`DIR` for data, secrets and logs (kept after the stop)")
	f.StringVar(&o.BinDir, "bin-dir", "bin", "`DIR` of the built binaries (quavon-api, quavon-worker, ..., quavon-dev-github)")
	f.StringVar(&o.ACLTemplate, "acl-template", "deploy/valkey/users.acl.tmpl", "the Valkey ACL `template`")
	f.BoolVar(&o.NoSandbox, "no-sandbox", false, "leave out Docker, the runner and the egress proxy")
	f.StringVar(&o.ImagesLock, "images-lock", "/var/lib/quavon/images.lock.json", "the sandbox image `lockfile` (deploy/images/build)")
	f.StringVar(&o.Runsc, "runsc", "/usr/local/bin/runsc", "the runsc `binary` to register")
	f.StringVar(&o.RunscPlatform, "runsc-platform", "systrap", "runsc's `platform` (systrap or ptrace)")
	f.StringVar(&o.StateDir, "state-dir", "/run/quavon-test", "`DIR` of the Docker locks shared with scripts/test")
	f.StringVar(&o.Scenario, "scenario", "", "run a scripted `scenario` once everything is up: demo")
	f.BoolVar(&o.Exit, "exit", false, "stop after the scenario instead of running until interrupted")
	f.BoolVar(&o.Approve, "approve", false, "approve the demo's fix through the dashboard as demo-admin and wait for the draft pull request")
	f.DurationVar(&o.WaitReview, "wait", 90*time.Second, "how long the scenario waits for each result")
}

func runDevUp(ctx context.Context, o *devUpOptions) error {
	log := func(format string, args ...any) { fmt.Fprintf(o.env.stderr, "==> "+format+"\n", args...) }
	work, err := filepath.Abs(o.WorkDir)
	if err != nil {
		return err
	}
	bin, err := filepath.Abs(o.BinDir)
	if err != nil {
		return err
	}
	st, err := devstack.Start(ctx, devstack.Options{WorkDir: work, BinDir: bin, ACLTemplate: o.ACLTemplate, Sandbox: !o.NoSandbox,
		ImagesLock: o.ImagesLock, Runsc: o.Runsc, RunscPlatform: o.RunscPlatform, StateDir: o.StateDir, Progress: log})
	if err != nil {
		return err
	}
	defer func() {
		log("stopping")
		if err := st.Stop(); err != nil {
			log("stopping: %v", err)
		}
	}()
	fmt.Fprintf(o.env.stdout, "dashboard:       %s (sign in with GitHub: the emulator signs you in as %s, the instance admin: %s/admin/grants)\n", st.DashboardURL, devstack.DemoAdmin, strings.TrimSuffix(st.DashboardURL, "/"))
	fmt.Fprintf(o.env.stdout, "GitHub emulator: %s (REST; GraphQL at /graphql), repository %s\n", st.GitHub.URL, st.GitHub.Repo)
	fmt.Fprintf(o.env.stdout, "logs:            %s\n", filepath.Join(work, "logs"))
	if o.NoSandbox {
		fmt.Fprintln(o.env.stdout, "sandbox:         left out (--no-sandbox): no runner or egress proxy")
	}
	ds, err := st.Doctor(ctx)
	if err != nil {
		return err
	}
	// Host-wide findings come once, with the services that reported them.
	failed := false
	var order []string
	seen := map[string][]string{}
	for _, d := range ds {
		for _, r := range d.Results {
			if r.Status == doctor.Pass {
				continue
			}
			failed = failed || r.Status == doctor.Fail
			k := fmt.Sprintf("%s %s: %s", r.Status, r.Check, r.Detail)
			if _, ok := seen[k]; !ok {
				order = append(order, k)
			}
			seen[k] = append(seen[k], d.Service)
		}
	}
	for _, k := range order {
		fmt.Fprintf(o.env.stdout, "doctor:          %s (%s)\n", k, strings.Join(seen[k], ", "))
	}
	if failed {
		return errors.New("quavon doctor found a failure in the stack (above)")
	}
	fmt.Fprintf(o.env.stdout, "doctor:          no failure in %d services (quavon doctor --service NAME with each one's environment)\n", len(ds))
	if o.Scenario == "demo" {
		if err := runDemoScenario(ctx, o, st, log); err != nil {
			return err
		}
		if o.Exit {
			return nil
		}
	}
	log("running; interrupt (Ctrl-C) to stop everything")
	return st.Wait(ctx)
}

// runDemoScenario opens the demo pull request and the labelled issue and
// reports what came of each.
func runDemoScenario(ctx context.Context, o *devUpOptions, st *devstack.Stack, log func(string, ...any)) error {
	if err := st.SetDemoPolicy(ctx); err != nil {
		return err
	}
	fmt.Fprintf(o.env.stdout, "policy:          set through the api for %s (scanners and acceptance check on, fix agent with approval on %s)\n", st.GitHub.Repo, devstack.FixLabel)
	var pr struct{ Number int }
	if err := controlJSON(ctx, st, "POST", "/pr", &pr); err != nil {
		return err
	}
	fmt.Fprintf(o.env.stdout, "pull request:    %s/%s/pull/%d opened with planted problems\n", st.GitHub.URL, st.GitHub.Repo, pr.Number)
	var got struct {
		Reviews   []json.RawMessage `json:"reviews"`
		CheckRuns []json.RawMessage `json:"check_runs"`
	}
	deadline := time.Now().Add(o.WaitReview)
	for {
		if err := controlJSON(ctx, st, "GET", fmt.Sprintf("/reviews?pr=%d", pr.Number), &got); err != nil {
			return err
		}
		if len(got.Reviews) > 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	if len(got.Reviews) == 0 {
		fmt.Fprintf(o.env.stdout, "review:          none posted within %s (see %s and %s)\n",
			o.WaitReview, filepath.Join(o.WorkDir, "logs", "quavon-worker.log"), filepath.Join(o.WorkDir, "logs", "quavon-publisher.log"))
	} else {
		fmt.Fprintf(o.env.stdout, "review:          %d review(s) and %d check run(s) posted on the pull request\n", len(got.Reviews), len(got.CheckRuns))
	}
	var issue struct{ Number int }
	if err := controlJSON(ctx, st, "POST", "/issue", &issue); err != nil {
		return err
	}
	fmt.Fprintf(o.env.stdout, "issue:           %s/%s/issues/%d labelled %s\n", st.GitHub.URL, st.GitHub.Repo, issue.Number, devstack.FixLabel)
	state, err := st.FixRunState(ctx, issue.Number, o.WaitReview)
	switch {
	case err != nil && o.Approve:
		return fmt.Errorf("--approve: %w", err)
	case err != nil:
		fmt.Fprintf(o.env.stdout, "fix run:         %v\n", err)
		return nil
	case state != "awaiting_approval":
		fmt.Fprintf(o.env.stdout, "fix run:         %s\n", state)
		if o.Approve {
			return fmt.Errorf("--approve: the fix run is %s, not awaiting approval (see %s)", state, filepath.Join(o.WorkDir, "logs", "quavon-worker.log"))
		}
		return nil
	case !o.Approve:
		fmt.Fprintf(o.env.stdout, "fix run:         awaiting approval: the patch is on the dashboard, %sfixes (sign in as %s; --approve approves it for you)\n",
			st.DashboardURL, devstack.DemoAdmin)
		return nil
	}
	fmt.Fprintf(o.env.stdout, "fix run:         awaiting approval\n")
	a, err := st.ApproveFix(ctx, issue.Number)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.env.stdout, "approval:        %sfixes/%s approved through the dashboard as %s (patch sha256 %s, base %s); the run is %s\n",
		st.DashboardURL, a.FixRunID, devstack.DemoAdmin, a.PatchSHA256, a.BaseSHA, a.Status)
	fixPR, err := st.WaitFixPR(ctx, issue.Number, a.FixRunID, o.WaitReview)
	if err != nil {
		fmt.Fprintf(o.env.stdout, "fix PR:          %v\n", err)
		return err
	}
	draft := "draft"
	if !fixPR.Draft {
		draft = "NOT a draft"
	}
	fmt.Fprintf(o.env.stdout, "fix PR:          %s/%s/pull/%d (%s, %s → %s, by %s, %d file(s) changed)\n",
		st.GitHub.URL, st.GitHub.Repo, fixPR.Number, draft, fixPR.Head, fixPR.Base, fixPR.Author, len(fixPR.Files))
	return nil
}

func controlJSON(ctx context.Context, st *devstack.Stack, method, path string, v any) error {
	f, err := os.CreateTemp("", "quavon-dev-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := st.Control(ctx, method, path, f); err != nil {
		return err
	}
	f.Seek(0, 0)
	return json.NewDecoder(f).Decode(v)
}
