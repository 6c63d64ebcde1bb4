package llm

import (
	"fmt"
	"math"
	"regexp"
	"strings"
)

// Micros is an amount of US dollars in millionths (µUSD). A price in USD
// per million tokens is exactly µUSD per token.
type Micros int64

// USD converts dollars to Micros, rounding to the nearest micro-dollar.
func USD(dollars float64) Micros { return Micros(math.Round(dollars * 1e6)) }

func (m Micros) String() string { return fmt.Sprintf("$%.6f", float64(m)/1e6) }

// Dollars is m in dollars.
func (m Micros) Dollars() float64 { return float64(m) / 1e6 }

// Price is what a model costs in USD per million tokens.
type Price struct {
	Input      float64 `json:"input"`
	Output     float64 `json:"output"`
	CacheRead  float64 `json:"cache_read"`
	CacheWrite float64 `json:"cache_write"`
	// Long, when set, replaces the price for calls whose prompt (cached
	// tokens included) exceeds LongAbove tokens.
	LongAbove int64  `json:"long_above,omitempty"`
	Long      *Price `json:"long,omitempty"`
}

func (p Price) tier(promptTokens int64) Price {
	if p.Long != nil && p.LongAbove > 0 && promptTokens > p.LongAbove {
		return *p.Long
	}
	return p
}

// Validate refuses negative or absurd prices.
func (p Price) Validate() error {
	for _, v := range []float64{p.Input, p.Output, p.CacheRead, p.CacheWrite} {
		if v < 0 || v > 10_000 || math.IsNaN(v) {
			return fmt.Errorf("price %v: each rate must be 0..10000 USD per million tokens", v)
		}
	}
	if p.Long != nil {
		if p.LongAbove < 1 || p.Long.Long != nil {
			return fmt.Errorf("a long-context price needs long_above ≥ 1 and no tier of its own")
		}
		return p.Long.Validate()
	}
	return nil
}

// Cost of usage at this price, rounded up to the next micro-dollar.
func (p Price) Cost(u Usage) Micros {
	t := p.tier(u.Prompt())
	c := float64(u.InputTokens)*t.Input + float64(u.OutputTokens)*t.Output +
		float64(u.CacheReadTokens)*t.CacheRead + float64(u.CacheWriteTokens)*t.CacheWrite
	return Micros(math.Ceil(c))
}

// WorstCase is the most a call with promptTokens of input and up to
// maxOutput tokens of output can cost: every input token at the dearer of
// the input and cache-write rates.
func (p Price) WorstCase(promptTokens, maxOutput int64) Micros {
	t := p.tier(promptTokens)
	c := float64(promptTokens)*max(t.Input, t.CacheWrite) + float64(maxOutput)*t.Output
	return Micros(math.Ceil(c))
}

// Prices maps model names to prices.
type Prices map[string]Price

// DefaultPrices is the built-in table (USD per million tokens, from the
// providers' price pages as of November 2026; Anthropic cache writes at the
// 5-minute rate, which is what the provider asks for). Override or extend
// it with QUAVON_LLM_PRICES.
func DefaultPrices() Prices {
	anth := func(in, out, read float64) Price {
		return Price{Input: in, Output: out, CacheRead: read, CacheWrite: in * 1.25}
	}
	oai := func(in, cached, out float64) Price {
		return Price{Input: in, Output: out, CacheRead: cached, CacheWrite: in}
	}
	haiku55 := anth(0.10, 0.50, 0.01)
	long := anth(0.50, 2.50, 0.05)
	haiku55.LongAbove, haiku55.Long = 100_000, &long
	return Prices{
		"claude-fable-5-1":  anth(10, 50, 0.25),
		"claude-fable-5":    anth(10, 50, 1),
		"claude-opus-5-5":   anth(4, 20, 0.20),
		"claude-opus-5":     anth(5, 25, 0.50),
		"claude-opus-4-8":   anth(5, 25, 0.50),
		"claude-opus-4-7":   anth(5, 25, 0.50),
		"claude-opus-4-6":   anth(5, 25, 0.50),
		"claude-opus-4-5":   anth(5, 25, 0.50),
		"claude-sonnet-5-5": anth(2, 10, 0.10),
		"claude-sonnet-5":   anth(2, 10, 0.20),
		"claude-sonnet-4-6": anth(3, 15, 0.30),
		"claude-sonnet-4-5": anth(3, 15, 0.30),
		"claude-haiku-5-5":  haiku55,
		"claude-haiku-4-5":  anth(1, 5, 0.10),
		"gpt-5.4":           oai(2.50, 0.25, 15),
		"gpt-5.4-mini":      oai(0.75, 0.075, 4.50),
		"gpt-5":             oai(1.25, 0.125, 10),
		"gpt-5-mini":        oai(0.25, 0.025, 2),
		"gpt-5-nano":        oai(0.05, 0.005, 0.40),
		"gpt-4.1":           oai(2, 0.50, 8),
		"gpt-4.1-mini":      oai(0.40, 0.10, 1.60),
		"gpt-4.1-nano":      oai(0.10, 0.025, 0.40),
		"gpt-4o":            oai(2.50, 1.25, 10),
		"gpt-4o-mini":       oai(0.15, 0.075, 0.60),
	}
}

var dated = regexp.MustCompile(`-(\d{4}-\d{2}-\d{2}|\d{8})$`)

// Lookup finds the price of model: the exact name, then without a date
// suffix (claude-sonnet-4-5-20250929, gpt-4o-2024-08-06). There is no
// prefix matching: gpt-5 is not gpt-5-mini.
func (p Prices) Lookup(model string) (Price, bool) {
	if pr, ok := p[model]; ok {
		return pr, true
	}
	m := strings.ToLower(model)
	if pr, ok := p[m]; ok {
		return pr, true
	}
	if base := dated.ReplaceAllString(m, ""); base != m {
		pr, ok := p[base]
		return pr, ok
	}
	return Price{}, false
}

// With returns a copy of p with overrides applied.
func (p Prices) With(overrides map[string]Price) Prices {
	out := make(Prices, len(p)+len(overrides))
	for k, v := range p {
		out[k] = v
	}
	for k, v := range overrides {
		out[k] = v
	}
	return out
}
