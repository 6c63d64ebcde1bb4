package llmfake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/quavon/quavon/internal/llm"
)

var anthropicVersions = []string{"2023-06-01", "2026-10-21"}

// The top-level fields of a Messages request; the sampling fields only
// under 2023-06-01.
var (
	anthropicFields = []string{"model", "max_tokens", "messages", "system", "tools", "tool_choice", "stop_sequences",
		"metadata", "stream", "cache_control", "thinking", "service_tier", "container", "inference_geo",
		"output_config", "speed", "diagnostics", "mcp_servers"}
	anthropicSampling = []string{"temperature", "top_p", "top_k"}
	anthropicToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
)

func (s *Server) anthropic(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.read(w, r, "anthropic")
	if !ok {
		return
	}
	key := r.Header.Get("X-Api-Key")
	if key == "" {
		key, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	rec.Key = key
	switch {
	case key == "":
		s.fail(w, rec, &llm.Failure{Status: 401, Type: "authentication_error", Message: "x-api-key header is required"})
		return
	case s.opts.APIKey != "" && key != s.opts.APIKey:
		s.fail(w, rec, &llm.Failure{Status: 401, Type: "authentication_error", Message: "invalid x-api-key"})
		return
	}
	version := r.Header.Get("Anthropic-Version")
	switch {
	case version == "":
		s.fail(w, rec, &llm.Failure{Status: 400, Message: "anthropic-version: header is required"})
		return
	case !slices.Contains(anthropicVersions, version):
		s.fail(w, rec, &llm.Failure{Status: 400, Message: fmt.Sprintf("anthropic-version: invalid version %q", version)})
		return
	}
	req, model, inv := s.anthropicRequest(rec.Body, version)
	if inv != nil {
		s.fail(w, rec, &llm.Failure{Status: 400, Message: inv.msg})
		return
	}
	if !s.knownModel(model) {
		s.fail(w, rec, &llm.Failure{Status: 404, Type: "not_found_error", Message: "model: " + model})
		return
	}
	rec.Request = req
	n, step := s.next(rec)
	if step.Delay > 0 {
		select {
		case <-r.Context().Done():
			s.finish(rec, 499)
			return
		case <-time.After(step.Delay):
		}
	}
	if step.Fail != nil {
		s.fail(w, rec, step.Fail)
		return
	}
	resp := step.Response(n, req, model)
	usage := resp.Usage
	if step.Usage == nil {
		// Emulated prompt caching over the tools and the system prompt,
		// when the request asks for it with cache_control.
		var body map[string]json.RawMessage
		_ = json.Unmarshal(rec.Body, &body)
		if strings.Contains(string(body["tools"])+string(body["system"]), `"cache_control"`) {
			if cached, read := s.cache(model, append(append([]byte{}, body["tools"]...), body["system"]...)); cached > 0 {
				if read {
					usage.CacheReadTokens = cached
				} else {
					usage.CacheWriteTokens = cached
				}
				usage.InputTokens = max(usage.InputTokens-cached, 1)
			}
		}
	}
	content := []map[string]any{}
	if resp.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": resp.Text})
	}
	for _, c := range resp.ToolCalls {
		var input any = json.RawMessage(c.Arguments)
		if !json.Valid(c.Arguments) {
			input = string(c.Arguments) // a model's malformed arguments, as a string
		}
		id := c.ID
		if !strings.HasPrefix(id, "toolu_") {
			id = "toolu_" + id
		}
		content = append(content, map[string]any{"type": "tool_use", "id": id, "name": c.Name, "input": input})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id":            requestID("msg_", rec.Body),
		"type":          "message",
		"role":          "assistant",
		"model":         resp.Model,
		"content":       content,
		"stop_reason":   string(resp.StopReason),
		"stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens":                usage.InputTokens,
			"output_tokens":               usage.OutputTokens,
			"cache_creation_input_tokens": usage.CacheWriteTokens,
			"cache_read_input_tokens":     usage.CacheReadTokens,
			"service_tier":                "standard",
		},
	})
	s.finish(rec, http.StatusOK)
}

