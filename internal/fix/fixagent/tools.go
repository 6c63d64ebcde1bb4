package fixagent

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/quavon/quavon/internal/agent"
	"github.com/quavon/quavon/internal/fix"
	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/patch"
)

type editArgs struct {
	Path    string `json:"path" jsonschema:"description=File to edit, relative to the repository root,maxLength=1024"`
	OldText string `json:"oldText" jsonschema:"description=Exact text to replace; it must occur exactly once in the file"`
	NewText string `json:"newText" jsonschema:"description=Replacement text"`
}

type createArgs struct {
	Path    string `json:"path" jsonschema:"description=New file, relative to the repository root,maxLength=1024"`
	Content string `json:"content" jsonschema:"description=The whole content of the new text file"`
}

type deleteArgs struct {
	Path string `json:"path" jsonschema:"description=File to delete, relative to the repository root,maxLength=1024"`
}

type noArgs struct{}

type finishArgs struct {
	Summary string `json:"summary" jsonschema:"description=What you changed and why, for the maintainers (a few sentences),maxLength=4000"`
}

// The argument cap of the write tools: a file of MaxFileBytes, JSON-escaped.
const writeArgBytes = 2*agent.MaxFileBytes + 4096

var (
	editTool   = llm.MustTool[editArgs]("edit_file", "Replace the only occurrence of oldText in a text file with newText.", llm.ToolLimits{ArgumentBytes: writeArgBytes})
	createTool = llm.MustTool[createArgs]("create_file", "Create a new text file (it must not exist).", llm.ToolLimits{ArgumentBytes: writeArgBytes})
	deleteTool = llm.MustTool[deleteArgs]("delete_file", "Delete a file.", llm.ToolLimits{ArgumentBytes: 2048})
	testTool   = llm.MustTool[noArgs]("run_tests", "Run the repository's test command in the sandbox on your edits; returns the exit code, the duration and the end of the output.", llm.ToolLimits{ArgumentBytes: 64})
	lintTool   = llm.MustTool[noArgs]("run_linter", "Run the repository's lint command in the sandbox on your edits; returns the exit code, the duration and the end of the output.", llm.ToolLimits{ArgumentBytes: 64})
	finishTool = llm.MustTool[finishArgs]("finish", "End your work. Call it once the fix is complete, with a summary.", llm.ToolLimits{ArgumentBytes: 16 << 10})
)

// ToolNames are the agent's tools, exactly.
var ToolNames = []string{fix.ToolListFiles, fix.ToolReadFile, fix.ToolSearch, fix.ToolEditFile, fix.ToolCreateFile,
	fix.ToolDeleteFile, fix.ToolRunTests, fix.ToolRunLinter, fix.ToolFinish}

func bad(err error) agent.Result {
	return agent.Result{Content: fmt.Sprintf("invalid arguments: %v", err), IsError: true, Outcome: "bad arguments"}
}

// editResult turns an overlay error into the tool's answer; a patch limit
// ends the run with its reason.
func (s *state) editResult(what, path string, err error) agent.Result {
	if err == nil {
		return agent.Result{Content: fmt.Sprintf("%s %s (%d changed lines in the patch so far)", what, path, s.ov.ChangedLines()), Outcome: "ok"}
	}
	var v *patch.Violation
	if errors.As(err, &v) {
		switch v.Rule {
		case patch.RuleLimitFiles:
			return s.stop(ReasonMaxFiles, v.Message)
		case patch.RuleLimitChangedLines:
			return s.stop(ReasonMaxChangedLines, v.Message)
		}
		return agent.Result{Content: "refused: " + v.Error(), IsError: true, Outcome: "refused: " + string(v.Rule)}
	}
	var mc *patch.MatchCountError
	if errors.As(err, &mc) {
		return agent.Result{Content: err.Error(), IsError: true, Outcome: "match count"}
	}
	return agent.Result{Content: clip(err.Error(), 512), IsError: true, Outcome: "error"}
}

// stop ends the run for a limit.
func (s *state) stop(reason, detail string) agent.Result {
	s.res.Reason, s.res.Detail = reason, clip(detail, 512)
	return agent.Result{Content: "limit reached: " + detail + "; the run ends", IsError: true, Done: true, Outcome: "limit: " + reason}
}

