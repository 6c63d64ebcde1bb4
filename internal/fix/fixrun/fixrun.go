// Package fixrun executes one admitted fix run: it starts the run on its
// base commit (one running run per issue: the unique index), runs the fix
// agent (internal/fix/fixagent), logs every step, the sandbox results and
// the model usage on the run, and ends it:
//
//	a validated patch, mode approval   → awaiting_approval, with a fix_pr
//	                                     output awaiting approval until
//	                                     ApprovalTTL
//	a validated patch, mode auto on a  → publishing, with a fix_pr output
//	private or internal repository       ready for the publisher
//	no patch (a limit, the budget, a   → failed with the reason
//	refused patch, no change)
//
// A review fix (subject pull_request, spec §7b) ends the same way; its
// base is the reviewed head (fix_runs.base_sha, base_ref the head branch,
// head_repo_external_id), its delivery is the run's fix_runs.delivery,
// and its output is a fix_pr (delivery stacked_pr) or a fix_commit
// (delivery commit) binding the reviewed head as both base_sha and
// head_sha. The payload is FixPRPayload either way, Issue holding the
// pull request's number and BaseRef its head branch.
//
// The run's rows are written in short tenant transactions of their own:
// nothing is held open while the model or the sandbox works. A run that
// another event ended meanwhile (its issue closed) is found terminal at
// the next write, and the agent's work is dropped.
package fixrun

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/agent"
	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/fix/fixagent"
	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/publish"
)

// DefaultApprovalTTL is how long a patch waits for a maintainer.
const DefaultApprovalTTL = 7 * 24 * time.Hour

// Run is one admitted run to execute.
type Run struct {
	Tenant postgres.TenantID
	ID     string
	// Base is the commit the agent works on and its branch.
	Base fix.Base
	// Private: the repository is private or internal (auto is allowed).
	Private bool
	// Agent is the agent's configuration, Model already wrapped in Budget.
	Agent  fixagent.Config
	Budget *llm.Budget
	// PolicySHA256 is the effective policy's verdicts hash
	// (policy.Effective.VerdictsSHA256) the run is made under; the output
	// binds it, and the dashboard and the publisher refuse it under other
	// verdicts. "" binds none.
	PolicySHA256 string
	// ApprovalTTL: zero means DefaultApprovalTTL.
	ApprovalTTL time.Duration
	Now         func() time.Time
	// QueuePublish, when set, inserts a ready output's publish job in the
	// transaction that stores it (auto mode), so publication does not wait
	// for the publisher's sweep.
	QueuePublish func(ctx context.Context, tx pgx.Tx, outputID string) error
}

// FixPRPayload is the payload of a fix_pr output (publish.FixPRPayload):
// typed fields the publisher renders, never rendered text.
type FixPRPayload = publish.FixPRPayload

