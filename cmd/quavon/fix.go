package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/quavon/quavon/internal/agent"
	scanapp "github.com/quavon/quavon/internal/app/scan"
	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/fix/fixagent"
	"github.com/quavon/quavon/internal/gitrepo"
	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/llm/provider"
	"github.com/quavon/quavon/internal/patch"
	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/sandbox"
	"github.com/quavon/quavon/internal/secret/leaks"
)

const fixLong = `Runs the fix agent on a local repository: the same loop, tools and limits as
on GitHub, on the HEAD commit (never on uncommitted changes). The issue is a
Markdown file (or - for stdin): its first line is the title, the rest the
body. run_tests and run_linter run in the local sandbox (gVisor) with the
commands of --policy (features.fix of a Quavon policy document) or of the
flags, which win; the setup command runs on the unmodified HEAD tree.

The patch, validated as on GitHub (paths, text only, limits, secrets, the
base's blobs), goes to stdout or --out as a unified diff. Steps, sandbox
runs, tokens and cost are printed on stderr. The work tree is never
modified, except with --apply: then the patch is applied with git apply.

The model is the fix feature's (QUAVON_LLM_FIX_* settings, see quavon llm probe).

Exit status: 0 a patch; 1 no patch (the reason is printed); 2 any other error.`

type fixOptions struct {
	env         *env
	Dir         string
	Issue       string
	Out         string
	Apply       bool
	Policy      string
	Setup       string
	Test        string
	Lint        string
	ImageClass  string
	MaxSteps    int
	MaxSandbox  int
	WallClock   time.Duration
	MaxFiles    int
	MaxChanged  int
	RunMaxCost  float64
	RunMaxToken int64

	// model replaces the configured model (tests).
	model llm.Model
}

func newFixCmd(e *env, runF func(context.Context, *fixOptions) error) *cobra.Command {
	if runF == nil {
		runF = runFix
	}
	o := &fixOptions{env: e}
	cmd := &cobra.Command{
		Use:   "fix --issue FILE|- [flags]",
		Short: "Run the fix agent on a local repository and print the validated patch",
		Long:  fixLong,
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.Dir, "dir", "C", ".", "run in `DIR` (a git work tree)")
	f.StringVar(&o.Issue, "issue", "", "the issue: a Markdown `FILE` (title on the first line), or - for stdin")
	f.StringVar(&o.Out, "out", "", "write the patch to `FILE` instead of stdout")
	f.BoolVar(&o.Apply, "apply", false, "apply the validated patch to the work tree with git apply")
	f.StringVar(&o.Policy, "policy", "", "a Quavon policy document (`FILE`, JSON) whose features.fix gives commands, paths and limits")
	f.StringVar(&o.Setup, "setup-command", "", "the setup `command` (runs on the unmodified tree, before the edits)")
	f.StringVar(&o.Test, "test-command", "", "the test `command` behind run_tests")
	f.StringVar(&o.Lint, "lint-command", "", "the lint `command` behind run_linter")
	f.StringVar(&o.ImageClass, "image-class", "", "the sandbox image `class` of the commands: node, python, go or byo:<name>")
	f.IntVar(&o.MaxSteps, "max-steps", 0, "model turns (default: the policy's, 30)")
	f.IntVar(&o.MaxSandbox, "max-sandbox-runs", 0, "sandbox runs (default: the policy's, 6)")
	f.DurationVar(&o.WallClock, "wall-clock", 0, "the run's time limit (default: the policy's, 20m)")
	f.IntVar(&o.MaxFiles, "max-files", 0, "changed files (default: the policy's, 10)")
	f.IntVar(&o.MaxChanged, "max-changed-lines", 0, "changed lines (default: the policy's, 300)")
	return cmd
}

// Exit code of quavon fix without a patch.
const exitNoPatch = 1

// maxIssueFileBytes caps --issue.
const maxIssueFileBytes = 256 << 10

