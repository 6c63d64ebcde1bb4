package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/quavon/quavon/internal/secretfile"
)

// LLM is the model configuration of the worker and the CLI: a default
// endpoint (QUAVON_LLM_*), per-feature overrides (QUAVON_LLM_REVIEW_*,
// _ACCEPTANCE_*, _FIX_*), budgets per feature, timeouts and prices.
// internal/llm/provider.FromConfig turns it into a model.
type LLM struct {
	Review, Acceptance, Fix LLMFeature
	// RequestTimeout bounds one HTTP request to the provider.
	RequestTimeout time.Duration
	// MaxRetries and RetryMaxWait bound retries of 429/529/5xx answers.
	MaxRetries   int
	RetryMaxWait time.Duration
	// Prices overrides or extends the built-in price table, by model name.
	Prices map[string]LLMPrice
}

// LLMEndpoint is where one feature's model lives.
type LLMEndpoint struct {
	// Provider is anthropic or openai (every OpenAI-compatible server);
	// empty: no model configured.
	Provider string
	Model    string
	// BaseURL is empty for the provider's own API.
	BaseURL    string
	APIKeyFile string
}

// APIKey reads the key file; empty when none is configured.
func (e LLMEndpoint) APIKey() (string, error) {
	if e.APIKeyFile == "" {
		return "", nil
	}
	b, err := secretfile.Read("LLM API key file", e.APIKeyFile, 1)
	if err != nil {
		return "", err
	}
	key := string(b)
	if key == "" || strings.ContainsFunc(key, unicode.IsSpace) {
		return "", fmt.Errorf("LLM API key file %s: want one key on one line", e.APIKeyFile)
	}
	return key, nil
}

// LLMFeature is one feature's endpoint and budgets. Costs are in
// micro-dollars.
type LLMFeature struct {
	LLMEndpoint
	RunMaxTokens, DailyMaxTokens         int64
	RunMaxCostMicros, DailyMaxCostMicros int64
}

// LLMPrice is a price in USD per million tokens (QUAVON_LLM_PRICES).
type LLMPrice struct {
	Input      float64   `json:"input"`
	Output     float64   `json:"output"`
	CacheRead  float64   `json:"cache_read"`
	CacheWrite float64   `json:"cache_write"`
	LongAbove  int64     `json:"long_above"`
	Long       *LLMPrice `json:"long"`
}

// Feature returns the settings of feature review, acceptance or fix.
func (l LLM) Feature(name string) (LLMFeature, error) {
	switch name {
	case "review":
		return l.Review, nil
	case "acceptance":
		return l.Acceptance, nil
	case "fix":
		return l.Fix, nil
	}
	return LLMFeature{}, fmt.Errorf("LLM feature %q: want review, acceptance or fix", name)
}

var llmFeatures = []string{"REVIEW", "ACCEPTANCE", "FIX"}

// parseLLM reads the QUAVON_LLM_* values (defaults applied) and returns
// the settings and every problem found.
func parseLLM(vals map[string]string) (LLM, []error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	var l LLM

	def := LLMEndpoint{
		Provider:   vals["QUAVON_LLM_PROVIDER"],
		Model:      vals["QUAVON_LLM_MODEL"],
		BaseURL:    vals["QUAVON_LLM_BASE_URL"],
		APIKeyFile: vals["QUAVON_LLM_API_KEY_FILE"],
	}
	errs = append(errs, checkEndpoint("QUAVON_LLM", def)...)
	for _, f := range llmFeatures {
		p := "QUAVON_LLM_" + f
		ep := def
		if v := vals[p+"_PROVIDER"]; v != "" && v != def.Provider {
			// Another provider inherits nothing but the provider choice.
			ep = LLMEndpoint{Provider: v}
		}
		if v := vals[p+"_MODEL"]; v != "" {
			ep.Model = v
		}
		if v := vals[p+"_BASE_URL"]; v != "" {
			ep.BaseURL = v
		}
		if v := vals[p+"_API_KEY_FILE"]; v != "" {
			ep.APIKeyFile = v
		}
		if ep != def {
			errs = append(errs, checkEndpoint(p, ep)...)
		}
		lf := LLMFeature{LLMEndpoint: ep}
		lf.RunMaxTokens = parseTokens(vals, p+"_RUN_MAX_TOKENS", &errs)
		lf.DailyMaxTokens = parseTokens(vals, p+"_DAILY_MAX_TOKENS", &errs)
		lf.RunMaxCostMicros = parseUSD(vals, p+"_RUN_MAX_COST_USD", &errs)
		lf.DailyMaxCostMicros = parseUSD(vals, p+"_DAILY_MAX_COST_USD", &errs)
		if lf.RunMaxTokens > lf.DailyMaxTokens && lf.DailyMaxTokens > 0 {
			bad("%s_RUN_MAX_TOKENS exceeds %s_DAILY_MAX_TOKENS: a run could never finish within the day", p, p)
		}
		if lf.RunMaxCostMicros > lf.DailyMaxCostMicros && lf.DailyMaxCostMicros > 0 {
			bad("%s_RUN_MAX_COST_USD exceeds %s_DAILY_MAX_COST_USD: a run could never finish within the day", p, p)
		}
		switch f {
		case "REVIEW":
			l.Review = lf
		case "ACCEPTANCE":
			l.Acceptance = lf
		case "FIX":
			l.Fix = lf
		}
	}

	l.RequestTimeout = parseDuration(vals, "QUAVON_LLM_REQUEST_TIMEOUT", time.Second, time.Hour, &errs)
	l.RetryMaxWait = parseDuration(vals, "QUAVON_LLM_RETRY_MAX_WAIT", 0, time.Hour, &errs)
	if n, err := strconv.Atoi(vals["QUAVON_LLM_MAX_RETRIES"]); err != nil || n < 0 || n > 10 {
		bad("QUAVON_LLM_MAX_RETRIES %q: want 0..10", vals["QUAVON_LLM_MAX_RETRIES"])
	} else {
		l.MaxRetries = n
	}
	if v := vals["QUAVON_LLM_PRICES"]; v != "" {
		dec := json.NewDecoder(strings.NewReader(v))
		dec.DisallowUnknownFields()
		var prices map[string]LLMPrice
		if err := dec.Decode(&prices); err != nil || dec.More() {
			bad(`QUAVON_LLM_PRICES: want a JSON object {"model": {"input": USD, "output": USD, "cache_read": USD, "cache_write": USD}} (USD per million tokens): %v`, err)
		} else {
			for model, p := range prices {
				if model == "" {
					bad("QUAVON_LLM_PRICES: empty model name")
				}
				if err := checkPrice(p, true); err != nil {
					bad("QUAVON_LLM_PRICES %q: %v", model, err)
				}
			}
			l.Prices = prices
		}
	}
	return l, errs
}

