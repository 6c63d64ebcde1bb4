package llmfake

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func post(t *testing.T, url string, header map[string]string, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("answer is not JSON: %s", raw)
	}
	return resp.StatusCode, doc
}

// Malformed Messages requests get the API's 400 (or 401) before the script
// is asked anything.
func TestAnthropicRefusesMalformedRequests(t *testing.T) {
	t.Parallel()
	s := New(Options{APIKey: "k"})
	defer s.Close()
	h := map[string]string{"x-api-key": "k", "anthropic-version": "2026-10-21"}
	user := `{"role":"user","content":"hi"}`
	call := `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"t","input":{}}]}`
	result := `{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"r"}]}`
	msgs := func(m ...string) string { return `"messages":[` + strings.Join(m, ",") + `]` }
	base := `"model":"m","max_tokens":10,`
	cases := []struct {
		name   string
		header map[string]string
		body   string
		status int
		want   string
	}{
		{"no key", map[string]string{"anthropic-version": "2026-10-21"}, `{` + base + msgs(user) + `}`, 401, "x-api-key"},
		{"wrong key", map[string]string{"x-api-key": "bad", "anthropic-version": "2026-10-21"}, `{` + base + msgs(user) + `}`, 401, "invalid x-api-key"},
		{"no version", map[string]string{"x-api-key": "k"}, `{` + base + msgs(user) + `}`, 400, "anthropic-version"},
		{"unknown field", h, `{` + base + `"foo":1,` + msgs(user) + `}`, 400, "foo: Extra inputs are not permitted"},
		{"temperature in 2026-10-21", h, `{` + base + `"temperature":1,` + msgs(user) + `}`, 400, "temperature: Extra inputs"},
		{"no max_tokens", h, `{"model":"m",` + msgs(user) + `}`, 400, "max_tokens: Field required"},
		{"no messages", h, `{` + base + `"messages":[]}`, 400, "at least one message"},
		{"bad role", h, `{` + base + msgs(`{"role":"robot","content":"x"}`) + `}`, 400, "role"},
		{"empty text", h, `{` + base + msgs(`{"role":"user","content":[{"type":"text","text":""}]}`) + `}`, 400, "non-empty"},
		{"tool_use without result", h, `{` + base + msgs(user, call, user) + `}`, 400, "without `tool_result` blocks immediately after"},
		{"tool_use last", h, `{` + base + msgs(user, call) + `}`, 400, "without `tool_result`"},
		{"stray tool_result", h, `{` + base + msgs(user, `{"role":"assistant","content":"a"}`, result) + `}`, 400, "unexpected `tool_use_id`"},
		{"result after text", h, `{` + base + msgs(user, call, `{"role":"user","content":[{"type":"text","text":"x"},{"type":"tool_result","tool_use_id":"toolu_1"}]}`) + `}`, 400, "must come before"},
		{"tool_use in a user turn", h, `{` + base + msgs(`{"role":"user","content":[{"type":"tool_use","id":"a","name":"t","input":{}}]}`) + `}`, 400, "does not match"},
		{"input not an object", h, `{` + base + msgs(user, `{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"t","input":"x"}]}`, result) + `}`, 400, "valid dictionary"},
		{"bad tool name", h, `{` + base + `"tools":[{"name":"a b","input_schema":{"type":"object"}}],` + msgs(user) + `}`, 400, "pattern"},
		{"duplicate tools", h, `{` + base + `"tools":[{"name":"a","input_schema":{"type":"object"}},{"name":"a","input_schema":{"type":"object"}}],` + msgs(user) + `}`, 400, "unique"},
		{"schema not an object", h, `{` + base + `"tools":[{"name":"a","input_schema":{"type":"string"}}],` + msgs(user) + `}`, 400, "'object'"},
		{"five breakpoints", h, `{` + base + `"system":[` + strings.Repeat(`{"type":"text","text":"s","cache_control":{"type":"ephemeral"}},`, 4) + `{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],` + msgs(user) + `}`, 400, "maximum of 4"},
		{"streaming", h, `{` + base + `"stream":true,` + msgs(user) + `}`, 400, "stream"},
		{"not JSON", h, `{`, 400, "parsing"},
	}
	for _, c := range cases {
		status, doc := post(t, s.URL+"/v1/messages", c.header, c.body)
		e, _ := doc["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if status != c.status || doc["type"] != "error" || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %d %v, want %d with %q", c.name, status, doc, c.status, c.want)
		}
	}
	if s.Calls() != 0 {
		t.Fatalf("the script answered %d malformed requests", s.Calls())
	}
	if got := len(s.Requests()); got != len(cases) {
		t.Fatalf("%d requests recorded, want %d", got, len(cases))
	}
	// The old API version still takes temperature.
	status, _ := post(t, s.URL+"/v1/messages", map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"}, `{`+base+`"temperature":0.5,`+msgs(user, call, result)+`}`)
	if status != 200 {
		t.Fatalf("a valid 2023-06-01 request: %d", status)
	}
}

