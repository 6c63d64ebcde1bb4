package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/quavon/quavon/internal/llm"
)

// Caps on what a provider (or anything answering at its URL) may send back.
const (
	maxResponseBytes = 32 << 20
	maxErrorBytes    = 64 << 10
)

// httpClient is ep's client with its transport wrapped by guard.
func httpClient(ep Endpoint) *http.Client {
	var c http.Client
	if ep.HTTPClient != nil {
		c = *ep.HTTPClient
	}
	base := c.Transport
	if base == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = ep.Timeout
		t.TLSHandshakeTimeout = 15 * time.Second
		base = t
	}
	c.Transport = &guard{base: base, provider: ep.Provider, model: ep.Model}
	return &c
}

// guard turns every HTTP error answer into an *llm.APIError classified from
// the status, the body's error type and code, and retry-after, whichever
// of the error shapes the server uses (Anthropic, OpenAI, vLLM, llama.cpp,
// Ollama), before the SDK sees it; and caps response bodies.
type guard struct {
	base            http.RoundTripper
	provider, model string
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := g.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 400 {
		resp.Body = &capped{r: resp.Body, left: maxResponseBytes}
		return resp, nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes))
	_ = resp.Body.Close()
	errType, code, message := parseErrorBody(body)
	return nil, llm.NewAPIError(g.provider, g.model, resp.StatusCode, errType, code, message, resp.Header)
}

// capped fails a body longer than its cap instead of buffering it.
type capped struct {
	r    io.ReadCloser
	left int64
}

var errTooLarge = fmt.Errorf("llm: provider response larger than %d bytes", maxResponseBytes)

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// One more byte means over the cap; EOF means exactly at it.
		var one [1]byte
		if n, _ := c.r.Read(one[:]); n > 0 {
			return 0, errTooLarge
		}
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

func (c *capped) Close() error { return c.r.Close() }

// parseErrorBody reads an error body of any known shape:
//
//	{"type":"error","error":{"type":…,"message":…,"details":{"error_code":…}}}  Anthropic
//	{"error":{"message":…,"type":…,"code":…,"param":…}}                        OpenAI, llama.cpp, Ollama /v1
//	{"object":"error","message":…,"type":…,"code":400}                        vLLM
//	{"error":"message"}                                                       Ollama native
func parseErrorBody(body []byte) (errType, code, message string) {
	var doc map[string]json.RawMessage
	if json.Unmarshal(body, &doc) != nil {
		return "", "", string(body)
	}
	str := func(raw json.RawMessage) string {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
		var n json.Number
		if json.Unmarshal(raw, &n) == nil {
			return n.String()
		}
		return ""
	}
	if raw, ok := doc["error"]; ok {
		var inner map[string]json.RawMessage
		if json.Unmarshal(raw, &inner) == nil {
			code = str(inner["code"])
			if d, ok := inner["details"]; ok {
				var details map[string]json.RawMessage
				if json.Unmarshal(d, &details) == nil && str(details["error_code"]) != "" {
					code = str(details["error_code"])
				}
			}
			return str(inner["type"]), code, str(inner["message"])
		}
		return "", "", str(raw)
	}
	return str(doc["type"]), str(doc["code"]), str(doc["message"])
}

// asAPIError unwraps the *llm.APIError the guard produced from the SDK's
// wrapping (url.Error and the like).
func asAPIError(err error) (*llm.APIError, bool) {
	var ae *llm.APIError
	if errors.As(err, &ae) {
		return ae, true
	}
	return nil, false
}