func readIssue(name string, stdin io.Reader) (fixagent.Issue, error) {
	var r io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return fixagent.Issue{}, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxIssueFileBytes+1))
	if err != nil {
		return fixagent.Issue{}, err
	}
	if len(b) > maxIssueFileBytes {
		return fixagent.Issue{}, fmt.Errorf("--issue: over %d bytes", maxIssueFileBytes)
	}
	text := strings.TrimLeft(strings.ToValidUTF8(string(b), "\uFFFD"), "\r\n\t ")
	title, body, _ := strings.Cut(text, "\n")
	title = strings.TrimSpace(strings.TrimLeft(title, "#"))
	if title == "" {
		return fixagent.Issue{}, errors.New("--issue: empty (want a title on the first line)")
	}
	return fixagent.Issue{Title: title, Body: strings.TrimSpace(body)}, nil
}

// fixPolicy is the features.fix of --policy (defaults without it), with
// the flags applied.
func (o *fixOptions) fixPolicy() (policy.Fix, error) {
	p := policy.Default()
	if o.Policy != "" {
		b, err := os.ReadFile(o.Policy)
		if err != nil {
			return policy.Fix{}, err
		}
		if p, err = policy.Parse(b); err != nil {
			return policy.Fix{}, fmt.Errorf("--policy %s: %w", o.Policy, err)
		}
	}
	f := p.Features.Fix
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&f.SetupCommand, o.Setup)
	set(&f.TestCommand, o.Test)
	set(&f.LintCommand, o.Lint)
	for dst, v := range map[*int]int{&f.Limits.MaxSteps: o.MaxSteps, &f.Limits.MaxSandboxRuns: o.MaxSandbox,
		&f.Limits.MaxFiles: o.MaxFiles, &f.Limits.MaxChangedLines: o.MaxChanged} {
		if v < 0 {
			return policy.Fix{}, errors.New("limits must not be negative")
		}
		if v > 0 {
			*dst = v
		}
	}
	if o.WallClock < 0 {
		return policy.Fix{}, errors.New("--wall-clock must not be negative")
	}
	if o.WallClock > 0 {
		f.Limits.RunWallClockSeconds = int64(o.WallClock / time.Second)
	}
	p.Features.Fix = f
	if errs := p.Validate(); len(errs) > 0 {
		return policy.Fix{}, fmt.Errorf("the fix settings: %w", &policy.ValidationError{Errors: errs})
	}
	return f, nil
}

