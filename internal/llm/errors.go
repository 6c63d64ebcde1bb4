package llm

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ErrorKind classifies a provider's refusal for callers and for WithRetry.
type ErrorKind string

// Error kinds. Match them with errors.Is against the sentinel of the same
// name (ErrAuth, …) or read APIError.Kind.
const (
	KindBadRequest       ErrorKind = "bad_request"       // 400, 413, 422: fix the request
	KindAuth             ErrorKind = "auth"              // 401, 403: the key was refused
	KindUnknownModel     ErrorKind = "unknown_model"     // 404: no such model (or no access)
	KindToolsUnsupported ErrorKind = "tools_unsupported" // the server or model cannot call tools
	KindRateLimited      ErrorKind = "rate_limited"      // 429: retried
	KindQuota            ErrorKind = "quota"             // 429 for a spend limit or exhausted credit: never retried
	KindOverloaded       ErrorKind = "overloaded"        // 529 / overloaded_error: retried
	KindServer           ErrorKind = "server"            // other 5xx: retried
	KindOther            ErrorKind = "other"
)

// Sentinels for errors.Is on an *APIError.
var (
	ErrBadRequest       = errors.New("llm: request refused")
	ErrAuth             = errors.New("llm: API key refused")
	ErrUnknownModel     = errors.New("llm: unknown model")
	ErrToolsUnsupported = errors.New("llm: the model cannot call tools")
	ErrRateLimited      = errors.New("llm: rate limited")
	ErrQuota            = errors.New("llm: spend limit or quota reached")
	ErrOverloaded       = errors.New("llm: provider overloaded")
	ErrServer           = errors.New("llm: provider error")
	ErrOther            = errors.New("llm: provider refused the call")
)

var kindSentinel = map[ErrorKind]error{
	KindBadRequest: ErrBadRequest, KindAuth: ErrAuth, KindUnknownModel: ErrUnknownModel,
	KindToolsUnsupported: ErrToolsUnsupported, KindRateLimited: ErrRateLimited, KindQuota: ErrQuota,
	KindOverloaded: ErrOverloaded, KindServer: ErrServer, KindOther: ErrOther,
}

// APIError is a provider's HTTP refusal. Its text never holds the request,
// the key or more than a capped excerpt of the provider's message (dropped
// entirely for auth errors, whose messages echo parts of the key).
type APIError struct {
	Provider string
	Model    string
	Status   int
	Kind     ErrorKind
	// Type and Code are the provider's error type and code, reduced to
	// [a-z0-9_.-] (empty when absent or not of that form): safe to log.
	Type, Code string
	// Message is the provider's message, capped; not logged by this package.
	Message string
	// RetryAfter is the server's retry-after (or retry-after-ms), if any.
	RetryAfter time.Duration
	RequestID  string
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "llm: %s", e.Provider)
	if e.Model != "" {
		fmt.Fprintf(&b, " %s", e.Model)
	}
	fmt.Fprintf(&b, ": %d %s", e.Status, e.Kind)
	if e.Type != "" {
		fmt.Fprintf(&b, " (%s", e.Type)
		if e.Code != "" {
			fmt.Fprintf(&b, "/%s", e.Code)
		}
		b.WriteString(")")
	}
	switch e.Kind {
	case KindAuth:
		b.WriteString(": the API key was refused; check the *_API_KEY_FILE setting")
	case KindUnknownModel:
		b.WriteString(": the provider does not serve this model (or the key has no access to it)")
	case KindToolsUnsupported:
		b.WriteString(": the server or model cannot call tools; pick a model with tool support (and for vLLM start it with --enable-auto-tool-choice --tool-call-parser, for llama.cpp with --jinja)")
	}
	if e.Message != "" && e.Kind != KindAuth {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request %s]", e.RequestID)
	}
	return b.String()
}

// Is matches the sentinel of the error's kind.
func (e *APIError) Is(target error) bool { return kindSentinel[e.Kind] == target }