func TestOpenAIRefusesMalformedRequests(t *testing.T) {
	t.Parallel()
	s := New(Options{APIKey: "sk-proj-abcdefghijkl", Models: []string{"m"}})
	defer s.Close()
	h := map[string]string{"Authorization": "Bearer sk-proj-abcdefghijkl"}
	user := `{"role":"user","content":"hi"}`
	call := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"t","arguments":"{}"}}]}`
	msgs := func(m ...string) string { return `"messages":[` + strings.Join(m, ",") + `]` }
	cases := []struct {
		name   string
		header map[string]string
		body   string
		status int
		want   string
	}{
		{"no key", nil, `{"model":"m",` + msgs(user) + `}`, 401, "didn't provide an API key"},
		{"wrong key", map[string]string{"Authorization": "Bearer sk-proj-zzzzzzzz9999"}, `{"model":"m",` + msgs(user) + `}`, 401, "Incorrect API key provided: sk-****9999"},
		{"unknown model", h, `{"model":"x",` + msgs(user) + `}`, 404, "does not exist"},
		{"unknown argument", h, `{"model":"m","foo":1,` + msgs(user) + `}`, 400, "Unrecognized request argument supplied: foo"},
		{"no model", h, `{` + msgs(user) + `}`, 400, "model parameter"},
		{"empty messages", h, `{"model":"m","messages":[]}`, 400, "empty array"},
		{"bad role", h, `{"model":"m",` + msgs(`{"role":"robot","content":"x"}`) + `}`, 400, "Supported values"},
		{"tool without call", h, `{"model":"m",` + msgs(user, `{"role":"tool","tool_call_id":"call_1","content":"r"}`) + `}`, 400, "must be a response to a preceeding message with 'tool_calls'"},
		{"unanswered call", h, `{"model":"m",` + msgs(user, call, user) + `}`, 400, "did not have response messages: call_1"},
		{"arguments not a string", h, `{"model":"m",` + msgs(user, `{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"t","arguments":{}}}]}`, `{"role":"tool","tool_call_id":"c","content":"r"}`) + `}`, 400, "arguments"},
		{"bad tool name", h, `{"model":"m","tools":[{"type":"function","function":{"name":"a b"}}],` + msgs(user) + `}`, 400, "pattern"},
		{"both max fields", h, `{"model":"m","max_tokens":5,"max_completion_tokens":5,` + msgs(user) + `}`, 400, "cannot both"},
		{"streaming", h, `{"model":"m","stream":true,` + msgs(user) + `}`, 400, "streaming"},
	}
	for _, c := range cases {
		status, doc := post(t, s.URL+"/v1/chat/completions", c.header, c.body)
		e, _ := doc["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if status != c.status || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %d %v, want %d with %q", c.name, status, doc, c.status, c.want)
		}
		if _, ok := e["param"]; !ok {
			t.Errorf("%s: error without param: %v", c.name, doc)
		}
	}
	if s.Calls() != 0 {
		t.Fatalf("the script answered %d malformed requests", s.Calls())
	}
	status, doc := post(t, s.URL+"/v1/chat/completions", h, `{"model":"m",`+msgs(user, call, `{"role":"tool","tool_call_id":"call_1","content":"r"}`)+`}`)
	if status != 200 || doc["object"] != "chat.completion" {
		t.Fatalf("valid request: %d %v", status, doc)
	}
}
