package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Step is one scripted answer: what the model says, or how it fails. The
// scripted model and the provider emulator (llmfake) play the same steps.
type Step struct {
	Text      string
	ToolCalls []ToolCall // Arguments are sent as given, valid JSON or not; empty IDs are filled in
	// StopReason defaults to tool_use with tool calls, else end_turn.
	StopReason StopReason
	// Usage defaults to the estimate of the request and of the answer.
	Usage *Usage
	// Model defaults to the requested model.
	Model string
	// Fail makes the call fail as the provider's API would.
	Fail *Failure
	// Delay holds the answer back (the context still ends it).
	Delay time.Duration
}

// Failure is a provider error response.
type Failure struct {
	Status int    // HTTP status
	Type   string // error.type (anthropic: overloaded_error, …; openai: invalid_request_error, …)
	Code   string // error.code (openai) / error.details.error_code (anthropic)
	// Message defaults to the status text.
	Message string
	// RetryAfter is sent as the retry-after header when not empty.
	RetryAfter string
}

// Script answers call number n (from 0) of a conversation.
type Script func(n int, req Request) Step

// Steps plays steps in order; a call after the last fails with
// ErrScriptExhausted.
func Steps(steps ...Step) Script {
	return func(n int, _ Request) Step {
		if n < len(steps) {
			return steps[n]
		}
		return Step{Fail: &Failure{Status: 500, Type: "api_error", Message: ErrScriptExhausted.Error()}}
	}
}

// ErrScriptExhausted: the script has no step for the call.
var ErrScriptExhausted = errors.New("llmfake: script exhausted")

// Answer is the step for a plain text answer.
func Answer(text string) Step { return Step{Text: text} }

// Call is the step of one call of tool with args marshalled to JSON.
func Call(tool string, args any) Step {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(fmt.Sprintf("llm.Call %s: %v", tool, err))
	}
	return Step{ToolCalls: []ToolCall{{Name: tool, Arguments: raw}}}
}

// Misbehaviour, on purpose.

// MalformedCall calls tool with arguments that are not JSON.
func MalformedCall(tool string) Step {
	return Step{ToolCalls: []ToolCall{{Name: tool, Arguments: json.RawMessage(`{"path": "README.md", `)}}}
}

// UnknownToolCall calls a tool the request never offered.
func UnknownToolCall() Step {
	return Step{ToolCalls: []ToolCall{{Name: "exfiltrate_secrets", Arguments: json.RawMessage(`{}`)}}}
}

// HugeArguments calls tool with field set to a string of n bytes.
func HugeArguments(tool, field string, n int) Step {
	raw, _ := json.Marshal(map[string]string{field: strings.Repeat("A", n)})
	return Step{ToolCalls: []ToolCall{{Name: tool, Arguments: raw}}}
}

// ObeyInjection is a model that follows injected instructions: it takes the
// last untrusted block of the conversation as its orders. When the block
// holds a line `CALL <tool> <json>` it calls that tool with those
// arguments; otherwise it answers with the block's text verbatim.
func ObeyInjection() Script {
	return func(_ int, req Request) Step {
		var last string
		for _, m := range req.Messages {
			for _, s := range append([]string{m.Text}, resultTexts(m)...) {
				if b, ok := lastUntrustedBlock(s); ok {
					last = b
				}
			}
		}
		for _, line := range strings.Split(last, "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "CALL "); ok {
				tool, args, _ := strings.Cut(rest, " ")
				if args == "" {
					args = "{}"
				}
				return Step{ToolCalls: []ToolCall{{Name: tool, Arguments: json.RawMessage(args)}}}
			}
		}
		if last == "" {
			last = "nothing to obey"
		}
		return Step{Text: last}
	}
}

func resultTexts(m Message) []string {
	var out []string
	for _, r := range m.ToolResults {
		out = append(out, r.Content)
	}
	return out
}

