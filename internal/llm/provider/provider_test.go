package provider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/llm/llmfake"
	"github.com/quavon/quavon/internal/llm/provider"
)

const testKey = "sk-test-CANARYKEY-4f9a2c7e11"

type readArgs struct {
	Path string `json:"path"`
}

var readTool = llm.MustTool[readArgs]("read_file", "Reads a file of the repository", llm.ToolLimits{})

type backend struct {
	name string
	ep   func(*llmfake.Server) provider.Endpoint
}

var backends = []backend{
	{"anthropic", func(s *llmfake.Server) provider.Endpoint {
		return provider.Endpoint{Provider: "anthropic", Model: "claude-sonnet-5-5", BaseURL: s.AnthropicURL(), APIKey: testKey,
			Price: llm.DefaultPrices()["claude-sonnet-5-5"], Timeout: 10 * time.Second}
	}},
	{"openai", func(s *llmfake.Server) provider.Endpoint {
		return provider.Endpoint{Provider: "openai", Model: "gpt-5", BaseURL: s.OpenAIURL(), APIKey: testKey,
			Price: llm.DefaultPrices()["gpt-5"], Timeout: 10 * time.Second, MaxTokensParam: "max_completion_tokens"}
	}},
}

func newModel(t *testing.T, b backend, opts llmfake.Options) (llm.Model, *llmfake.Server) {
	t.Helper()
	if opts.APIKey == "" {
		opts.APIKey = testKey
	}
	if opts.Models == nil {
		opts.Models = []string{"claude-sonnet-5-5", "gpt-5"}
	}
	s := llmfake.New(opts)
	t.Cleanup(s.Close)
	m, err := provider.New(b.ep(s))
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

func ask(text string) llm.Request {
	return llm.Request{System: "You are a test.", MaxOutputTokens: 256, Tools: []llm.Tool{readTool},
		Messages: []llm.Message{{Role: llm.RoleUser, Text: text}}}
}

// Text, one and several tool calls, tool results going back, usage and
// stop reasons, through each real SDK and the emulator's strict checks.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			usage := &llm.Usage{InputTokens: 120, OutputTokens: 30}
			m, s := newModel(t, b, llmfake.Options{Script: llm.Steps(
				llm.Step{Text: "hello", Usage: usage},
				llm.Step{Text: "reading", ToolCalls: []llm.ToolCall{{Name: "read_file", Arguments: json.RawMessage(`{"path":"a.go"}`)}}, Usage: usage},
				llm.Step{ToolCalls: []llm.ToolCall{
					{Name: "read_file", Arguments: json.RawMessage(`{"path":"b.go"}`)},
					{Name: "read_file", Arguments: json.RawMessage(`{"path":"c.go"}`)},
				}},
				llm.Step{Text: "cut", StopReason: llm.StopMaxTokens},
			)})
			ctx := context.Background()
			resp, err := m.Complete(ctx, ask("say hello"))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != "hello" || resp.StopReason != llm.StopEndTurn || resp.Usage.InputTokens != 120 || resp.Usage.OutputTokens != 30 {
				t.Fatalf("text answer: %+v", resp)
			}
			if resp.Cost != m.Info().Price.Cost(resp.Usage) || resp.Cost == 0 {
				t.Fatalf("cost %v", resp.Cost)
			}
			conv := ask("read a.go")
			resp, err = m.Complete(ctx, conv)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StopReason != llm.StopToolUse || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "read_file" || resp.Text != "reading" {
				t.Fatalf("one tool call: %+v", resp)
			}
			if a, err := llm.DecodeArgs[readArgs](readTool, resp.ToolCalls[0].Arguments); err != nil || a.Path != "a.go" {
				t.Fatalf("arguments: %+v %v", a, err)
			}
			conv.Messages = append(conv.Messages, resp.Message(), llm.Message{Role: llm.RoleUser,
				ToolResults: []llm.ToolResult{{CallID: resp.ToolCalls[0].ID, Content: "package a"}}})
			resp, err = m.Complete(ctx, conv)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.ToolCalls) != 2 || resp.ToolCalls[0].ID == resp.ToolCalls[1].ID {
				t.Fatalf("two tool calls: %+v", resp)
			}
			conv.Messages = append(conv.Messages, resp.Message(), llm.Message{Role: llm.RoleUser, Text: "go on", ToolResults: []llm.ToolResult{
				{CallID: resp.ToolCalls[0].ID, Content: "package b"},
				{CallID: resp.ToolCalls[1].ID, Content: "no such file", IsError: true},
			}})
			resp, err = m.Complete(ctx, conv)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StopReason != llm.StopMaxTokens || resp.Text != "cut" {
				t.Fatalf("max tokens: %+v", resp)
			}
			// What the emulator decoded from the last request is the conversation.
			reqs := s.Requests()
			last := reqs[len(reqs)-1].Request
			if last.System != "You are a test." || len(last.Tools) != 1 || last.Tools[0].Name != "read_file" || len(last.Messages) != 5 {
				t.Fatalf("last request decoded as %+v", last)
			}
			final := last.Messages[4]
			if final.Text != "go on" || len(final.ToolResults) != 2 || final.ToolResults[1].Content != "no such file" || !final.ToolResults[1].IsError {
				t.Fatalf("tool results sent as %+v", final)
			}
			var schema map[string]any
			if err := json.Unmarshal(last.Tools[0].Schema, &schema); err != nil || schema["additionalProperties"] != false {
				t.Fatalf("tool schema sent as %s", last.Tools[0].Schema)
			}
			for _, r := range reqs {
				if r.Status != 200 || r.Key != testKey {
					t.Fatalf("request answered %d with key %q", r.Status, r.Key)
				}
			}
		})
	}
}

