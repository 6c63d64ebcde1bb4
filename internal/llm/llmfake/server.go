// Package llmfake is an httptest server that speaks the Anthropic Messages
// API (POST /v1/messages) and the OpenAI Chat Completions API (POST
// /v1/chat/completions), non-streaming, with tool use, usage blocks,
// prompt caching and the providers' error shapes, so the real SDKs run
// against it. It validates requests as the real APIs do (unknown fields,
// roles, block types, tool_use/tool_result pairing, tool names, cache
// breakpoints, auth and version headers, unknown models) and answers a
// malformed request with the provider's 400, 401 or 404; valid requests
// are answered by an llm.Script, the same script type the scripted model
// plays. Every request is recorded, refused ones included.
//
// Shapes follow the providers' API references: Anthropic's Messages and
// errors pages (API versions 2023-06-01 and 2026-10-21, which refuses
// temperature, top_p and top_k), OpenAI's Chat Completions and error codes
// pages, and the error shapes of Ollama, vLLM and llama.cpp for servers
// that cannot call tools.
package llmfake

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"

	"github.com/quavon/quavon/internal/llm"
)

// Options configure the emulator.
type Options struct {
	// Script answers valid requests (default: every call answers "ok").
	Script llm.Script
	// APIKey is the key requests must present. Empty: Anthropic requests
	// still need some key; OpenAI requests need none (a local server).
	APIKey string
	// Models are the models served; empty serves any name.
	Models []string
	// ReasoningModels (OpenAI) refuse max_tokens and a temperature other
	// than 1, as OpenAI's reasoning models do.
	ReasoningModels []string
	// NoTools (OpenAI) answers any request with tools the way Ollama does
	// for a model without tool support.
	NoTools bool
}

// Recorded is one HTTP request the emulator received.
type Recorded struct {
	API    string // "anthropic" or "openai"
	Path   string
	Header http.Header // with the key headers removed
	Key    string      // the key presented
	Body   []byte
	// Status is what the emulator answered.
	Status int
	// Request is the body decoded back into an llm.Request (valid requests).
	Request llm.Request
}

// Server is a running emulator.
type Server struct {
	*httptest.Server
	opts Options

	mu       sync.Mutex
	calls    int // valid requests, numbering the script's calls
	recorded []Recorded
	cached   map[string]bool // prompt-cache prefixes written
}

// New starts an emulator; Close it when done.
func New(opts Options) *Server {
	if opts.Script == nil {
		opts.Script = func(int, llm.Request) llm.Step { return llm.Answer("ok") }
	}
	s := &Server{opts: opts, cached: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/messages", s.anthropic)
	mux.HandleFunc("/v1/chat/completions", s.openai)
	s.Server = httptest.NewServer(mux)
	return s
}

// AnthropicURL is the base URL for the Anthropic SDK.
func (s *Server) AnthropicURL() string { return s.URL + "/" }

// OpenAIURL is the base URL for the OpenAI SDK.
func (s *Server) OpenAIURL() string { return s.URL + "/v1/" }

// Requests returns every request received, in order.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.recorded)
}

// Calls is how many valid requests the script answered.
func (s *Server) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

const maxBody = 32 << 20