func runFix(ctx context.Context, o *fixOptions) error {
	stdout, stderr := o.env.stdout, o.env.stderr
	fail := func(err error) error { return &exitStatus{code: exitError, err: err} }
	if o.Issue == "" {
		return fail(errors.New("--issue FILE|- is required"))
	}
	issue, err := readIssue(o.Issue, os.Stdin)
	if err != nil {
		return fail(err)
	}
	fp, err := o.fixPolicy()
	if err != nil {
		return fail(err)
	}
	if (fp.TestCommand != "" || fp.LintCommand != "") && o.ImageClass == "" {
		return fail(errors.New("--image-class is required with a test or lint command"))
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	model := o.model
	var budget *llm.Budget
	if model == nil {
		cfg, err := config.LoadLLM(o.env.environ)
		if err != nil {
			return fail(err)
		}
		if model, err = provider.FromConfig(cfg.LLM, llm.FeatureFix, log); err != nil {
			return fail(err)
		}
		if budget, err = llm.NewBudget(llm.Ceiling{Tokens: cfg.LLM.Fix.RunMaxTokens, Cost: llm.Micros(cfg.LLM.Fix.RunMaxCostMicros)},
			llm.BudgetOptions{Feature: llm.FeatureFix, Logger: log}); err != nil {
			return fail(err)
		}
	} else if budget, err = llm.NewBudget(llm.Ceiling{Tokens: 1 << 40, Cost: 1 << 40}, llm.BudgetOptions{Feature: llm.FeatureFix}); err != nil {
		return fail(err)
	}

	repo, err := gitrepo.OpenLocal(ctx, o.Dir, gitrepo.DefaultLimits)
	if err != nil {
		return fail(err)
	}
	head, err := repo.ResolveCommit(ctx, "HEAD")
	if err != nil {
		return fail(err)
	}
	tree, err := repo.Tree(ctx, head)
	if err != nil {
		return fail(err)
	}
	blobs, err := repo.Blobs(ctx)
	if err != nil {
		return fail(err)
	}
	defer blobs.Close()
	start := time.Now()
	fmt.Fprintf(stderr, "quavon fix: %q on HEAD %.12s (%d files)\n", issue.Title, head, len(tree.Entries))

	cfg := fixagent.Config{
		Model: budget.Model(model), Base: patch.FromTree(tree, blobs),
		Fresh: func() (*patch.Listing, error) {
			t, err := repo.Tree(ctx, head)
			if err != nil {
				return nil, err
			}
			return patch.FromTree(t, blobs), nil
		},
		Paths: fixagent.PathPolicyOf(fp), Limits: fixagent.LimitsOf(fp.Limits), Issue: issue,
		HasTest: fp.TestCommand != "", HasLint: fp.LintCommand != "",
		OnStep: func(s agent.Step) {
			fmt.Fprintf(stderr, "  step %2d  %-12s %s (%s)\n", s.N, s.Tool, s.Outcome, s.Duration.Round(time.Millisecond))
		},
		OnSandbox: func(k fix.TestKind, r *fix.TestResult) {
			fmt.Fprintf(stderr, "  sandbox  %-5s exit %d in %.1fs\n", k, r.ExitCode, float64(r.DurationMillis)/1000)
		},
		Log: log,
	}
	if cfg.Scanner, err = leaks.NewScanner(); err != nil {
		return fail(err)
	}
	if cfg.HasTest || cfg.HasLint {
		scfg, err := config.LoadScan(scanapp.Environ(o.env.environ))
		if err != nil {
			return fail(err)
		}
		local, err := scanapp.StartLocal(ctx, scfg, stderr)
		if err != nil {
			return fail(err)
		}
		defer local.Close()
		fmt.Fprintf(stderr, "quavon fix: the sandbox is %s (runtime %s), image class %s\n", local.Backend, local.Runtime, o.ImageClass)
		files, _ := gitrepo.TreeFiles(tree, blobs)
		egress := sandbox.Egress{Mode: sandbox.EgressNone}
		if fp.Egress == policy.EgressRegistries {
			egress = sandbox.Egress{Mode: sandbox.EgressRegistries, Hosts: fp.Registries}
		}
		cfg.Sandbox = &fixagent.JobSandbox{Runner: local.Client, TenantID: "local", Base: files, ImageClass: o.ImageClass,
			SetupCommand: fp.SetupCommand, SetupEgress: egress, TestCommand: fp.TestCommand, LintCommand: fp.LintCommand,
			Limits: fixagent.JobLimits(fp.Limits), Env: map[sandbox.SandboxEnvKey]string{sandbox.EnvCI: "true"}}
	}
	res, err := fixagent.Run(ctx, cfg)
	if err != nil {
		return fail(err)
	}
	spent := budget.Spent()
	fmt.Fprintf(stderr, "quavon fix: %d step(s), %d sandbox run(s), %d tokens, $%.4f, %.1fs\n", len(res.Steps), res.SandboxRuns,
		spent.Tokens, float64(spent.Cost)/1e6, time.Since(start).Seconds())
	if res.Reason != "" {
		return &exitStatus{code: exitNoPatch, err: fmt.Errorf("no patch: %s %s", res.Reason, res.Detail)}
	}
	fmt.Fprintf(stderr, "quavon fix: a validated patch of %d file(s), sha256 %s\nsummary: %s\n", len(res.Changes), res.PatchSHA256,
		strings.TrimSpace(res.Summary))
	if o.Out != "" {
		if err := os.WriteFile(o.Out, []byte(res.Diff), 0o644); err != nil {
			return fail(err)
		}
	} else if _, err := io.WriteString(stdout, res.Diff); err != nil {
		return fail(err)
	}
	if o.Apply {
		if err := repo.Apply(ctx, res.Diff); err != nil {
			return fail(err)
		}
		fmt.Fprintln(stderr, "quavon fix: applied to the work tree")
	}
	return nil
}
