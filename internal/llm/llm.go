package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"
	"unicode/utf8"
)

// Model is one model call: messages and tool schemas in, text, tool calls
// and token usage out. Implementations are safe for concurrent use.
type Model interface {
	Complete(ctx context.Context, req Request) (Response, error)
	// Info names the provider and model and their price; it does no I/O.
	Info() Info
}

// Info describes a Model.
type Info struct {
	Provider string // anthropic, openai, scripted
	Model    string // the configured model name
	Price    Price
}

// Feature is the part of Quavon making a call; budgets and configuration
// are per feature.
type Feature string

// Features.
const (
	FeatureReview     Feature = "review"
	FeatureAcceptance Feature = "acceptance"
	FeatureFix        Feature = "fix"
)

// Features lists every feature.
var Features = []Feature{FeatureReview, FeatureAcceptance, FeatureFix}

// Valid reports whether f is one of Features.
func (f Feature) Valid() bool {
	return f == FeatureReview || f == FeatureAcceptance || f == FeatureFix
}

// Role of a message.
type Role string

// Roles. The system prompt is Request.System, not a message.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one turn of the conversation. A user turn carries Text and/or
// ToolResults (answers to the previous assistant turn's ToolCalls); an
// assistant turn carries Text and/or ToolCalls (as the model returned them).
type Message struct {
	Role        Role
	Text        string
	ToolCalls   []ToolCall
	ToolResults []ToolResult
	// Thinking of an assistant turn goes back to the provider unchanged
	// (Anthropic requires it next to tool calls). Response.Message keeps it.
	Thinking []Thinking
}

// Thinking is a reasoning block of the model: model output, never logged.
type Thinking struct {
	Text      string
	Signature string
	// Redacted is the opaque data of a redacted block (Text is empty).
	Redacted string
}

// ToolCall is a call the model asked for. Arguments are the raw JSON the
// model produced: hostile until DecodeArgs has checked them.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage
}

// ToolResult answers the ToolCall with CallID.
type ToolResult struct {
	CallID  string
	Content string
	IsError bool
}

// Request is one call.
type Request struct {
	System   string
	Messages []Message
	Tools    []Tool
	// MaxOutputTokens caps the answer; required (1..MaxOutputTokensLimit).
	MaxOutputTokens int
	// Temperature is sent where the provider accepts it. Anthropic's API
	// version 2026-10-21 refuses sampling parameters, so the anthropic
	// provider leaves it out.
	Temperature *float64
	// Stop sequences (at most 4).
	Stop []string
}

// StopReason says why the model stopped.
type StopReason string

// Stop reasons, normalised across providers.
const (
	StopEndTurn   StopReason = "end_turn"
	StopToolUse   StopReason = "tool_use"
	StopMaxTokens StopReason = "max_tokens"
	StopSequence  StopReason = "stop_sequence"
	StopRefusal   StopReason = "refusal"
	StopOther     StopReason = "other"
)

// Usage is the token count of one call. InputTokens excludes the cached
// tokens counted in CacheReadTokens and CacheWriteTokens.
type Usage struct {
	InputTokens      int64
	OutputTokens     int64
	CacheReadTokens  int64
	CacheWriteTokens int64
}

// Total is every token the call consumed.
func (u Usage) Total() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// Prompt is every input token, cached or not.
func (u Usage) Prompt() int64 { return u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens }

// Response is the model's answer.
type Response struct {
	Text       string
	ToolCalls  []ToolCall
	StopReason StopReason
	// RawStopReason is the provider's own value (finish_reason, stop_reason).
	RawStopReason string
	Usage         Usage
	// Model is the model that answered, as the provider reports it.
	Model   string
	Latency time.Duration
	// Cost of this call at the model's price.
	Cost Micros
	// Retries is how many times the call was retried (WithRetry).
	Retries int
	// Thinking blocks the model returned (see Message.Thinking).
	Thinking []Thinking
}

// Message is the assistant turn of r, to append to the conversation.
func (r Response) Message() Message {
	return Message{Role: RoleAssistant, Text: r.Text, ToolCalls: r.ToolCalls, Thinking: r.Thinking}
}