func TestErrorsMapToKinds(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fail := func(status int, typ, code, after string) llm.Step {
				return llm.Step{Fail: &llm.Failure{Status: status, Type: typ, Code: code, RetryAfter: after}}
			}
			m, s := newModel(t, b, llmfake.Options{Script: llm.Steps(
				fail(400, "invalid_request_error", "", ""),
				fail(429, "rate_limit_error", "", "7"),
				fail(529, "overloaded_error", "", ""),
				fail(500, "api_error", "", ""),
				fail(429, "rate_limit_error", "insufficient_quota", ""),
			)})
			for _, want := range []error{llm.ErrBadRequest, llm.ErrRateLimited, llm.ErrOverloaded, llm.ErrServer, llm.ErrQuota} {
				_, err := m.Complete(context.Background(), ask("x"))
				if !errors.Is(err, want) {
					t.Errorf("err %v, want %v", err, want)
				}
				var ae *llm.APIError
				if errors.As(err, &ae) && want == llm.ErrRateLimited && ae.RetryAfter != 7*time.Second {
					t.Errorf("retry-after %v, want 7s", ae.RetryAfter)
				}
			}
			// A wrong key and an unknown model, refused by the emulator itself.
			ep := b.ep(s)
			ep.APIKey = "sk-wrong-CANARYWRONG-88112233"
			wrong, _ := provider.New(ep)
			_, err := wrong.Complete(context.Background(), ask("x"))
			if !errors.Is(err, llm.ErrAuth) {
				t.Errorf("wrong key: %v", err)
			}
			if strings.Contains(err.Error(), "CANARYWRONG") || strings.Contains(err.Error(), "8112233") || strings.Contains(err.Error(), "2233") {
				t.Errorf("the auth error echoes the key: %v", err)
			}
			ep = b.ep(s)
			ep.Model = "no-such-model"
			unknown, _ := provider.New(ep)
			if _, err := unknown.Complete(context.Background(), ask("x")); !errors.Is(err, llm.ErrUnknownModel) || !strings.Contains(err.Error(), "no-such-model") {
				t.Errorf("unknown model: %v", err)
			}
		})
	}
}

