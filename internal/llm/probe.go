package llm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ProbeResult is what Probe saw.
type ProbeResult struct {
	Model   string // the model that answered
	Latency time.Duration
	Usage   Usage
	Cost    Micros
}

// Probe failures (besides the call's own errors: auth, unknown model,
// tools unsupported, …).
var (
	ErrProbeNoToolCall   = errors.New("llm: probe: the model answered with text instead of calling the tool")
	ErrProbeWrongTool    = errors.New("llm: probe: the model called a tool it was not offered")
	ErrProbeBadArguments = errors.New("llm: probe: the model's tool call is malformed")
)

type probeArgs struct {
	Word string `json:"word" jsonschema:"description=The word you were asked to send,maxLength=32"`
}

var probeTool = sync.OnceValue(func() Tool {
	return MustTool[probeArgs]("quavon_probe", "Reports that the caller is ready. Call it with the word you are asked to send.", ToolLimits{ArgumentBytes: 1024})
})

// ProbeCeiling is the most one probe may spend: its request with the
// output cap fits in the tokens, and at the dearest prices of the built-in
// table it stays under ten cents. A model priced higher is refused before
// the call (*BudgetExceededError), never probed at a surprise cost.
var ProbeCeiling = Ceiling{Tokens: 2048, Cost: USD(0.10)}

// probeMaxOutput is the probe's output cap (room for a reasoning model's
// preamble before the call).
const probeMaxOutput = 1024

// Probe sends one tiny request offering one tool and checks the answer is a
// well-formed call of exactly that tool, through a budget of ProbeCeiling.
// Local models that claim tool support and answer in prose, or emit
// arguments that are not JSON, fail it: the most common failure of
// self-hosted models in agents.
func Probe(ctx context.Context, m Model) (ProbeResult, error) {
	tool := probeTool()
	b, err := NewBudget(ProbeCeiling, BudgetOptions{})
	if err != nil {
		return ProbeResult{}, err
	}
	resp, err := b.Model(m).Complete(ctx, Request{
		System:          "You are a connectivity check of a tool-calling client. Answer only by calling the tool you are given.",
		Messages:        []Message{{Role: RoleUser, Text: `Call the tool quavon_probe with the argument word set to "ready". Do not reply with text.`}},
		Tools:           []Tool{tool},
		MaxOutputTokens: probeMaxOutput,
	})
	res := ProbeResult{Model: resp.Model, Latency: resp.Latency, Usage: resp.Usage, Cost: resp.Cost}
	if err != nil {
		return res, fmt.Errorf("llm: probe of %s: %w", m.Info().Model, err)
	}
	switch {
	case len(resp.ToolCalls) == 0:
		return res, fmt.Errorf("%w (stop reason %s): the model or its server does not really support tool calls", ErrProbeNoToolCall, resp.StopReason)
	case len(resp.ToolCalls) > 1:
		return res, fmt.Errorf("%w: %d calls for one request", ErrProbeBadArguments, len(resp.ToolCalls))
	case resp.ToolCalls[0].Name != tool.Name:
		return res, fmt.Errorf("%w: %q", ErrProbeWrongTool, capText(resp.ToolCalls[0].Name, 64))
	}
	args, err := DecodeArgs[probeArgs](tool, resp.ToolCalls[0].Arguments)
	if err != nil {
		return res, fmt.Errorf("%w: %v", ErrProbeBadArguments, err)
	}
	if args.Word == "" {
		return res, fmt.Errorf("%w: empty word", ErrProbeBadArguments)
	}
	return res, nil
}