// Execute runs r and returns the run as it ended.
func Execute(ctx context.Context, db *postgres.DB, r Run) (*fix.Run, error) {
	if r.Budget == nil || r.Now == nil {
		return nil, errors.New("fixrun.Execute: a budget and a clock are required")
	}
	in := func(fn func(tx pgx.Tx) error) error { return db.InTenant(ctx, r.Tenant, fn) }
	var run *fix.Run
	err := in(func(tx pgx.Tx) error {
		var err error
		run, err = fix.Start(ctx, tx, r.ID, r.Base)
		if errors.Is(err, fix.ErrAlreadyRunning) {
			run, err = fix.Transition(ctx, tx, r.ID, fix.StatusIneligible, fix.Why{Reason: fix.ReasonAlreadyRunning})
			if err == nil {
				err = errStop
			}
		}
		return err
	})
	if errors.Is(err, errStop) {
		return run, nil
	}
	if err != nil {
		return nil, fmt.Errorf("fixrun.Execute: %w", err)
	}
	cfg := r.Agent
	cfg.Issue.Number = run.Number
	var stepErr error
	var sandboxRunID string
	onSandbox := cfg.OnSandbox
	cfg.OnSandbox = func(k fix.TestKind, tr *fix.TestResult) {
		sandboxRunID = tr.SandboxRunID
		if onSandbox != nil {
			onSandbox(k, tr)
		}
	}
	onStep := cfg.OnStep
	cfg.OnStep = func(s agent.Step) {
		if onStep != nil {
			onStep(s)
		}
		if stepErr != nil {
			return
		}
		st := fix.Step{Tool: toolName(s.Tool), ArgumentsSHA256: s.ArgsDigest, Outcome: outcome(s), Detail: s.Outcome,
			Duration: s.Duration}
		if s.Tool == fix.ToolRunTests || s.Tool == fix.ToolRunLinter {
			st.SandboxRunID, sandboxRunID = sandboxRunID, ""
		}
		stepErr = in(func(tx pgx.Tx) error { _, err := fix.AddStep(ctx, tx, r.ID, st); return err })
	}
	meter := &meter{next: cfg.Model}
	cfg.Model = meter
	res, err := fixagent.Run(ctx, cfg)
	if err != nil {
		return nil, r.fail(ctx, db, "agent_error", err)
	}
	spent := r.Budget.Spent()
	info := meter.Info()
	err = in(func(tx pgx.Tx) error {
		if err := fix.AddUsage(ctx, tx, r.ID, fix.Usage{Model: info.Model, InputTokens: meter.usage.InputTokens,
			OutputTokens: meter.usage.OutputTokens, CostMicros: int64(spent.Cost)}); err != nil {
			return err
		}
		for kind, tr := range map[fix.TestKind]*fix.TestResult{fix.KindTest: res.LastTest, fix.KindLint: res.LastLint} {
			if tr != nil {
				if err := fix.SetTestResult(ctx, tx, r.ID, kind, *tr); err != nil {
					return err
				}
			}
		}
		if res.Reason != "" {
			run, err = fix.Transition(ctx, tx, r.ID, fix.StatusFailed, fix.Why{Reason: res.Reason, Detail: res.Detail})
			return err
		}
		sum, err := fix.RecordPatch(ctx, tx, r.ID, res.Changes, res.Diff, res.Summary)
		if err != nil {
			return err
		}
		payload := FixPRPayload{Issue: run.Number, BaseRef: r.Base.Ref, BaseSHA: r.Base.SHA, Files: len(res.Changes),
			Summary: strings.TrimSpace(res.Summary)}
		if res.LastTest != nil {
			payload.TestExitCode = &res.LastTest.ExitCode
		}
		out := publish.NewOutput{RepositoryID: run.RepositoryID, Kind: publish.KindFixPR, FixRunID: r.ID, Payload: payload,
			Bound: publish.Bound{PatchSHA256: sum, BaseSHA: r.Base.SHA, PolicySHA256: r.PolicySHA256}}
		if run.Subject == fix.SubjectPullRequest {
			// A review fix: its base is the reviewed head, which the output
			// also binds as the expected head (FX16); the delivery the run
			// records picks the kind.
			out.Bound.HeadSHA = r.Base.SHA
			if run.Delivery == fix.DeliveryCommit {
				out.Kind = publish.KindFixCommit
			}
		}
		if run.Mode == fix.ModeAuto && r.Private {
			out.Status = publish.OutputReady
			run, err = fix.Transition(ctx, tx, r.ID, fix.StatusPublishing, fix.Why{})
		} else {
			ttl := r.ApprovalTTL
			if ttl <= 0 {
				ttl = DefaultApprovalTTL
			}
			out.Status, out.ExpiresAt = publish.OutputAwaitingApproval, r.Now().Add(ttl)
			run, err = fix.Transition(ctx, tx, r.ID, fix.StatusAwaitingApproval, fix.Why{})
		}
		if err != nil {
			return err
		}
		o, err := publish.CreateOutput(ctx, tx, out)
		if err != nil || out.Status != publish.OutputReady || r.QueuePublish == nil {
			return err
		}
		return r.QueuePublish(ctx, tx, o.ID)
	})
	if err != nil {
		return nil, fmt.Errorf("fixrun.Execute %s: %w", r.ID, errors.Join(err, stepErr))
	}
	return run, nil
}

var errStop = errors.New("stop")

// fail ends the run failed after an error of the agent's own (not a
// limit); a run already ended elsewhere stays as it is.
func (r Run) fail(ctx context.Context, db *postgres.DB, reason string, cause error) error {
	err := db.InTenant(context.WithoutCancel(ctx), r.Tenant, func(tx pgx.Tx) error {
		_, err := fix.Transition(ctx, tx, r.ID, fix.StatusFailed, fix.Why{Reason: reason, Detail: cause.Error()})
		if errors.Is(err, fix.ErrTerminal) {
			return nil
		}
		return err
	})
	return fmt.Errorf("fixrun.Execute %s: %w", r.ID, errors.Join(cause, err))
}

// toolName is the step's tool as the store records it (unknown names as
// fix.ToolUnknown).
func toolName(t string) string {
	for _, n := range fixagent.ToolNames {
		if n == t {
			return t
		}
	}
	return fix.ToolUnknown
}

func outcome(s agent.Step) string {
	switch {
	case strings.HasPrefix(s.Outcome, "limit"):
		return fix.OutcomeLimit
	case !s.IsError:
		return fix.OutcomeOK
	case strings.HasPrefix(s.Outcome, "refused"), s.Outcome == "bad arguments", s.Outcome == "unknown tool",
		s.Outcome == "after finish", s.Outcome == "no command":
		return fix.OutcomeRefused
	}
	return fix.OutcomeError
}

// meter adds up the usage of the calls the budget let through.
type meter struct {
	next  llm.Model
	usage llm.Usage
}

func (m *meter) Info() llm.Info { return m.next.Info() }

func (m *meter) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	resp, err := m.next.Complete(ctx, req)
	m.usage.InputTokens += resp.Usage.InputTokens + resp.Usage.CacheReadTokens + resp.Usage.CacheWriteTokens
	m.usage.OutputTokens += resp.Usage.OutputTokens
	return resp, err
}