func checkPrice(p LLMPrice, top bool) error {
	for _, v := range []float64{p.Input, p.Output, p.CacheRead, p.CacheWrite} {
		if v < 0 || v > 10_000 || math.IsNaN(v) {
			return errors.New("each rate must be 0..10000 USD per million tokens")
		}
	}
	if p.Long != nil {
		if !top || p.LongAbove < 1 {
			return errors.New(`"long" needs "long_above" ≥ 1 and has no tier of its own`)
		}
		return checkPrice(*p.Long, false)
	}
	return nil
}

func checkEndpoint(prefix string, e LLMEndpoint) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch e.Provider {
	case "":
		return nil // no model: the features that need one are off
	case "anthropic", "openai":
	default:
		bad("%s_PROVIDER %q: want anthropic or openai (openai also for Ollama, vLLM, llama.cpp, LM Studio, Azure OpenAI, OpenRouter)", prefix, e.Provider)
		return errs
	}
	if e.Model == "" {
		bad("%s_MODEL is required with provider %s", prefix, e.Provider)
	} else if len(e.Model) > 200 || strings.ContainsFunc(e.Model, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) {
		bad("%s_MODEL %q: want a model name without spaces", prefix, e.Model)
	}
	if e.BaseURL != "" {
		u, err := url.Parse(e.BaseURL)
		switch {
		case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
			bad("%s_BASE_URL: want an http(s) URL", prefix)
		case u.User != nil:
			bad("%s_BASE_URL holds credentials: put the key in %s_API_KEY_FILE", prefix, prefix)
		case u.RawQuery != "" || u.Fragment != "":
			bad("%s_BASE_URL: no query or fragment", prefix)
		case u.Scheme == "http" && e.APIKeyFile != "" && !loopbackHost(u.Hostname()):
			bad("%s_BASE_URL %s would send the API key unencrypted: use https, or http only on a loopback address", prefix, e.BaseURL)
		}
	}
	needsKey := e.Provider == "anthropic" || e.BaseURL == "" || strings.Contains(e.BaseURL, "://api.openai.com")
	if needsKey && e.APIKeyFile == "" {
		bad("%s_API_KEY_FILE is required for %s's own API", prefix, e.Provider)
	}
	return errs
}

func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func parseTokens(vals map[string]string, name string, errs *[]error) int64 {
	n, err := strconv.ParseInt(vals[name], 10, 64)
	if err != nil || n < 1 || n > 1e12 {
		*errs = append(*errs, fmt.Errorf("%s %q: want a token count 1..1000000000000", name, vals[name]))
		return 0
	}
	return n
}

func parseUSD(vals map[string]string, name string, errs *[]error) int64 {
	v, err := strconv.ParseFloat(vals[name], 64)
	if err != nil || !(v > 0) || v > 1e6 || math.Round(v*1e6) < 1 {
		*errs = append(*errs, fmt.Errorf("%s %q: want US dollars, more than 0 and at most 1000000", name, vals[name]))
		return 0
	}
	return int64(math.Round(v * 1e6))
}

func parseDuration(vals map[string]string, name string, lo, hi time.Duration, errs *[]error) time.Duration {
	d, err := time.ParseDuration(vals[name])
	if err != nil || d < lo || d > hi {
		*errs = append(*errs, fmt.Errorf("%s %q: want a duration (like 90s or 5m) from %v to %v", name, vals[name], lo, hi))
		return 0
	}
	return d
}