// read records the request and returns its body; false when it already
// answered (wrong method, too large).
func (s *Server) read(w http.ResponseWriter, r *http.Request, api string) (*Recorded, bool) {
	rec := &Recorded{API: api, Path: r.URL.Path, Header: r.Header.Clone()}
	for _, h := range []string{"Authorization", "X-Api-Key", "Api-Key"} {
		rec.Header.Del(h)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	rec.Body = body
	switch {
	case r.Method != http.MethodPost:
		s.finish(rec, http.StatusMethodNotAllowed)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return rec, false
	case err != nil || len(body) > maxBody:
		s.finish(rec, http.StatusRequestEntityTooLarge)
		s.fail(w, rec, &llm.Failure{Status: 413, Type: "request_too_large", Message: "Request exceeds the maximum allowed number of bytes."})
		return rec, false
	}
	return rec, true
}

func (s *Server) finish(rec *Recorded, status int) {
	rec.Status = status
	s.mu.Lock()
	s.recorded = append(s.recorded, *rec)
	s.mu.Unlock()
}

// next numbers a valid request and plays the script for it.
func (s *Server) next(rec *Recorded) (int, llm.Step) {
	s.mu.Lock()
	n := s.calls
	s.calls++
	s.mu.Unlock()
	return n, s.opts.Script(n, rec.Request)
}

// fail writes f in the shape of rec.API.
func (s *Server) fail(w http.ResponseWriter, rec *Recorded, f *llm.Failure) {
	s.failParam(w, rec, f, "")
}

// failParam is fail with OpenAI's error.param.
func (s *Server) failParam(w http.ResponseWriter, rec *Recorded, f *llm.Failure, param string) {
	msg := f.Message
	if msg == "" {
		msg = http.StatusText(f.Status)
	}
	if f.RetryAfter != "" {
		w.Header().Set("retry-after", f.RetryAfter)
	}
	var body any
	if rec.API == "anthropic" {
		e := map[string]any{"type": orDefault(f.Type, anthropicType(f.Status)), "message": msg}
		if f.Code != "" {
			e["details"] = map[string]any{"error_code": f.Code}
		}
		id := requestID("req_", rec.Body)
		w.Header().Set("request-id", id)
		body = map[string]any{"type": "error", "error": e, "request_id": id}
	} else {
		var code any
		if f.Code != "" {
			code = f.Code
		}
		w.Header().Set("x-request-id", requestID("req_", rec.Body))
		var p any
		if param != "" {
			p = param
		}
		body = map[string]any{"error": map[string]any{"message": msg, "type": orDefault(f.Type, "invalid_request_error"), "param": p, "code": code}}
	}
	writeJSON(w, f.Status, body)
	if rec.Status == 0 {
		s.finish(rec, f.Status)
	}
}

func anthropicType(status int) string {
	switch status {
	case 400:
		return "invalid_request_error"
	case 401:
		return "authentication_error"
	case 402:
		return "billing_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 413:
		return "request_too_large"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func requestID(prefix string, body []byte) string {
	h := sha256.Sum256(body)
	return prefix + hex.EncodeToString(h[:8])
}

func (s *Server) knownModel(m string) bool {
	return len(s.opts.Models) == 0 || slices.Contains(s.opts.Models, m)
}

// cache emulates prompt caching: a prefix of at least 1024 tokens (4
// bytes a token) is written on first sight and read after. It returns the
// prefix's tokens and whether they were read.
func (s *Server) cache(model string, prefix []byte) (tokens int64, read bool) {
	tokens = int64(len(prefix)+3) / 4
	if tokens < 1024 {
		return 0, false
	}
	h := sha256.Sum256(append([]byte(model+"\x00"), prefix...))
	key := hex.EncodeToString(h[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	read = s.cached[key]
	s.cached[key] = true
	return tokens, read
}

// object decodes a JSON object keeping its raw members; the error names
// what the APIs name.
func object(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	return m, true
}

func unknownKeys(m map[string]json.RawMessage, allowed ...string) []string {
	var out []string
	for k := range m {
		if !slices.Contains(allowed, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func asString(raw json.RawMessage) (string, bool) {
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

func asArray(raw json.RawMessage) ([]json.RawMessage, bool) {
	var a []json.RawMessage
	if len(raw) == 0 || raw[0] != '[' || json.Unmarshal(raw, &a) != nil {
		return nil, false
	}
	return a, true
}

func asInt(raw json.RawMessage) (int64, bool) {
	var n int64
	if len(raw) == 0 || json.Unmarshal(raw, &n) != nil {
		return 0, false
	}
	return n, true
}

func asBool(raw json.RawMessage) (bool, bool) {
	var b bool
	if json.Unmarshal(raw, &b) != nil {
		return false, false
	}
	return b, true
}

func isNull(raw json.RawMessage) bool { return strings.TrimSpace(string(raw)) == "null" }

// invalid is a 400 of the request's API.
type invalid struct {
	msg   string
	param string // openai's error.param
	code  string // openai's error.code
}

func bad(format string, args ...any) *invalid { return &invalid{msg: fmt.Sprintf(format, args...)} }