// Retryable reports whether WithRetry may try the call again.
func (e *APIError) Retryable() bool {
	switch e.Kind {
	case KindRateLimited, KindOverloaded, KindServer:
		return true
	}
	return false
}

const maxMessage = 300

var safeToken = regexp.MustCompile(`^[a-z0-9_.-]{1,64}$`)

// NewAPIError classifies a provider's error response. errType and code are
// the provider's (error.type, error.code or error.details.error_code),
// message its human text; header carries retry-after and the request id.
func NewAPIError(provider, model string, status int, errType, code, message string, header http.Header) *APIError {
	e := &APIError{Provider: provider, Model: model, Status: status}
	if safeToken.MatchString(strings.ToLower(errType)) {
		e.Type = strings.ToLower(errType)
	}
	if safeToken.MatchString(strings.ToLower(code)) {
		e.Code = strings.ToLower(code)
	}
	e.Message = capText(message, maxMessage)
	if header != nil {
		e.RetryAfter = RetryAfter(header, time.Now())
		for _, h := range []string{"request-id", "x-request-id"} {
			if v := header.Get(h); v != "" && safeToken.MatchString(strings.ToLower(v)) {
				e.RequestID = v
				break
			}
		}
	}
	e.Kind = classify(status, e.Type, e.Code, message)
	return e
}

// toolsUnsupported are the messages OpenAI-compatible servers answer a
// request with tools with when the model or server cannot call tools:
// Ollama, vLLM without --enable-auto-tool-choice, llama.cpp without
// --jinja (as a 500, so this check comes before the status).
var toolsUnsupported = []string{
	"does not support tools",
	"tool choice requires --enable-auto-tool-choice",
	"tools param requires --jinja",
	"unsupported param: tools",
	"does not support function calling",
	"no endpoints found that support tool use", // OpenRouter
}

func classify(status int, errType, code, message string) ErrorKind {
	lower := strings.ToLower(message)
	for _, s := range toolsUnsupported {
		if strings.Contains(lower, s) {
			return KindToolsUnsupported
		}
	}
	switch {
	case status == 401 || status == 403 || errType == "authentication_error" || errType == "permission_error":
		return KindAuth
	case status == 404 || code == "model_not_found" || errType == "not_found_error":
		return KindUnknownModel
	case status == 429:
		// A spend cap or an empty balance does not clear by waiting.
		if code == "insufficient_quota" || code == "enforced_spend_limit_reached" || errType == "insufficient_quota" ||
			code == "billing_hard_limit_reached" {
			return KindQuota
		}
		return KindRateLimited
	case status == 529 || errType == "overloaded_error":
		return KindOverloaded
	case status >= 500:
		return KindServer
	case status == 402 || errType == "billing_error":
		return KindQuota
	case status == 400 || status == 409 || status == 413 || status == 422:
		return KindBadRequest
	}
	return KindOther
}

// RetryAfter reads retry-after-ms or retry-after (seconds or an HTTP date)
// from a response header; 0 when absent or unparseable. Capped at an hour.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	const maxWait = time.Hour
	clamp := func(d time.Duration) time.Duration { return min(max(d, 0), maxWait) }
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < float64(maxWait/time.Millisecond) {
			return clamp(time.Duration(ms * float64(time.Millisecond)))
		}
	}
	v := strings.TrimSpace(h.Get("retry-after"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && s < maxWait.Seconds() {
		return clamp(time.Duration(s * float64(time.Second)))
	}
	if t, err := http.ParseTime(v); err == nil {
		return clamp(t.Sub(now))
	}
	return 0
}

// capText cuts s to n bytes on a rune boundary, keeps one line of it and
// replaces control characters, so a provider's message cannot forge log
// lines.
func capText(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	for _, r := range s {
		if b.Len()+utf8.RuneLen(r) > n {
			b.WriteString("…")
			break
		}
		if r < 0x20 || r == 0x7f {
			r = ' '
		}
		b.WriteRune(r)
	}
	return strings.TrimSpace(b.String())
}