// anthropicRequest validates a Messages request body as the API does and
// decodes it into an llm.Request.
func (s *Server) anthropicRequest(body []byte, version string) (llm.Request, string, *invalid) {
	var req llm.Request
	top, ok := object(body)
	if !ok {
		return req, "", bad("There was an error parsing the body: want a JSON object")
	}
	allowed := anthropicFields
	if version == "2023-06-01" {
		allowed = append(slices.Clone(allowed), anthropicSampling...)
	}
	if extra := unknownKeys(top, allowed...); len(extra) > 0 {
		return req, "", bad("%s: Extra inputs are not permitted", extra[0])
	}
	model, ok := asString(top["model"])
	if !ok || model == "" {
		return req, "", bad("model: Field required")
	}
	raw, present := top["max_tokens"]
	mt, ok := asInt(raw)
	switch {
	case !present:
		return req, "", bad("max_tokens: Field required")
	case !ok:
		return req, "", bad("max_tokens: Input should be a valid integer")
	case mt < 0:
		return req, "", bad("max_tokens: Input should be greater than or equal to 0")
	}
	req.MaxOutputTokens = int(mt)
	if raw, ok := top["stream"]; ok {
		if b, _ := asBool(raw); b {
			return req, "", bad("stream: llmfake does not emulate streaming")
		}
	}
	breakpoints := 0
	cacheControl := func(where string, m map[string]json.RawMessage) *invalid {
		raw, ok := m["cache_control"]
		if !ok || isNull(raw) {
			return nil
		}
		cc, ok := object(raw)
		if !ok {
			return bad("%s.cache_control: Input should be a valid dictionary", where)
		}
		if extra := unknownKeys(cc, "type", "ttl"); len(extra) > 0 {
			return bad("%s.cache_control.%s: Extra inputs are not permitted", where, extra[0])
		}
		if t, _ := asString(cc["type"]); t != "ephemeral" {
			return bad("%s.cache_control.type: Input should be 'ephemeral'", where)
		}
		if ttl, ok := cc["ttl"]; ok {
			if v, _ := asString(ttl); v != "5m" && v != "1h" {
				return bad("%s.cache_control.ttl: Input should be '5m' or '1h'", where)
			}
		}
		breakpoints++
		return nil
	}
	// textBlocks reads a string or an array of text blocks.
	textBlocks := func(where string, raw json.RawMessage) (string, *invalid) {
		if s, ok := asString(raw); ok {
			return s, nil
		}
		arr, ok := asArray(raw)
		if !ok {
			return "", bad("%s: Input should be a valid string or list of text blocks", where)
		}
		var b strings.Builder
		for i, el := range arr {
			at := fmt.Sprintf("%s.%d", where, i)
			blk, ok := object(el)
			if !ok {
				return "", bad("%s: Input should be a valid dictionary", at)
			}
			if t, _ := asString(blk["type"]); t != "text" {
				return "", bad("%s.type: Input should be 'text'", at)
			}
			if extra := unknownKeys(blk, "type", "text", "cache_control", "citations"); len(extra) > 0 {
				return "", bad("%s.%s: Extra inputs are not permitted", at, extra[0])
			}
			text, ok := asString(blk["text"])
			if !ok {
				return "", bad("%s.text: Field required", at)
			}
			if text == "" {
				return "", bad("%s: text content blocks must be non-empty", at)
			}
			if inv := cacheControl(at, blk); inv != nil {
				return "", inv
			}
			b.WriteString(text)
		}
		return b.String(), nil
	}

	if raw, ok := top["system"]; ok {
		sys, inv := textBlocks("system", raw)
		if inv != nil {
			return req, "", inv
		}
		req.System = sys
	}
	if raw, ok := top["tools"]; ok {
		tools, ok := asArray(raw)
		if !ok {
			return req, "", bad("tools: Input should be a valid list")
		}
		seen := map[string]bool{}
		for i, el := range tools {
			at := fmt.Sprintf("tools.%d", i)
			t, ok := object(el)
			if !ok {
				return req, "", bad("%s: Input should be a valid dictionary", at)
			}
			if typ, ok := t["type"]; ok {
				if v, _ := asString(typ); v != "custom" {
					return req, "", bad("%s.type: llmfake emulates custom tools only", at)
				}
			}
			if extra := unknownKeys(t, "type", "name", "description", "input_schema", "cache_control", "strict",
				"defer_loading", "eager_input_streaming", "allowed_callers", "input_examples"); len(extra) > 0 {
				return req, "", bad("%s.custom.%s: Extra inputs are not permitted", at, extra[0])
			}
			name, _ := asString(t["name"])
			if !anthropicToolName.MatchString(name) {
				return req, "", bad("%s.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'", at)
			}
			if seen[name] {
				return req, "", bad("tools: Tool names must be unique.")
			}
			seen[name] = true
			schema, ok := object(t["input_schema"])
			if !ok {
				return req, "", bad("%s.custom.input_schema: Field required", at)
			}
			if typ, _ := asString(schema["type"]); typ != "object" {
				return req, "", bad("%s.custom.input_schema.type: Input should be 'object'", at)
			}
			if inv := cacheControl(at, t); inv != nil {
				return req, "", inv
			}
			desc, _ := asString(t["description"])
			req.Tools = append(req.Tools, llm.Tool{Name: name, Description: desc, Schema: append(json.RawMessage(nil), t["input_schema"]...)})
		}
	}
	if raw, ok := top["tool_choice"]; ok {
		tc, ok := object(raw)
		if !ok {
			return req, "", bad("tool_choice: Input should be a valid dictionary")
		}
		switch typ, _ := asString(tc["type"]); typ {
		case "auto", "any", "none":
		case "tool":
			if name, _ := asString(tc["name"]); !slices.ContainsFunc(req.Tools, func(t llm.Tool) bool { return t.Name == name }) {
				return req, "", bad("tool_choice.tool.name: no tool named %q", name)
			}
		default:
			return req, "", bad("tool_choice.type: Input tag '%s' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'", typ)
		}
	}
	if raw, ok := top["stop_sequences"]; ok {
		arr, ok := asArray(raw)
		if !ok {
			return req, "", bad("stop_sequences: Input should be a valid list")
		}
		for i, el := range arr {
			v, ok := asString(el)
			if !ok {
				return req, "", bad("stop_sequences.%d: Input should be a valid string", i)
			}
			req.Stop = append(req.Stop, v)
		}
	}
	if raw, ok := top["temperature"]; ok {
		var t float64
		if json.Unmarshal(raw, &t) != nil || t < 0 || t > 1 {
			return req, "", bad("temperature: Input should be less than or equal to 1")
		}
		req.Temperature = &t
	}

	raw, ok = top["messages"]
	msgs, isArr := asArray(raw)
	switch {
	case !ok:
		return req, "", bad("messages: Field required")
	case !isArr:
		return req, "", bad("messages: Input should be a valid list")
	case len(msgs) == 0:
		return req, "", bad("messages: at least one message is required")
	}
	var pending []string // tool_use ids of the previous assistant message
	for i, el := range msgs {
		at := fmt.Sprintf("messages.%d", i)
		m, ok := object(el)
		if !ok {
			return req, "", bad("%s: Input should be a valid dictionary", at)
		}
		if extra := unknownKeys(m, "role", "content"); len(extra) > 0 {
			return req, "", bad("%s.%s: Extra inputs are not permitted", at, extra[0])
		}
		role, _ := asString(m["role"])
		if role == "system" { // a system message (2026-10-21): text only, joins the system prompt
			text, inv := textBlocks(at+".content", m["content"])
			if inv != nil {
				return req, "", inv
			}
			req.System = strings.TrimPrefix(req.System+"\n\n"+text, "\n\n")
			continue
		}
		if role != "user" && role != "assistant" {
			return req, "", bad("%s.role: Input should be 'user', 'assistant' or 'system'", at)
		}
		msg := llm.Message{Role: llm.Role(role)}
		var uses []string
		answered := map[string]bool{}
		if text, ok := asString(m["content"]); ok {
			if text == "" && role == "user" {
				return req, "", bad("%s: user messages must have non-empty content", at)
			}
			msg.Text = text
		} else {
			blocks, ok := asArray(m["content"])
			if !ok {
				return req, "", bad("%s.content: Field required", at)
			}
			if len(blocks) == 0 && role == "user" {
				return req, "", bad("%s: user messages must have non-empty content", at)
			}
			var text strings.Builder
			seenOther := false
			for j, bl := range blocks {
				bat := fmt.Sprintf("%s.content.%d", at, j)
				b, ok := object(bl)
				if !ok {
					return req, "", bad("%s: Input should be a valid dictionary", bat)
				}
				typ, _ := asString(b["type"])
				if inv := cacheControl(bat, b); inv != nil {
					return req, "", inv
				}
				switch {
				case typ == "text":
					if extra := unknownKeys(b, "type", "text", "cache_control", "citations"); len(extra) > 0 {
						return req, "", bad("%s.text.%s: Extra inputs are not permitted", bat, extra[0])
					}
					if c, ok := b["citations"]; ok && role == "user" && version == "2026-10-21" && !isNull(c) && string(c) != "[]" {
						return req, "", bad("%s.text.citations: citations are not accepted on user text blocks", bat)
					}
					t, _ := asString(b["text"])
					if t == "" {
						return req, "", bad("%s: text content blocks must be non-empty", bat)
					}
					text.WriteString(t)
					seenOther = true
				case typ == "tool_use" && role == "assistant":
					if extra := unknownKeys(b, "type", "id", "name", "input", "cache_control", "caller", "toolset_name"); len(extra) > 0 {
						return req, "", bad("%s.tool_use.%s: Extra inputs are not permitted", bat, extra[0])
					}
					id, _ := asString(b["id"])
					name, _ := asString(b["name"])
					if id == "" || !anthropicToolName.MatchString(name) {
						return req, "", bad("%s.tool_use: id and a valid name are required", bat)
					}
					if _, ok := object(b["input"]); !ok {
						return req, "", bad("%s.tool_use.input: Input should be a valid dictionary", bat)
					}
					uses = append(uses, id)
					msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: id, Name: name, Arguments: append(json.RawMessage(nil), b["input"]...)})
				case typ == "tool_result" && role == "user":
					if seenOther {
						return req, "", bad("%s: tool_result blocks must come before any other content in a user message", bat)
					}
					if extra := unknownKeys(b, "type", "tool_use_id", "content", "is_error", "cache_control", "toolset_name"); len(extra) > 0 {
						return req, "", bad("%s.tool_result.%s: Extra inputs are not permitted", bat, extra[0])
					}
					id, _ := asString(b["tool_use_id"])
					if !slices.Contains(pending, id) {
						return req, "", bad("%s: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", at, id)
					}
					answered[id] = true
					tr := llm.ToolResult{CallID: id}
					if c, ok := b["content"]; ok {
						content, inv := textBlocks(bat+".tool_result.content", c)
						if inv != nil {
							return req, "", inv
						}
						tr.Content = content
					}
					if e, ok := b["is_error"]; ok {
						v, ok := asBool(e)
						if !ok {
							return req, "", bad("%s.tool_result.is_error: Input should be a valid boolean", bat)
						}
						tr.IsError = v
					}
					msg.ToolResults = append(msg.ToolResults, tr)
				case (typ == "thinking" || typ == "redacted_thinking") && role == "assistant":
					if typ == "thinking" {
						t, _ := asString(b["thinking"])
						sig, _ := asString(b["signature"])
						msg.Thinking = append(msg.Thinking, llm.Thinking{Text: t, Signature: sig})
					} else {
						d, _ := asString(b["data"])
						msg.Thinking = append(msg.Thinking, llm.Thinking{Redacted: d})
					}
				default:
					return req, "", bad("%s: Input tag '%s' found using 'type' does not match any of the expected tags for a %s message", bat, typ, role)
				}
			}
			msg.Text = text.String()
		}
		if role == "user" {
			var missing []string
			for _, id := range pending {
				if !answered[id] {
					missing = append(missing, id)
				}
			}
			if len(missing) > 0 {
				return req, "", bad("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, strings.Join(missing, ", "))
			}
			pending = nil
		} else {
			if len(pending) > 0 {
				return req, "", bad("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, strings.Join(pending, ", "))
			}
			pending = uses
		}
		req.Messages = append(req.Messages, msg)
	}
	if len(pending) > 0 {
		return req, "", bad("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", len(msgs)-1, strings.Join(pending, ", "))
	}
	if breakpoints > 4 {
		return req, "", bad("A maximum of 4 blocks with cache_control may be provided. Found %d.", breakpoints)
	}
	return req, model, nil
}
