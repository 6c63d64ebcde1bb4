package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/quavon/quavon/internal/llm"
)

// openaiModel is Chat Completions with function tools: OpenAI itself and
// every server that speaks its API (Ollama, vLLM, llama.cpp's server, LM
// Studio, Azure OpenAI's v1 API, OpenRouter) at a base URL. Only the chat
// completions service is built, so the SDK reads no OPENAI_* variable; it
// retries nothing (WithRetry does) and never streams.
type openaiModel struct {
	svc            openai.ChatCompletionService
	info           llm.Info
	maxCompletions bool // send max_completion_tokens rather than max_tokens
}

const openaiBaseURL = "https://api.openai.com/v1/"

func newOpenAI(ep Endpoint) (llm.Model, error) {
	base := ep.BaseURL
	if base == "" {
		base = openaiBaseURL
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, fmt.Errorf("llm: openai base URL: %w", err)
	}
	var maxCompletions bool
	switch ep.MaxTokensParam {
	case "max_completion_tokens":
		maxCompletions = true
	case "max_tokens":
	case "":
		h := strings.ToLower(u.Hostname())
		maxCompletions = h == "api.openai.com" || strings.HasSuffix(h, ".openai.azure.com")
	default:
		return nil, fmt.Errorf("llm: openai MaxTokensParam %q: want max_tokens or max_completion_tokens", ep.MaxTokensParam)
	}
	opts := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(httpClient(ep)),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(ep.Timeout),
	}
	if ep.APIKey != "" {
		opts = append(opts, option.WithAPIKey(ep.APIKey))
	}
	return &openaiModel{
		svc:            openai.NewChatCompletionService(opts...),
		info:           llm.Info{Provider: "openai", Model: ep.Model, Price: ep.Price},
		maxCompletions: maxCompletions,
	}, nil
}

func (o *openaiModel) Info() llm.Info { return o.info }

func (o *openaiModel) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	if err := req.Validate(); err != nil {
		return llm.Response{}, err
	}
	params, err := o.params(req)
	if err != nil {
		return llm.Response{}, err
	}
	start := time.Now()
	cc, err := o.svc.New(ctx, params)
	if err != nil {
		if ae, ok := asAPIError(err); ok {
			return llm.Response{}, ae
		}
		return llm.Response{}, fmt.Errorf("llm: openai %s: %w", o.info.Model, err)
	}
	if len(cc.Choices) == 0 {
		return llm.Response{}, fmt.Errorf("llm: openai %s: the answer has no choices", o.info.Model)
	}
	ch := cc.Choices[0]
	cached := cc.Usage.PromptTokensDetails.CachedTokens
	resp := llm.Response{
		Model:         cc.Model,
		Text:          ch.Message.Content,
		RawStopReason: ch.FinishReason,
		Latency:       time.Since(start),
		Usage: llm.Usage{
			InputTokens:     max(cc.Usage.PromptTokens-cached, 0),
			CacheReadTokens: cached,
			OutputTokens:    cc.Usage.CompletionTokens,
		},
	}
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type != "function" {
			continue
		}
		resp.ToolCalls = append(resp.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: json.RawMessage(tc.Function.Arguments)})
	}
	switch ch.FinishReason {
	case "stop":
		resp.StopReason = llm.StopEndTurn
		if len(resp.ToolCalls) > 0 {
			resp.StopReason = llm.StopToolUse // llama.cpp and others say stop after a call
		}
	case "tool_calls", "function_call":
		resp.StopReason = llm.StopToolUse
	case "length":
		resp.StopReason = llm.StopMaxTokens
	case "content_filter":
		resp.StopReason = llm.StopRefusal
	default:
		resp.StopReason = llm.StopOther
	}
	if ch.Message.Refusal != "" {
		resp.StopReason = llm.StopRefusal
		if resp.Text == "" {
			resp.Text = ch.Message.Refusal
		}
	}
	resp.Cost = o.info.Price.Cost(resp.Usage)
	return resp, nil
}

func (o *openaiModel) params(req llm.Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(o.info.Model)}
	if o.maxCompletions {
		p.MaxCompletionTokens = openai.Int(int64(req.MaxOutputTokens))
	} else {
		p.MaxTokens = openai.Int(int64(req.MaxOutputTokens))
	}
	if req.Temperature != nil {
		p.Temperature = openai.Float(*req.Temperature)
	}
	if len(req.Stop) > 0 {
		p.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: req.Stop}
	}
	for _, t := range req.Tools {
		var params map[string]any
		if err := json.Unmarshal(t.Schema, &params); err != nil {
			return p, fmt.Errorf("%w: tool %s: %v", llm.ErrInvalidRequest, t.Name, err)
		}
		fd := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(params)}
		if t.Description != "" {
			fd.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fd))
	}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case llm.RoleUser:
			// Tool messages answer the previous assistant turn directly.
			for _, r := range m.ToolResults {
				content := r.Content
				if r.IsError {
					content = "ERROR: " + content
				}
				p.Messages = append(p.Messages, openai.ToolMessage(content, r.CallID))
			}
			if m.Text != "" {
				p.Messages = append(p.Messages, openai.UserMessage(m.Text))
			}
		case llm.RoleAssistant:
			am := openai.ChatCompletionAssistantMessageParam{}
			if m.Text != "" {
				am.Content.OfString = openai.String(m.Text)
			}
			for _, c := range m.ToolCalls {
				am.ToolCalls = append(am.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: string(c.Arguments)},
					},
				})
			}
			p.Messages = append(p.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &am})
		}
	}
	return p, nil
}
