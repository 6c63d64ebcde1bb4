// Package agent is the tool loop the reviewer and the fix agent share (spec
// §4), and the read-only tools over a repository tree both of them get:
// list_files, read_file and search, bounded and path-checked (FX12).
//
// The loop sends the conversation to an llm.Model (wrapped in an
// llm.Budget by the caller, so no loop can call around it), runs the tools
// the model asks for, and stops when a tool says the run is finished, when
// the steps run out, when the budget refuses a call, or when the context
// ends. A tool call the set does not know, or whose arguments do not decode
// strictly, is answered with an error result the model sees; nothing else
// happens. Tool output that comes from the repository reaches the model
// only inside llm.Untrusted. Prompts, arguments and model output are never
// logged: steps are recorded as tool name, a digest of the arguments and
// the outcome.
package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/quavon/quavon/internal/llm"
)

// Tool is one tool of a run: its definition (name, description, schema)
// and what it does. Run gets the raw arguments (decode them with
// llm.DecodeArgs on Def) and returns the result the model sees.
type Tool struct {
	Def llm.Tool
	Run func(ctx context.Context, args []byte) Result
}

// Result is a tool's answer.
type Result struct {
	// Content is what the model sees.
	Content string
	// IsError marks a refused or failed call (the model sees it as one).
	IsError bool
	// Done ends the run after this call (finish). Summary is kept.
	Done    bool
	Summary string
	// Outcome is a short, log-safe description for the step record
	// ("ok", "refused: path", "3 matches"); never repository content.
	Outcome string
}

// Stop says why a run ended.
type Stop string

// The ways a run ends.
const (
	StopFinished   Stop = "finished"    // a tool ended the run
	StopMaxSteps   Stop = "max_steps"   // the model used every step
	StopBudget     Stop = "budget"      // the budget refused a call (llm.BudgetExceededError)
	StopDeadline   Stop = "deadline"    // the wall clock or the caller's context ended
	StopNoProgress Stop = "no_progress" // the model kept answering without calling a tool
	StopModelError Stop = "model_error" // the model call failed otherwise
)

// Step is one model turn's tool call, as recorded (fix_run_steps).
type Step struct {
	N          int
	Tool       string
	ArgsDigest string // SHA-256 of the raw arguments, hex
	Outcome    string
	IsError    bool
	Duration   time.Duration
}

// Config configures Run.
type Config struct {
	Model  llm.Model
	System string
	Tools  []Tool
	// MaxSteps caps model turns (default 30, spec §4).
	MaxSteps int
	// MaxOutputTokens per model call (default 4096).
	MaxOutputTokens int
	// MaxIdleTurns is how many answers without a tool call are tolerated
	// (each gets a reminder) before the run stops (default 2).
	MaxIdleTurns int
	// OnStep, if set, is called after every tool call.
	OnStep func(Step)
	Log    *slog.Logger
}

// Outcome is how a run ended.
type Outcome struct {
	Stop    Stop
	Summary string // from the tool that ended the run
	Steps   []Step
	Turns   int
	// Err is the error behind StopBudget, StopDeadline or StopModelError.
	Err error
}

// Run runs the loop from the first user message.
func Run(ctx context.Context, cfg Config, first string) (*Outcome, error) {
	if cfg.Model == nil || len(cfg.Tools) == 0 {
		return nil, errors.New("agent.Run: a model and tools are required")
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = 30
	}
	if cfg.MaxOutputTokens <= 0 {
		cfg.MaxOutputTokens = 4096
	}
	if cfg.MaxIdleTurns <= 0 {
		cfg.MaxIdleTurns = 2
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	tools := map[string]Tool{}
	defs := make([]llm.Tool, 0, len(cfg.Tools))
	for _, t := range cfg.Tools {
		if _, dup := tools[t.Def.Name]; dup {
			return nil, fmt.Errorf("agent.Run: tool %s twice", t.Def.Name)
		}
		tools[t.Def.Name] = t
		defs = append(defs, t.Def)
	}
	msgs := []llm.Message{{Role: llm.RoleUser, Text: first}}
	out := &Outcome{}
	idle := 0
	for out.Turns < cfg.MaxSteps {
		if err := ctx.Err(); err != nil {
			out.Stop, out.Err = StopDeadline, err
			return out, nil
		}
		out.Turns++
		resp, err := cfg.Model.Complete(ctx, llm.Request{System: cfg.System, Messages: msgs, Tools: defs, MaxOutputTokens: cfg.MaxOutputTokens})
		if err != nil {
			var be *llm.BudgetExceededError
			switch {
			case errors.As(err, &be):
				out.Stop = StopBudget
			case ctx.Err() != nil:
				out.Stop = StopDeadline
			default:
				out.Stop = StopModelError
			}
			out.Err = err
			return out, nil
		}
		msgs = append(msgs, resp.Message())
		if len(resp.ToolCalls) == 0 {
			idle++
			if idle > cfg.MaxIdleTurns {
				out.Stop = StopNoProgress
				return out, nil
			}
			msgs = append(msgs, llm.Message{Role: llm.RoleUser, Text: "Continue by calling one of your tools; call finish when you are done."})
			continue
		}
		idle = 0
		results := make([]llm.ToolResult, 0, len(resp.ToolCalls))
		done := false
		for _, call := range resp.ToolCalls {
			sum := sha256.Sum256(call.Arguments)
			step := Step{N: len(out.Steps) + 1, Tool: call.Name, ArgsDigest: hex.EncodeToString(sum[:])}
			t0 := time.Now()
			var res Result
			t, ok := tools[call.Name]
			switch {
			case done:
				// A call after the run ended in the same turn changes nothing.
				res = Result{Content: "the run has finished; this call was not made", IsError: true, Outcome: "after finish"}
			case !ok:
				step.Tool = clipName(call.Name)
				res = Result{Content: fmt.Sprintf("unknown tool %q: use only the tools you were given", clipName(call.Name)), IsError: true, Outcome: "unknown tool"}
			default:
				res = t.Run(ctx, call.Arguments)
			}
			step.Duration, step.Outcome, step.IsError = time.Since(t0), res.Outcome, res.IsError
			if step.Outcome == "" {
				step.Outcome = "ok"
				if res.IsError {
					step.Outcome = "error"
				}
			}
			out.Steps = append(out.Steps, step)
			if cfg.OnStep != nil {
				cfg.OnStep(step)
			}
			cfg.Log.LogAttrs(ctx, slog.LevelDebug, "agent step", slog.Int("step", step.N), slog.String("tool", step.Tool),
				slog.String("args_sha256", step.ArgsDigest[:16]), slog.String("outcome", step.Outcome), slog.Duration("took", step.Duration))
			results = append(results, llm.ToolResult{CallID: call.ID, Content: res.Content, IsError: res.IsError})
			if res.Done && !done {
				done, out.Summary = true, res.Summary
			}
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleUser, ToolResults: results})
		if done {
			out.Stop = StopFinished
			return out, nil
		}
	}
	out.Stop = StopMaxSteps
	return out, nil
}

// clipName keeps a hostile tool name short for messages and records.
func clipName(s string) string {
	const n = 64
	b := []byte(s)
	if len(b) > n {
		b = b[:n]
	}
	for i, c := range b {
		if c < 0x20 || c >= 0x7f {
			b[i] = '?'
		}
	}
	return string(b)
}