// The SDKs' own retries are off and WithRetry decides: it retries 429 and
// 529 with the server's retry-after and stops at its bound.
func TestRetriesThroughTheSDK(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			m, s := newModel(t, b, llmfake.Options{Script: llm.Steps(
				llm.Step{Fail: &llm.Failure{Status: 429, RetryAfter: "1"}},
				llm.Step{Fail: &llm.Failure{Status: 529, Type: "overloaded_error"}},
				llm.Answer("done"),
				llm.Step{Fail: &llm.Failure{Status: 400}},
				llm.Step{Fail: &llm.Failure{Status: 503}}, llm.Step{Fail: &llm.Failure{Status: 503}}, llm.Step{Fail: &llm.Failure{Status: 503}},
			)})
			var waits []time.Duration
			r := llm.WithRetry(m, llm.RetryPolicy{MaxRetries: 2, MaxWait: time.Minute, Sleep: func(_ context.Context, d time.Duration) error {
				waits = append(waits, d)
				return nil
			}})
			resp, err := r.Complete(context.Background(), ask("x"))
			if err != nil || resp.Text != "done" || resp.Retries != 2 || s.Calls() != 3 {
				t.Fatalf("resp %+v err %v after %d calls", resp, err, s.Calls())
			}
			if waits[0] != time.Second {
				t.Fatalf("first wait %v, want the retry-after of 1s", waits[0])
			}
			if _, err := r.Complete(context.Background(), ask("x")); !errors.Is(err, llm.ErrBadRequest) || s.Calls() != 4 {
				t.Fatalf("400 retried: %v, %d calls", err, s.Calls())
			}
			if _, err := r.Complete(context.Background(), ask("x")); !errors.Is(err, llm.ErrServer) || s.Calls() != 7 || llm.RetriesOf(err) != 2 {
				t.Fatalf("5xx: %v after %d calls", err, s.Calls())
			}
		})
	}
}

func TestToolsUnsupported(t *testing.T) {
	t.Parallel()
	m, _ := newModel(t, backends[1], llmfake.Options{APIKey: "", NoTools: true})
	_, err := m.Complete(context.Background(), ask("x"))
	if !errors.Is(err, llm.ErrToolsUnsupported) || !strings.Contains(err.Error(), "tool support") {
		t.Fatalf("Ollama without tools: %v", err)
	}
	if _, err := llm.Probe(context.Background(), m); !errors.Is(err, llm.ErrToolsUnsupported) {
		t.Fatalf("probe: %v", err)
	}
}

func TestProbe(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			m, _ := newModel(t, b, llmfake.Options{Script: llm.Steps(
				llm.Call("quavon_probe", map[string]string{"word": "ready"}),
				llm.Answer(`I would call quavon_probe with {"word": "ready"}`),
				llm.MalformedCall("quavon_probe"),
				llm.Call("read_file", map[string]string{"path": "x"}),
				llm.Call("quavon_probe", map[string]any{"word": "ready", "extra": true}),
			)})
			if _, err := llm.Probe(context.Background(), m); err != nil {
				t.Fatalf("a good model fails the probe: %v", err)
			}
			for _, want := range []error{llm.ErrProbeNoToolCall, llm.ErrProbeBadArguments, llm.ErrProbeWrongTool, llm.ErrProbeBadArguments} {
				if _, err := llm.Probe(context.Background(), m); !errors.Is(err, want) {
					t.Errorf("probe: %v, want %v", err, want)
				}
			}
		})
	}
}

// The anthropic provider marks the system prompt and the tool list for
// caching, and a second call reads what the first wrote.
func TestAnthropicPromptCaching(t *testing.T) {
	t.Parallel()
	m, s := newModel(t, backends[0], llmfake.Options{})
	req := ask("x")
	req.System = strings.Repeat("Review for injection and secrets. ", 200)
	first, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	second, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if first.Usage.CacheWriteTokens == 0 || second.Usage.CacheReadTokens == 0 {
		t.Fatalf("cache write %d then read %d", first.Usage.CacheWriteTokens, second.Usage.CacheReadTokens)
	}
	body := string(s.Requests()[0].Body)
	if strings.Count(body, `"cache_control"`) != 2 {
		t.Fatalf("want breakpoints on the system prompt and the last tool: %s", body)
	}
	if second.Cost >= first.Cost {
		t.Fatalf("a cache read costs %v, the write %v", second.Cost, first.Cost)
	}
}