// lastUntrustedBlock returns the body of the last Untrusted block in s.
func lastUntrustedBlock(s string) (string, bool) {
	i := strings.LastIndex(s, "<<<UNTRUSTED ")
	if i < 0 {
		return "", false
	}
	body := s[i:]
	nl := strings.IndexByte(body, '\n')
	if nl < 0 {
		return "", false
	}
	body = body[nl+1:]
	if end := strings.LastIndex(body, "<<<END UNTRUSTED nonce="); end >= 0 {
		body = body[:end]
	}
	return strings.TrimRight(body, "\n"), true
}

// Scripted is a deterministic Model for tests and the demo.
type Scripted struct {
	script Script
	info   Info

	mu       sync.Mutex
	calls    int
	requests []Request
}

var _ Model = (*Scripted)(nil)

// NewScripted plays script as model (priced at price: zero means free).
func NewScripted(script Script, model string, price Price) *Scripted {
	if model == "" {
		model = "scripted"
	}
	return &Scripted{script: script, info: Info{Provider: "scripted", Model: model, Price: price}}
}

// Info names the scripted model.
func (s *Scripted) Info() Info { return s.info }

// maxRecorded bounds the requests a Scripted keeps.
const maxRecorded = 1024

// Requests returns a copy of the requests received, in order (the latest
// 512 to 1024 of them once more have arrived).
func (s *Scripted) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Calls is how many requests arrived.
func (s *Scripted) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Complete validates req and plays the next step.
func (s *Scripted) Complete(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	if err := req.Validate(); err != nil {
		return Response{}, err
	}
	s.mu.Lock()
	n := s.calls
	s.calls++
	if len(s.requests) == maxRecorded { // a long demo run keeps the latest only
		s.requests = append(s.requests[:0], s.requests[maxRecorded/2:]...)
	}
	s.requests = append(s.requests, req)
	s.mu.Unlock()
	step := s.script(n, req)
	if step.Delay > 0 {
		t := time.NewTimer(step.Delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return Response{}, fmt.Errorf("llm: scripted: %w", ctx.Err())
		case <-t.C:
		}
	}
	if err := ctx.Err(); err != nil {
		return Response{}, fmt.Errorf("llm: scripted: %w", err)
	}
	if f := step.Fail; f != nil {
		h := http.Header{}
		if f.RetryAfter != "" {
			h.Set("retry-after", f.RetryAfter)
		}
		return Response{}, NewAPIError("scripted", s.info.Model, f.Status, f.Type, f.Code, f.message(), h)
	}
	resp := step.Response(n, req, s.info.Model)
	resp.Latency = time.Since(start)
	resp.Cost = s.info.Price.Cost(resp.Usage)
	return resp, nil
}

func (f *Failure) message() string {
	if f.Message != "" {
		return f.Message
	}
	return http.StatusText(f.Status)
}

// Response is the answer the step gives to call n of req: IDs filled in,
// stop reason and usage defaulted. llmfake renders the same answer.
func (st Step) Response(n int, req Request, model string) Response {
	resp := Response{Text: st.Text, StopReason: st.StopReason, Model: model}
	if st.Model != "" {
		resp.Model = st.Model
	}
	for i, c := range st.ToolCalls {
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%03d_%02d", n, i)
		}
		resp.ToolCalls = append(resp.ToolCalls, c)
	}
	if resp.StopReason == "" {
		resp.StopReason = StopEndTurn
		if len(resp.ToolCalls) > 0 {
			resp.StopReason = StopToolUse
		}
	}
	resp.RawStopReason = string(resp.StopReason)
	if st.Usage != nil {
		resp.Usage = *st.Usage
	} else {
		out := int64(len(st.Text)+3) / 4
		for _, c := range resp.ToolCalls {
			out += int64(len(c.Arguments)+len(c.Name)+3)/4 + 8
		}
		resp.Usage = Usage{InputTokens: EstimateInputTokens(req) / 2, OutputTokens: max(1, min(out, int64(req.MaxOutputTokens)))}
	}
	return resp
}
