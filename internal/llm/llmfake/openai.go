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

var (
	openaiFields = []string{"model", "messages", "tools", "tool_choice", "max_tokens", "max_completion_tokens",
		"temperature", "top_p", "stop", "n", "stream", "stream_options", "parallel_tool_calls", "user", "seed",
		"response_format", "reasoning_effort", "metadata", "store", "logprobs", "top_logprobs", "frequency_penalty",
		"presence_penalty", "service_tier", "prompt_cache_key", "safety_identifier", "verbosity", "logit_bias"}
	openaiToolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
)

func (s *Server) openai(w http.ResponseWriter, r *http.Request) {
	rec, ok := s.read(w, r, "openai")
	if !ok {
		return
	}
	auth := r.Header.Get("Authorization")
	key, hasBearer := strings.CutPrefix(auth, "Bearer ")
	rec.Key = key
	if s.opts.APIKey != "" {
		switch {
		case !hasBearer || key == "":
			s.fail(w, rec, &llm.Failure{Status: 401, Message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."})
			return
		case key != s.opts.APIKey:
			// The real API echoes a masked key; so does the emulator, so
			// tests can check it never reaches a log.
			s.fail(w, rec, &llm.Failure{Status: 401, Code: "invalid_api_key",
				Message: fmt.Sprintf("Incorrect API key provided: %s. You can find your API key at https://platform.openai.com/account/api-keys.", maskKey(key))})
			return
		}
	}
	req, model, inv := s.openaiRequest(rec.Body)
	if inv != nil {
		s.failParam(w, rec, &llm.Failure{Status: 400, Message: inv.msg, Code: inv.code}, inv.param)
		return
	}
	if !s.knownModel(model) {
		s.fail(w, rec, &llm.Failure{Status: 404, Code: "model_not_found",
			Message: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", model)})
		return
	}
	if s.opts.NoTools && len(req.Tools) > 0 {
		// Ollama's answer for a model without tool support.
		s.fail(w, rec, &llm.Failure{Status: 400, Type: "api_error", Message: model + " does not support tools"})
		return
	}
	if slices.Contains(s.opts.ReasoningModels, model) {
		var top map[string]json.RawMessage
		_ = json.Unmarshal(rec.Body, &top)
		if _, ok := top["max_tokens"]; ok {
			s.fail(w, rec, &llm.Failure{Status: 400, Code: "unsupported_parameter",
				Message: "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."})
			return
		}
		if req.Temperature != nil && *req.Temperature != 1 {
			s.fail(w, rec, &llm.Failure{Status: 400, Code: "unsupported_value",
				Message: fmt.Sprintf("Unsupported value: 'temperature' does not support %v with this model. Only the default (1) value is supported.", *req.Temperature)})
			return
		}
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
	prompt := usage.InputTokens + usage.CacheReadTokens + usage.CacheWriteTokens
	cachedTokens := usage.CacheReadTokens
	if step.Usage == nil {
		// OpenAI caches prompts of 1024 tokens and more by itself, in
		// steps of 128; emulated over the tools and the system messages.
		var top map[string]json.RawMessage
		_ = json.Unmarshal(rec.Body, &top)
		prefix := append([]byte{}, top["tools"]...)
		prefix = append(prefix, []byte(req.System)...)
		if c, read := s.cache(model, prefix); read {
			cachedTokens = c / 128 * 128
			prompt = max(prompt, cachedTokens+1)
		}
	}
	message := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if resp.Text != "" {
		message["content"] = resp.Text
	}
	finish := "stop"
	switch resp.StopReason {
	case llm.StopToolUse:
		finish = "tool_calls"
	case llm.StopMaxTokens:
		finish = "length"
	case llm.StopRefusal:
		finish = "content_filter"
	}
	if len(resp.ToolCalls) > 0 {
		var calls []map[string]any
		for _, c := range resp.ToolCalls {
			calls = append(calls, map[string]any{"id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": string(c.Arguments)}})
		}
		message["tool_calls"] = calls
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id":      requestID("chatcmpl-", rec.Body),
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   resp.Model,
		"choices": []map[string]any{{"index": 0, "message": message, "logprobs": nil, "finish_reason": finish}},
		"usage": map[string]any{
			"prompt_tokens":             prompt,
			"completion_tokens":         usage.OutputTokens,
			"total_tokens":              prompt + usage.OutputTokens,
			"prompt_tokens_details":     map[string]any{"cached_tokens": cachedTokens, "audio_tokens": 0},
			"completion_tokens_details": map[string]any{"reasoning_tokens": 0, "audio_tokens": 0},
		},
		"system_fingerprint": nil,
	})
	s.finish(rec, http.StatusOK)
}

func maskKey(k string) string {
	if len(k) <= 8 {
		return "****"
	}
	return k[:3] + strings.Repeat("*", 4) + k[len(k)-4:]
}

// openaiRequest validates a Chat Completions body as the API does and
// decodes it into an llm.Request.
func (s *Server) openaiRequest(body []byte) (llm.Request, string, *invalid) {
	var req llm.Request
	top, ok := object(body)
	if !ok {
		return req, "", bad("We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.")
	}
	if extra := unknownKeys(top, openaiFields...); len(extra) > 0 {
		return req, "", bad("Unrecognized request argument supplied: %s", extra[0])
	}
	model, ok := asString(top["model"])
	if !ok || model == "" {
		return req, "", bad("you must provide a model parameter")
	}
	if raw, ok := top["stream"]; ok {
		if b, _ := asBool(raw); b {
			return req, "", bad("llmfake does not emulate streaming")
		}
	}
	if raw, ok := top["n"]; ok {
		if n, _ := asInt(raw); n != 1 {
			return req, "", bad("llmfake emulates n=1 only")
		}
	}
	_, hasMax := top["max_tokens"]
	_, hasMaxC := top["max_completion_tokens"]
	if hasMax && hasMaxC {
		return req, "", &invalid{msg: "max_tokens and max_completion_tokens cannot both be set", code: "invalid_value"}
	}
	for _, f := range []string{"max_tokens", "max_completion_tokens"} {
		if raw, ok := top[f]; ok && !isNull(raw) {
			n, ok := asInt(raw)
			if !ok || n < 1 {
				return req, "", &invalid{msg: fmt.Sprintf("Invalid '%s': integer below minimum value. Expected a value >= 1.", f), code: "integer_below_min_value"}
			}
			req.MaxOutputTokens = int(n)
		}
	}
	if raw, ok := top["temperature"]; ok && !isNull(raw) {
		var t float64
		if json.Unmarshal(raw, &t) != nil || t < 0 || t > 2 {
			return req, "", &invalid{msg: "Invalid 'temperature': decimal above maximum value. Expected a value <= 2.", code: "decimal_above_max_value"}
		}
		req.Temperature = &t
	}
	if raw, ok := top["stop"]; ok && !isNull(raw) {
		if v, ok := asString(raw); ok {
			req.Stop = []string{v}
		} else if arr, ok := asArray(raw); ok && len(arr) <= 4 {
			for _, el := range arr {
				v, ok := asString(el)
				if !ok {
					return req, "", bad("Invalid 'stop': expected a string or an array of strings.")
				}
				req.Stop = append(req.Stop, v)
			}
		} else {
			return req, "", bad("Invalid 'stop': expected a string or an array of at most 4 strings.")
		}
	}
	if raw, ok := top["tools"]; ok {
		tools, ok := asArray(raw)
		if !ok {
			return req, "", bad("Invalid type for 'tools': expected an array.")
		}
		for i, el := range tools {
			t, ok := object(el)
			if !ok {
				return req, "", bad("Invalid type for 'tools[%d]': expected an object.", i)
			}
			if extra := unknownKeys(t, "type", "function"); len(extra) > 0 {
				return req, "", bad("Unrecognized request argument supplied: tools[%d].%s", i, extra[0])
			}
			if typ, _ := asString(t["type"]); typ != "function" {
				return req, "", &invalid{msg: fmt.Sprintf("Invalid value: 'tools[%d].type'. Supported values are: 'function' and 'custom'.", i), code: "invalid_value"}
			}
			fn, ok := object(t["function"])
			if !ok {
				return req, "", bad("Missing required parameter: 'tools[%d].function'.", i)
			}
			if extra := unknownKeys(fn, "name", "description", "parameters", "strict"); len(extra) > 0 {
				return req, "", bad("Unrecognized request argument supplied: tools[%d].function.%s", i, extra[0])
			}
			name, _ := asString(fn["name"])
			if !openaiToolName.MatchString(name) {
				return req, "", &invalid{msg: fmt.Sprintf("Invalid 'tools[%d].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", i), code: "invalid_value"}
			}
			if slices.ContainsFunc(req.Tools, func(x llm.Tool) bool { return x.Name == name }) {
				return req, "", bad("Invalid 'tools': function names must be unique, %q appears twice.", name)
			}
			schema := json.RawMessage(`{"type":"object","properties":{}}`)
			if p, ok := fn["parameters"]; ok {
				obj, ok := object(p)
				if !ok {
					return req, "", bad("Invalid type for 'tools[%d].function.parameters': expected an object.", i)
				}
				if typ, _ := asString(obj["type"]); typ != "object" {
					return req, "", bad("Invalid schema for function '%s': schema must be a JSON Schema of 'type: \"object\"'.", name)
				}
				schema = append(json.RawMessage(nil), p...)
			}
			desc, _ := asString(fn["description"])
			req.Tools = append(req.Tools, llm.Tool{Name: name, Description: desc, Schema: schema})
		}
	}
	raw, ok := top["messages"]
	msgs, isArr := asArray(raw)
	switch {
	case !ok:
		return req, "", bad("Missing required parameter: 'messages'.")
	case !isArr:
		return req, "", bad("Invalid type for 'messages': expected an array of objects.")
	case len(msgs) == 0:
		return req, "", &invalid{msg: "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", code: "empty_array"}
	}
	content := func(i int, raw json.RawMessage, nullable bool) (string, *invalid) {
		if isNull(raw) || raw == nil {
			if nullable {
				return "", nil
			}
			return "", bad("Invalid value for 'messages[%d].content': expected a string or an array of content parts.", i)
		}
		if v, ok := asString(raw); ok {
			return v, nil
		}
		parts, ok := asArray(raw)
		if !ok {
			return "", bad("Invalid type for 'messages[%d].content': expected one of a string or array of objects.", i)
		}
		var b strings.Builder
		for j, p := range parts {
			o, ok := object(p)
			if !ok {
				return "", bad("Invalid type for 'messages[%d].content[%d]': expected an object.", i, j)
			}
			if typ, _ := asString(o["type"]); typ != "text" {
				return "", &invalid{msg: fmt.Sprintf("Invalid value: 'messages[%d].content[%d].type'. llmfake emulates text parts only.", i, j), code: "invalid_value"}
			}
			t, _ := asString(o["text"])
			b.WriteString(t)
		}
		return b.String(), nil
	}
	var pending []string // tool_call ids of the last assistant message still unanswered
	var system []string
	for i, el := range msgs {
		m, ok := object(el)
		if !ok {
			return req, "", bad("Invalid type for 'messages[%d]': expected an object.", i)
		}
		role, _ := asString(m["role"])
		if role != "tool" && len(pending) > 0 {
			return req, "", &invalid{msg: fmt.Sprintf("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(pending, ", ")), param: fmt.Sprintf("messages.[%d].role", i)}
		}
		switch role {
		case "system", "developer":
			if extra := unknownKeys(m, "role", "content", "name"); len(extra) > 0 {
				return req, "", bad("Unrecognized request argument supplied: messages[%d].%s", i, extra[0])
			}
			t, inv := content(i, m["content"], false)
			if inv != nil {
				return req, "", inv
			}
			system = append(system, t)
		case "user":
			if extra := unknownKeys(m, "role", "content", "name"); len(extra) > 0 {
				return req, "", bad("Unrecognized request argument supplied: messages[%d].%s", i, extra[0])
			}
			t, inv := content(i, m["content"], false)
			if inv != nil {
				return req, "", inv
			}
			if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == llm.RoleUser && req.Messages[n-1].Text == "" {
				req.Messages[n-1].Text = t // text after the tool messages: one user turn
			} else {
				req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Text: t})
			}
		case "assistant":
			if extra := unknownKeys(m, "role", "content", "name", "tool_calls", "refusal", "audio", "function_call"); len(extra) > 0 {
				return req, "", bad("Unrecognized request argument supplied: messages[%d].%s", i, extra[0])
			}
			t, inv := content(i, m["content"], true)
			if inv != nil {
				return req, "", inv
			}
			msg := llm.Message{Role: llm.RoleAssistant, Text: t}
			if raw, ok := m["tool_calls"]; ok && !isNull(raw) {
				calls, ok := asArray(raw)
				if !ok {
					return req, "", bad("Invalid type for 'messages[%d].tool_calls': expected an array.", i)
				}
				for j, c := range calls {
					co, ok := object(c)
					if !ok {
						return req, "", bad("Invalid type for 'messages[%d].tool_calls[%d]': expected an object.", i, j)
					}
					id, _ := asString(co["id"])
					fn, _ := object(co["function"])
					name, _ := asString(fn["name"])
					args, ok := asString(fn["arguments"])
					if typ, _ := asString(co["type"]); typ != "function" || id == "" || name == "" || !ok {
						return req, "", bad("Invalid 'messages[%d].tool_calls[%d]': want id, type 'function' and function.name and function.arguments (a string).", i, j)
					}
					pending = append(pending, id)
					msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)})
				}
			}
			if t == "" && len(msg.ToolCalls) == 0 {
				return req, "", bad("Invalid value for 'messages[%d].content': an assistant message needs content or tool_calls.", i)
			}
			req.Messages = append(req.Messages, msg)
		case "tool":
			if extra := unknownKeys(m, "role", "content", "tool_call_id"); len(extra) > 0 {
				return req, "", bad("Unrecognized request argument supplied: messages[%d].%s", i, extra[0])
			}
			id, _ := asString(m["tool_call_id"])
			if !slices.Contains(pending, id) {
				return req, "", &invalid{msg: "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", param: fmt.Sprintf("messages.[%d].role", i)}
			}
			pending = slices.DeleteFunc(pending, func(p string) bool { return p == id })
			t, inv := content(i, m["content"], false)
			if inv != nil {
				return req, "", inv
			}
			tr := llm.ToolResult{CallID: id, Content: t}
			if rest, ok := strings.CutPrefix(t, "ERROR: "); ok {
				tr.Content, tr.IsError = rest, true
			}
			if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == llm.RoleUser && req.Messages[n-1].Text == "" {
				req.Messages[n-1].ToolResults = append(req.Messages[n-1].ToolResults, tr)
			} else {
				req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, ToolResults: []llm.ToolResult{tr}})
			}
		default:
			return req, "", &invalid{msg: fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", role), param: fmt.Sprintf("messages[%d].role", i), code: "invalid_value"}
		}
	}
	if len(pending) > 0 {
		return req, "", &invalid{msg: fmt.Sprintf("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(pending, ", ")), param: fmt.Sprintf("messages.[%d].role", len(msgs)-1)}
	}
	req.System = strings.Join(system, "\n\n")
	if req.MaxOutputTokens == 0 {
		req.MaxOutputTokens = 4096 // the server's default when the request sets none
	}
	return req, model, nil
}