// The v2 SDK speaks API version 2026-10-21, which refuses temperature: the
// provider leaves it out rather than fail every call.
func TestAnthropicLeavesOutTemperature(t *testing.T) {
	t.Parallel()
	m, s := newModel(t, backends[0], llmfake.Options{})
	req := ask("x")
	temp := 0.2
	req.Temperature = &temp
	if _, err := m.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	r := s.Requests()[0]
	if r.Header.Get("Anthropic-Version") != "2026-10-21" || strings.Contains(string(r.Body), "temperature") {
		t.Fatalf("version %q body %s", r.Header.Get("Anthropic-Version"), r.Body)
	}
}

// OpenAI's newer models refuse max_tokens; compatible servers read it.
func TestOpenAIMaxTokensParam(t *testing.T) {
	t.Parallel()
	s := llmfake.New(llmfake.Options{APIKey: testKey, ReasoningModels: []string{"gpt-5"}})
	t.Cleanup(s.Close)
	ep := backends[1].ep(s)
	m, _ := provider.New(ep)
	if _, err := m.Complete(context.Background(), ask("x")); err != nil {
		t.Fatalf("max_completion_tokens: %v", err)
	}
	ep.MaxTokensParam = "max_tokens"
	m, _ = provider.New(ep)
	if _, err := m.Complete(context.Background(), ask("x")); !errors.Is(err, llm.ErrBadRequest) || !strings.Contains(err.Error(), "max_completion_tokens") {
		t.Fatalf("max_tokens to a reasoning model: %v", err)
	}
}

// The SDKs read no ANTHROPIC_* or OPENAI_* variable: configuration comes
// from internal/config only.
func TestSDKsIgnoreTheEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1/")
	t.Setenv("ANTHROPIC_API_KEY", "sk-env")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1/")
	t.Setenv("OPENAI_API_KEY", "sk-env")
	t.Setenv("OPENAI_ORG_ID", "org-env")
	for _, b := range backends {
		m, s := newModel(t, b, llmfake.Options{})
		if _, err := m.Complete(context.Background(), ask("x")); err != nil {
			t.Fatalf("%s: %v", b.name, err)
		}
		r := s.Requests()[0]
		if r.Key != testKey || r.Header.Get("Openai-Organization") != "" {
			t.Fatalf("%s: key %q, organization %q", b.name, r.Key, r.Header.Get("Openai-Organization"))
		}
	}
}

