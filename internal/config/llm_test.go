package config

import (
	"strings"
	"testing"
	"time"
)

func TestLLMDefaults(t *testing.T) {
	t.Parallel()
	c, err := LoadLLM(nil)
	if err != nil {
		t.Fatal(err)
	}
	l := c.LLM
	if l.Review.Provider != "" || l.RequestTimeout != 5*time.Minute || l.MaxRetries != 4 || l.RetryMaxWait != 2*time.Minute {
		t.Fatalf("defaults %+v", l)
	}
	if l.Fix.RunMaxCostMicros != 10_000_000 || l.Acceptance.RunMaxCostMicros != 500_000 || l.Review.DailyMaxTokens != 50_000_000 {
		t.Fatalf("budget defaults %+v", l)
	}
}

func TestLLMFeatureOverrides(t *testing.T) {
	t.Parallel()
	c, err := LoadLLM([]string{"QUAVON_LLM_PROVIDER=anthropic", "QUAVON_LLM_MODEL=claude-sonnet-5-5", "QUAVON_LLM_API_KEY_FILE=/run/secrets/anthropic",
		"QUAVON_LLM_ACCEPTANCE_MODEL=claude-haiku-5-5",
		"QUAVON_LLM_FIX_PROVIDER=openai", "QUAVON_LLM_FIX_MODEL=qwen3-coder", "QUAVON_LLM_FIX_BASE_URL=http://127.0.0.1:8000/v1",
		`QUAVON_LLM_PRICES={"qwen3-coder":{"input":0,"output":0,"cache_read":0,"cache_write":0}}`})
	if err != nil {
		t.Fatal(err)
	}
	l := c.LLM
	if l.Review.Model != "claude-sonnet-5-5" || l.Acceptance.Model != "claude-haiku-5-5" || l.Acceptance.APIKeyFile != "/run/secrets/anthropic" {
		t.Fatalf("review %+v acceptance %+v", l.Review, l.Acceptance)
	}
	// Another provider inherits neither the key nor the base URL.
	if l.Fix.Provider != "openai" || l.Fix.APIKeyFile != "" || l.Fix.BaseURL != "http://127.0.0.1:8000/v1" {
		t.Fatalf("fix %+v", l.Fix)
	}
	if _, ok := l.Prices["qwen3-coder"]; !ok {
		t.Fatal("price override lost")
	}
	if f, err := l.Feature("fix"); err != nil || f.Model != "qwen3-coder" {
		t.Fatalf("Feature(fix) = %+v %v", f, err)
	}
	if _, err := l.Feature("chat"); err == nil {
		t.Fatal("unknown feature accepted")
	}
}

func TestLLMRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		env  []string
		want string
	}{
		{[]string{"QUAVON_LLM_API_KEY=sk-abc"}, "QUAVON_LLM_API_KEY: secrets are read only from files"},
		{[]string{"QUAVON_LLM_FIX_API_KEY=sk-abc"}, "QUAVON_LLM_FIX_API_KEY_FILE"},
		{[]string{"QUAVON_LLM_PROVIDER=gemini", "QUAVON_LLM_MODEL=x"}, "want anthropic or openai"},
		{[]string{"QUAVON_LLM_PROVIDER=anthropic", "QUAVON_LLM_API_KEY_FILE=/k"}, "QUAVON_LLM_MODEL is required"},
		{[]string{"QUAVON_LLM_PROVIDER=anthropic", "QUAVON_LLM_MODEL=m"}, "QUAVON_LLM_API_KEY_FILE is required"},
		{[]string{"QUAVON_LLM_PROVIDER=openai", "QUAVON_LLM_MODEL=gpt-5"}, "QUAVON_LLM_API_KEY_FILE is required"},
		{[]string{"QUAVON_LLM_PROVIDER=openai", "QUAVON_LLM_MODEL=m", "QUAVON_LLM_BASE_URL=http://gpu.lan:8000/v1", "QUAVON_LLM_API_KEY_FILE=/k"}, "unencrypted"},
		{[]string{"QUAVON_LLM_PROVIDER=openai", "QUAVON_LLM_MODEL=m", "QUAVON_LLM_BASE_URL=https://u:sk-abc@host/v1"}, "holds credentials"},
		{[]string{"QUAVON_LLM_PROVIDER=openai", "QUAVON_LLM_MODEL=m", "QUAVON_LLM_BASE_URL=ftp://host"}, "http(s) URL"},
		{[]string{"QUAVON_LLM_PROVIDER=openai", "QUAVON_LLM_MODEL=two words", "QUAVON_LLM_BASE_URL=http://localhost:11434/v1"}, "without spaces"},
		{[]string{"QUAVON_LLM_FIX_PROVIDER=openai", "QUAVON_LLM_FIX_BASE_URL=http://localhost:1/v1"}, "QUAVON_LLM_FIX_MODEL is required"},
		{[]string{"QUAVON_LLM_REQUEST_TIMEOUT=0s"}, "QUAVON_LLM_REQUEST_TIMEOUT"},
		{[]string{"QUAVON_LLM_REQUEST_TIMEOUT=5"}, "QUAVON_LLM_REQUEST_TIMEOUT"},
		{[]string{"QUAVON_LLM_MAX_RETRIES=99"}, "QUAVON_LLM_MAX_RETRIES"},
		{[]string{"QUAVON_LLM_REVIEW_RUN_MAX_COST_USD=0"}, "QUAVON_LLM_REVIEW_RUN_MAX_COST_USD"},
		{[]string{"QUAVON_LLM_REVIEW_RUN_MAX_COST_USD=NaN"}, "QUAVON_LLM_REVIEW_RUN_MAX_COST_USD"},
		{[]string{"QUAVON_LLM_FIX_DAILY_MAX_TOKENS=-5"}, "QUAVON_LLM_FIX_DAILY_MAX_TOKENS"},
		{[]string{"QUAVON_LLM_FIX_RUN_MAX_COST_USD=500"}, "exceeds QUAVON_LLM_FIX_DAILY_MAX_COST_USD"},
		{[]string{`QUAVON_LLM_PRICES={"m":{"input":1,"outptu":2}}`}, "QUAVON_LLM_PRICES"},
		{[]string{`QUAVON_LLM_PRICES={"m":{"input":-1}}`}, "QUAVON_LLM_PRICES"},
		{[]string{`QUAVON_LLM_PRICES=[1]`}, "QUAVON_LLM_PRICES"},
		{[]string{"QUAVON_LLM_MODLE=x"}, "QUAVON_LLM_MODLE: unknown setting"},
	}
	for _, c := range cases {
		_, err := LoadLLM(c.env)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("LoadLLM(%q) = %v, want %q", c.env, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "sk-abc") {
			t.Errorf("LoadLLM(%q) echoes the key: %v", c.env, err)
		}
	}
}
