package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/quavon/quavon/internal/llm"
)

// anthropicModel is the Messages API (API version 2026-10-21, which the
// v2 SDK sends) with tool use and prompt caching of the system prompt and
// the tool list. The SDK reads nothing from the environment, retries
// nothing (WithRetry does) and never streams.
type anthropicModel struct {
	client anthropic.Client
	info   llm.Info
}

const anthropicBaseURL = "https://api.anthropic.com/"

func newAnthropic(ep Endpoint) (llm.Model, error) {
	if ep.APIKey == "" {
		return nil, fmt.Errorf("llm: anthropic needs an API key")
	}
	base := ep.BaseURL
	if base == "" {
		base = anthropicBaseURL
	}
	client := anthropic.NewClient(
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(base),
		option.WithAPIKey(ep.APIKey),
		option.WithHTTPClient(httpClient(ep)),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(ep.Timeout),
	)
	return &anthropicModel{client: client, info: llm.Info{Provider: "anthropic", Model: ep.Model, Price: ep.Price}}, nil
}

func (a *anthropicModel) Info() llm.Info { return a.info }

func (a *anthropicModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := req.Validate(); err != nil {
		return llm.Response{}, err
	}
	params, err := a.params(req)
	if err != nil {
		return llm.Response{}, err
	}
	start := time.Now()
	msg, err := a.client.Messages.New(ctx, params)
	if err != nil {
		if ae, ok := asAPIError(err); ok {
			return llm.Response{}, ae
		}
		return llm.Response{}, fmt.Errorf("llm: anthropic %s: %w", a.info.Model, err)
	}
	resp := llm.Response{
		Model:         string(msg.Model),
		RawStopReason: string(msg.StopReason),
		Latency:       time.Since(start),
		Usage: llm.Usage{
			InputTokens:      msg.Usage.InputTokens,
			OutputTokens:     msg.Usage.OutputTokens,
			CacheReadTokens:  msg.Usage.CacheReadInputTokens,
			CacheWriteTokens: msg.Usage.CacheCreationInputTokens,
		},
	}
	var text strings.Builder
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			resp.ToolCalls = append(resp.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: append(json.RawMessage(nil), b.Input...)})
		case "thinking":
			resp.Thinking = append(resp.Thinking, llm.Thinking{Text: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			resp.Thinking = append(resp.Thinking, llm.Thinking{Redacted: b.Data})
		}
	}
	resp.Text = text.String()
	switch msg.StopReason {
	case anthropic.StopReasonEndTurn:
		resp.StopReason = llm.StopEndTurn
	case anthropic.StopReasonToolUse:
		resp.StopReason = llm.StopToolUse
	case anthropic.StopReasonMaxTokens, anthropic.StopReasonModelContextWindowExceeded:
		resp.StopReason = llm.StopMaxTokens
	case anthropic.StopReasonStopSequence:
		resp.StopReason = llm.StopSequence
	case anthropic.StopReasonRefusal:
		resp.StopReason = llm.StopRefusal
	default:
		resp.StopReason = llm.StopOther
	}
	resp.Cost = a.info.Price.Cost(resp.Usage)
	return resp, nil
}

func (a *anthropicModel) params(req llm.Request) (anthropic.MessageNewParams, error) {
	p := anthropic.MessageNewParams{
		Model:         anthropic.Model(a.info.Model),
		MaxTokens:     int64(req.MaxOutputTokens),
		StopSequences: req.Stop,
	}
	// Prompt caching: one breakpoint after the tool list, one after the
	// system prompt (the cache prefix is tools, then system).
	if req.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System, CacheControl: anthropic.NewCacheControlEphemeralParam()}}
	}
	for i, t := range req.Tools {
		schema, err := inputSchema(t.Schema)
		if err != nil {
			return p, fmt.Errorf("%w: tool %s: %v", llm.ErrInvalidRequest, t.Name, err)
		}
		tp := anthropic.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = anthropic.String(t.Description)
		}
		if i == len(req.Tools)-1 {
			tp.CacheControl = anthropic.NewCacheControlEphemeralParam()
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &tp})
	}
	for _, m := range req.Messages {
		var blocks []anthropic.ContentBlockParamUnion
		switch m.Role {
		case llm.RoleUser:
			// Tool results come first in their turn, as the API requires.
			for _, r := range m.ToolResults {
				tr := anthropic.ToolResultBlockParam{ToolUseID: r.CallID, IsError: anthropic.Bool(r.IsError)}
				if r.Content != "" {
					tr.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: r.Content}}}
				}
				blocks = append(blocks, anthropic.ContentBlockParamUnion{OfToolResult: &tr})
			}
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			p.Messages = append(p.Messages, anthropic.NewUserMessage(blocks...))
		case llm.RoleAssistant:
			for _, th := range m.Thinking {
				if th.Redacted != "" {
					blocks = append(blocks, anthropic.NewRedactedThinkingBlock(th.Redacted))
				} else {
					blocks = append(blocks, anthropic.NewThinkingBlock(th.Signature, th.Text))
				}
			}
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, c := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, objectOrEmpty(c.Arguments), c.Name))
			}
			p.Messages = append(p.Messages, anthropic.NewAssistantMessage(blocks...))
		}
	}
	return p, nil
}

// inputSchema splits a JSON Schema object into the SDK's fields.
func inputSchema(raw json.RawMessage) (anthropic.ToolInputSchemaParam, error) {
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return anthropic.ToolInputSchemaParam{}, err
	}
	if t, ok := doc["type"]; ok && t != "object" {
		return anthropic.ToolInputSchemaParam{}, fmt.Errorf("schema type %v: want object", t)
	}
	s := anthropic.ToolInputSchemaParam{Properties: doc["properties"], ExtraFields: map[string]any{}}
	if req, ok := doc["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok {
				s.Required = append(s.Required, name)
			}
		}
	}
	for k, v := range doc {
		switch k {
		case "type", "properties", "required":
		default:
			s.ExtraFields[k] = v
		}
	}
	return s, nil
}

// objectOrEmpty is the call's arguments when they are a JSON object, else
// {}: the API takes only objects as tool_use input, and a malformed call
// the model made earlier must still be sent back with its error result.
func objectOrEmpty(raw json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if len(raw) > 0 && json.Unmarshal(raw, &obj) == nil && obj != nil {
		return raw
	}
	return json.RawMessage(`{}`)
}