func writeKey(t *testing.T, key string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(p, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func loadLLM(t *testing.T, env ...string) config.LLM {
	t.Helper()
	c, err := config.LoadLLM(env)
	if err != nil {
		t.Fatal(err)
	}
	return c.LLM
}

// FromConfig: per-feature endpoints, the price table and its override,
// and logs without prompt, output or key.
func TestFromConfig(t *testing.T) {
	t.Parallel()
	s := llmfake.New(llmfake.Options{APIKey: testKey})
	t.Cleanup(s.Close)
	keyFile := writeKey(t, testKey)
	cfg := loadLLM(t, "QUAVON_LLM_PROVIDER=anthropic", "QUAVON_LLM_MODEL=claude-sonnet-5-5",
		"QUAVON_LLM_BASE_URL="+s.AnthropicURL(), "QUAVON_LLM_API_KEY_FILE="+keyFile,
		"QUAVON_LLM_ACCEPTANCE_PROVIDER=openai", "QUAVON_LLM_ACCEPTANCE_MODEL=local-judge",
		"QUAVON_LLM_ACCEPTANCE_BASE_URL="+s.OpenAIURL(), "QUAVON_LLM_ACCEPTANCE_API_KEY_FILE="+keyFile,
		`QUAVON_LLM_PRICES={"local-judge":{"input":0,"output":0,"cache_read":0,"cache_write":0}}`,
		"QUAVON_LLM_MAX_RETRIES=0")
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	fix, err := provider.FromConfig(cfg, llm.FeatureFix, logger)
	if err != nil {
		t.Fatal(err)
	}
	judge, err := provider.FromConfig(cfg, llm.FeatureAcceptance, logger)
	if err != nil {
		t.Fatal(err)
	}
	if fix.Info().Provider != "anthropic" || judge.Info().Provider != "openai" || judge.Info().Model != "local-judge" {
		t.Fatalf("fix %+v judge %+v", fix.Info(), judge.Info())
	}
	const canary = "CANARY-PROMPT-31337"
	for _, m := range []llm.Model{fix, judge} {
		if _, err := m.Complete(context.Background(), ask(canary)); err != nil {
			t.Fatal(err)
		}
	}
	if reqs := s.Requests(); len(reqs) != 2 || reqs[0].API != "anthropic" || reqs[1].API != "openai" {
		t.Fatalf("requests %+v", reqs)
	}
	// A refused key: the 401 echoes a masked key, which must not reach the log.
	wrongCfg := loadLLM(t, "QUAVON_LLM_PROVIDER=openai", "QUAVON_LLM_MODEL=gpt-5", "QUAVON_LLM_BASE_URL="+s.OpenAIURL(),
		"QUAVON_LLM_API_KEY_FILE="+writeKey(t, "sk-wrong-CANARYLEAK-99887766"))
	wrong, err := provider.FromConfig(wrongCfg, llm.FeatureReview, logger)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wrong.Complete(context.Background(), ask(canary)); !errors.Is(err, llm.ErrAuth) {
		t.Fatalf("wrong key: %v", err)
	}
	out := logs.String()
	for _, secret := range []string{testKey, "CANARYKEY", "CANARYLEAK", "7766", canary, "ok\""} {
		if strings.Contains(out, secret) {
			t.Errorf("log holds %q:\n%s", secret, out)
		}
	}
	if strings.Count(out, `"msg":"llm call"`) != 2 || !strings.Contains(out, `"error_kind":"auth"`) {
		t.Errorf("log lacks the calls:\n%s", out)
	}

	if _, err := provider.FromConfig(loadLLM(t), llm.FeatureReview, nil); !errors.Is(err, provider.ErrNotConfigured) {
		t.Fatalf("no provider: %v", err)
	}
	noPrice := loadLLM(t, "QUAVON_LLM_PROVIDER=openai", "QUAVON_LLM_MODEL=llama3.1:8b", "QUAVON_LLM_BASE_URL=http://127.0.0.1:11434/v1/")
	if _, err := provider.FromConfig(noPrice, llm.FeatureReview, nil); err == nil || !strings.Contains(err.Error(), "QUAVON_LLM_PRICES") {
		t.Fatalf("a model without a price: %v", err)
	}
}

func TestRunBudgetFromConfig(t *testing.T) {
	t.Parallel()
	cfg := loadLLM(t, "QUAVON_LLM_FIX_RUN_MAX_TOKENS=5000", "QUAVON_LLM_FIX_RUN_MAX_COST_USD=0.01")
	b, err := provider.RunBudget(cfg, llm.FeatureFix, nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	m := llm.NewScripted(llm.Steps(llm.Answer("ok")), "m", llm.Price{Input: 3, Output: 15})
	_, err = b.Model(m).Complete(context.Background(), llm.Request{MaxOutputTokens: 6000, Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}})
	var be *llm.BudgetExceededError
	if !errors.As(err, &be) || m.Calls() != 0 {
		t.Fatalf("over the configured run ceiling: %v (%d calls)", err, m.Calls())
	}
}