func (s *state) writeTools() []agent.Tool {
	return []agent.Tool{
		{Def: editTool, Run: func(_ context.Context, raw []byte) agent.Result {
			a, err := llm.DecodeArgs[editArgs](editTool, raw)
			if err != nil {
				return bad(err)
			}
			return s.editResult("edited", a.Path, s.ov.EditFile(a.Path, a.OldText, a.NewText))
		}},
		{Def: createTool, Run: func(_ context.Context, raw []byte) agent.Result {
			a, err := llm.DecodeArgs[createArgs](createTool, raw)
			if err != nil {
				return bad(err)
			}
			return s.editResult("created", a.Path, s.ov.CreateFile(a.Path, a.Content))
		}},
		{Def: deleteTool, Run: func(_ context.Context, raw []byte) agent.Result {
			a, err := llm.DecodeArgs[deleteArgs](deleteTool, raw)
			if err != nil {
				return bad(err)
			}
			return s.editResult("deleted", a.Path, s.ov.DeleteFile(a.Path))
		}},
	}
}

func (s *state) sandboxTools() []agent.Tool {
	run := func(def llm.Tool, kind fix.TestKind, has bool) agent.Tool {
		return agent.Tool{Def: def, Run: func(ctx context.Context, raw []byte) agent.Result {
			if _, err := llm.DecodeArgs[noArgs](def, raw); err != nil {
				return bad(err)
			}
			if !has || s.cfg.Sandbox == nil {
				return agent.Result{Content: fmt.Sprintf("the repository has no %s command", kind), IsError: true, Outcome: "no command"}
			}
			if s.res.SandboxRuns >= s.cfg.Limits.MaxSandboxRuns {
				return s.stop(ReasonMaxSandboxRuns, fmt.Sprintf("%d sandbox runs used", s.res.SandboxRuns))
			}
			s.res.SandboxRuns++
			t0 := time.Now()
			out, err := s.cfg.Sandbox.Run(ctx, kind, s.ov.Changes())
			if err != nil {
				if ctx.Err() != nil {
					return agent.Result{Content: "the run's time is up", IsError: true, Outcome: "deadline"}
				}
				return agent.Result{Content: "the sandbox failed to run the command; try again later or finish", IsError: true, Outcome: "sandbox error"}
			}
			r := &fix.TestResult{SandboxRunID: out.SandboxRunID, Status: "completed", ExitCode: out.ExitCode, TimedOut: out.TimedOut,
				DurationMillis: out.Duration.Milliseconds()}
			if r.DurationMillis == 0 {
				r.DurationMillis = time.Since(t0).Milliseconds()
			}
			if out.TimedOut {
				r.Status = "timed_out"
			}
			r.SetTails(out.Stdout, out.Stderr, out.Truncated)
			if kind == fix.KindTest {
				s.res.LastTest = r
			} else {
				s.res.LastLint = r
			}
			if s.cfg.OnSandbox != nil {
				s.cfg.OnSandbox(kind, r)
			}
			body := fmt.Sprintf("exit code %d, %d ms%s\n--- stdout (end) ---\n%s\n--- stderr (end) ---\n%s", r.ExitCode, r.DurationMillis,
				map[bool]string{true: ", timed out", false: ""}[r.TimedOut], r.StdoutTail, r.StderrTail)
			outcome := fmt.Sprintf("exit %d", r.ExitCode)
			return agent.Result{Content: llm.Untrusted(llm.UntrustedTestOutput, body), Outcome: outcome}
		}}
	}
	return []agent.Tool{run(testTool, fix.KindTest, s.cfg.HasTest), run(lintTool, fix.KindLint, s.cfg.HasLint)}
}

func (s *state) finishTool() agent.Tool {
	return agent.Tool{Def: finishTool, Run: func(_ context.Context, raw []byte) agent.Result {
		a, err := llm.DecodeArgs[finishArgs](finishTool, raw)
		if err != nil {
			return bad(err)
		}
		return agent.Result{Content: "finished", Done: true, Summary: a.Summary, Outcome: "ok"}
	}}
}
