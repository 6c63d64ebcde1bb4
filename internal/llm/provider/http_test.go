package provider

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/quavon/quavon/internal/llm"
)

// Error bodies of the servers the openai provider reaches, each shape
// classified; and an answer past the size cap is refused, not buffered.
func TestGuardReadsEveryErrorShape(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status int
		body   string
		want   error
	}{
		{400, `{"object":"error","message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","param":null,"code":400}`, llm.ErrToolsUnsupported}, // vLLM
		{500, `{"error":{"code":500,"message":"tools param requires --jinja flag","type":"server_error"}}`, llm.ErrToolsUnsupported},                                                                               // llama.cpp
		{400, `{"error":{"message":"registry.ollama.ai/library/gemma3:4b does not support tools","type":"api_error","param":null,"code":null}}`, llm.ErrToolsUnsupported},                                          // Ollama
		{404, `{"error":"model \"x\" not found, try pulling it first"}`, llm.ErrUnknownModel},                                                                                                                      // Ollama native shape
		{429, `{"type":"error","error":{"type":"rate_limit_error","message":"spend limit","details":{"error_code":"enforced_spend_limit_reached"}}}`, llm.ErrQuota},                                                // Anthropic
		{502, `<html>bad gateway</html>`, llm.ErrServer},
	}
	for _, c := range cases {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(c.status)
			io.WriteString(w, c.body)
		}))
		m, err := New(Endpoint{Provider: "openai", Model: "m", BaseURL: srv.URL + "/v1/"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Complete(context.Background(), llm.Request{MaxOutputTokens: 10, Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}})
		if !errors.Is(err, c.want) {
			t.Errorf("%d %s: %v, want %v", c.status, c.body, err, c.want)
		}
		srv.Close()
	}
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"`)
		chunk := strings.Repeat("a", 1<<20)
		for range 40 {
			io.WriteString(w, chunk)
		}
		io.WriteString(w, `"}}]}`)
	}))
	defer huge.Close()
	m, _ := New(Endpoint{Provider: "openai", Model: "m", BaseURL: huge.URL + "/v1/"})
	if _, err := m.Complete(context.Background(), llm.Request{MaxOutputTokens: 10, Messages: []llm.Message{{Role: llm.RoleUser, Text: "x"}}}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("a 40 MiB answer: %v", err)
	}
}