// Request limits, checked by Validate.
const (
	MaxOutputTokensLimit = 256_000
	MaxTools             = 128
	MaxStopSequences     = 4
	MaxMessages          = 10_000
)

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ErrInvalidRequest wraps every problem Validate finds.
var ErrInvalidRequest = errors.New("llm: invalid request")

// Validate checks the request the way both providers' APIs would, so a
// caller's mistake is a clear error before anything is sent: roles, tool
// names, every tool call of an assistant turn answered by the next user
// turn and no answer without a call, valid UTF-8, limits.
func (r Request) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidRequest, fmt.Sprintf(format, args...))
	}
	if r.MaxOutputTokens < 1 || r.MaxOutputTokens > MaxOutputTokensLimit {
		return bad("MaxOutputTokens %d: want 1..%d", r.MaxOutputTokens, MaxOutputTokensLimit)
	}
	if len(r.Messages) == 0 {
		return bad("no messages")
	}
	if len(r.Messages) > MaxMessages {
		return bad("%d messages: at most %d", len(r.Messages), MaxMessages)
	}
	if len(r.Tools) > MaxTools {
		return bad("%d tools: at most %d", len(r.Tools), MaxTools)
	}
	if len(r.Stop) > MaxStopSequences {
		return bad("%d stop sequences: at most %d", len(r.Stop), MaxStopSequences)
	}
	for _, s := range r.Stop {
		if s == "" || !utf8.ValidString(s) {
			return bad("stop sequences must be non-empty UTF-8")
		}
	}
	if r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > 2) {
		return bad("temperature %v: want 0..2", *r.Temperature)
	}
	if !utf8.ValidString(r.System) {
		return bad("system prompt is not valid UTF-8")
	}
	names := make(map[string]bool, len(r.Tools))
	for _, t := range r.Tools {
		if !toolName.MatchString(t.Name) {
			return bad("tool name %q: want 1-64 of [a-zA-Z0-9_-]", t.Name)
		}
		if names[t.Name] {
			return bad("tool %q declared twice", t.Name)
		}
		names[t.Name] = true
		if len(t.Schema) == 0 || !json.Valid(t.Schema) {
			return bad("tool %q has no valid JSON schema", t.Name)
		}
	}
	var pending map[string]bool // calls of the previous assistant turn
	for i, m := range r.Messages {
		if !utf8.ValidString(m.Text) {
			return bad("message %d: text is not valid UTF-8", i)
		}
		switch m.Role {
		case RoleUser:
			if len(m.ToolCalls) > 0 {
				return bad("message %d: a user turn carries no tool calls", i)
			}
			if m.Text == "" && len(m.ToolResults) == 0 {
				return bad("message %d: empty user turn", i)
			}
			for _, tr := range m.ToolResults {
				if !pending[tr.CallID] {
					return bad("message %d: tool result for %q answers no call of the previous assistant turn", i, tr.CallID)
				}
				if !utf8.ValidString(tr.Content) {
					return bad("message %d: tool result is not valid UTF-8", i)
				}
				delete(pending, tr.CallID)
			}
			if len(pending) > 0 {
				return bad("message %d: %d tool call(s) of the previous assistant turn are not answered", i, len(pending))
			}
			pending = nil
		case RoleAssistant:
			if len(pending) > 0 {
				return bad("message %d: %d tool call(s) of the previous assistant turn are not answered", i, len(pending))
			}
			if len(m.ToolResults) > 0 {
				return bad("message %d: an assistant turn carries no tool results", i)
			}
			if m.Text == "" && len(m.ToolCalls) == 0 {
				return bad("message %d: empty assistant turn", i)
			}
			pending = make(map[string]bool, len(m.ToolCalls))
			for _, c := range m.ToolCalls {
				if c.ID == "" || len(c.ID) > 256 || !utf8.ValidString(c.ID) {
					return bad("message %d: tool call without a valid id", i)
				}
				if pending[c.ID] {
					return bad("message %d: tool call id %q used twice", i, c.ID)
				}
				if !toolName.MatchString(c.Name) {
					return bad("message %d: tool call name %q is not a valid tool name", i, c.Name)
				}
				pending[c.ID] = true
			}
		default:
			return bad("message %d: role %q: want user or assistant", i, m.Role)
		}
	}
	if len(pending) > 0 {
		return bad("the last assistant turn has unanswered tool calls")
	}
	return nil
}
