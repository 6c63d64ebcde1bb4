// Package provider builds llm.Models on the providers' official Go SDKs:
// anthropic (Messages API, anthropic-sdk-go) and openai (Chat Completions,
// openai-go, also for every OpenAI-compatible server). It is the only
// package that imports the SDKs; each provider is one file here, listed in
// the table below.
//
// The service assembly calls FromConfig once per feature at start, and
// RunBudget once per run:
//
//	model, err := provider.FromConfig(cfg.LLM, llm.FeatureFix, logger)
//	if errors.Is(err, provider.ErrNotConfigured) { /* no model: feature off */ }
//	budget, err := provider.RunBudget(cfg.LLM, llm.FeatureFix, db, tenant, logger)
//	m := budget.Model(model) // the run only ever sees m
package provider

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/quavon/quavon/internal/config"
	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/postgres"
)

// Endpoint is everything one provider model needs.
type Endpoint struct {
	Provider string // anthropic or openai
	Model    string
	BaseURL  string // empty: the provider's own API
	APIKey   string
	Price    llm.Price
	// Timeout bounds one HTTP request (default 5 minutes).
	Timeout time.Duration
	// HTTPClient is the client to use (default: a clone of the default
	// transport). Its transport is wrapped either way.
	HTTPClient *http.Client
	// MaxTokensParam (openai only) names the output cap field:
	// "max_completion_tokens" (OpenAI and Azure, whose newer models refuse
	// max_tokens) or "max_tokens" (what OpenAI-compatible servers read).
	// Empty: chosen by the base URL's host.
	MaxTokensParam string
}

// constructors is the table of providers: one file each.
var constructors = map[string]func(Endpoint) (llm.Model, error){
	"anthropic": newAnthropic,
	"openai":    newOpenAI,
}

// ErrNotConfigured: the feature has no model (QUAVON_LLM_PROVIDER unset).
var ErrNotConfigured = errors.New("llm: no model configured (set QUAVON_LLM_PROVIDER and QUAVON_LLM_MODEL)")

// New is the bare provider model of ep: no retries, no logging.
func New(ep Endpoint) (llm.Model, error) {
	c, ok := constructors[ep.Provider]
	if !ok {
		return nil, fmt.Errorf("llm: unknown provider %q", ep.Provider)
	}
	if ep.Model == "" {
		return nil, errors.New("llm: model name required")
	}
	if ep.Timeout <= 0 {
		ep.Timeout = 5 * time.Minute
	}
	return c(ep)
}

// FromConfig builds the model of feature: the provider over its SDK, with
// retries (WithRetry: QUAVON_LLM_MAX_RETRIES, _RETRY_MAX_WAIT) and logging
// (WithLogging). A model without a price in the built-in table or
// QUAVON_LLM_PRICES is refused: cost must be known per call.
func FromConfig(cfg config.LLM, feature llm.Feature, logger *slog.Logger) (llm.Model, error) {
	f, err := cfg.Feature(string(feature))
	if err != nil {
		return nil, err
	}
	if f.Provider == "" {
		return nil, ErrNotConfigured
	}
	key, err := f.APIKey()
	if err != nil {
		return nil, err
	}
	price, ok := Prices(cfg).Lookup(f.Model)
	if !ok {
		return nil, fmt.Errorf(`llm: no price for model %q: add it to QUAVON_LLM_PRICES, e.g. {"%s": {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75}} in USD per million tokens (all 0 for a model you run yourself)`, f.Model, f.Model)
	}
	m, err := New(Endpoint{Provider: f.Provider, Model: f.Model, BaseURL: f.BaseURL, APIKey: key, Price: price, Timeout: cfg.RequestTimeout})
	if err != nil {
		return nil, err
	}
	retries := cfg.MaxRetries
	if retries == 0 {
		retries = -1 // none
	}
	maxWait := cfg.RetryMaxWait
	if maxWait == 0 {
		maxWait = time.Nanosecond // no waiting, so no retries
	}
	m = llm.WithRetry(m, llm.RetryPolicy{MaxRetries: retries, MaxWait: maxWait})
	return llm.WithLogging(m, logger, feature), nil
}

// Prices is the built-in price table with QUAVON_LLM_PRICES applied.
func Prices(cfg config.LLM) llm.Prices {
	over := make(map[string]llm.Price, len(cfg.Prices))
	for model, p := range cfg.Prices {
		over[model] = convertPrice(p)
	}
	return llm.DefaultPrices().With(over)
}

func convertPrice(p config.LLMPrice) llm.Price {
	out := llm.Price{Input: p.Input, Output: p.Output, CacheRead: p.CacheRead, CacheWrite: p.CacheWrite, LongAbove: p.LongAbove}
	if p.Long != nil {
		l := convertPrice(*p.Long)
		out.Long = &l
	}
	return out
}

// RunBudget is the budget of one run of feature: the run ceilings of the
// configuration and, with db, the feature's daily ceiling of tenant.
func RunBudget(cfg config.LLM, feature llm.Feature, db *postgres.DB, tenant postgres.TenantID, logger *slog.Logger) (*llm.Budget, error) {
	f, err := cfg.Feature(string(feature))
	if err != nil {
		return nil, err
	}
	opts := llm.BudgetOptions{Feature: feature, Logger: logger}
	if db != nil {
		d, err := llm.NewDailyLedger(db, tenant, feature, llm.Ceiling{Tokens: f.DailyMaxTokens, Cost: llm.Micros(f.DailyMaxCostMicros)}, nil)
		if err != nil {
			return nil, err
		}
		opts.Daily = d
	}
	return llm.NewBudget(llm.Ceiling{Tokens: f.RunMaxTokens, Cost: llm.Micros(f.RunMaxCostMicros)}, opts)
}
