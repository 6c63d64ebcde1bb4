package llm

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// WithLogging logs one line per call: provider, model, feature, tokens,
// cost, latency, stop reason, tool-call count and retries; on failure the
// error kind, status and the provider's error type. Never the prompt, the
// model's text or arguments, the provider's message or a key.
func WithLogging(m Model, logger *slog.Logger, feature Feature) Model {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	info := m.Info()
	// The fixed attributes are encoded once, not per call.
	logger = logger.With(slog.String("provider", info.Provider), slog.String("model", info.Model), slog.String("feature", string(feature)))
	return &logged{next: m, log: logger, model: info.Model}
}

type logged struct {
	next  Model
	log   *slog.Logger
	model string
}

func (l *logged) Info() Info { return l.next.Info() }

func (l *logged) Complete(ctx context.Context, req Request) (Response, error) {
	start := time.Now()
	resp, err := l.next.Complete(ctx, req)
	latency := resp.Latency // measured by the provider on success
	if err != nil || latency <= 0 {
		latency = time.Since(start)
	}
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs, slog.Int64("latency_ms", latency.Milliseconds()))
	if err != nil {
		attrs = append(attrs, slog.Int("retries", RetriesOf(err)))
		var ae *APIError
		var be *BudgetExceededError
		switch {
		case errors.As(err, &ae):
			attrs = append(attrs, slog.String("error_kind", string(ae.Kind)), slog.Int("status", ae.Status),
				slog.String("error_type", ae.Type), slog.String("request_id", ae.RequestID))
		case errors.As(err, &be):
			attrs = append(attrs, slog.String("error_kind", "budget"), slog.String("scope", be.Scope), slog.String("limit", be.Limit))
		case errors.Is(err, context.DeadlineExceeded):
			attrs = append(attrs, slog.String("error_kind", "timeout"))
		case errors.Is(err, context.Canceled):
			attrs = append(attrs, slog.String("error_kind", "canceled"))
		case errors.Is(err, ErrInvalidRequest):
			attrs = append(attrs, slog.String("error_kind", "invalid_request"))
		default:
			attrs = append(attrs, slog.String("error_kind", "transport"))
		}
		l.log.LogAttrs(ctx, slog.LevelWarn, "llm call failed", attrs...)
		return resp, err
	}
	attrs = append(attrs,
		slog.Int64("input_tokens", resp.Usage.InputTokens),
		slog.Int64("output_tokens", resp.Usage.OutputTokens),
		slog.Int64("cost_micro_usd", int64(resp.Cost)),
		slog.String("stop_reason", string(resp.StopReason)),
		slog.Int("tool_calls", len(resp.ToolCalls)),
		slog.Int("retries", resp.Retries),
	)
	// Rarer facts only when they are there, to keep the common line short.
	if u := resp.Usage; u.CacheReadTokens != 0 || u.CacheWriteTokens != 0 {
		attrs = append(attrs, slog.Int64("cache_read_tokens", u.CacheReadTokens), slog.Int64("cache_write_tokens", u.CacheWriteTokens))
	}
	if resp.Model != l.model {
		attrs = append(attrs, slog.String("answered_by", safeModel(resp.Model)))
	}
	l.log.LogAttrs(ctx, slog.LevelInfo, "llm call", attrs...)
	return resp, nil
}

// safeModel is the answering model's name as a provider reported it, kept
// only when it looks like a model name.
func safeModel(s string) string {
	if len(s) > 100 {
		return "?"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return "?"
		}
	}
	return s
}
