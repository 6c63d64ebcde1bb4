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
	return &logged{next: m, log: logger, feature: feature}
}

type logged struct {
	next    Model
	log     *slog.Logger
	feature Feature
}

func (l *logged) Info() Info { return l.next.Info() }

func (l *logged) Complete(ctx context.Context, req Request) (Response, error) {
	info := l.next.Info()
	start := time.Now()
	resp, err := l.next.Complete(ctx, req)
	attrs := []slog.Attr{
		slog.String("provider", info.Provider),
		slog.String("model", info.Model),
		slog.String("feature", string(l.feature)),
		slog.Int64("latency_ms", time.Since(start).Milliseconds()),
	}
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
		slog.String("answered_by", capText(resp.Model, 80)),
		slog.Int64("input_tokens", resp.Usage.InputTokens),
		slog.Int64("output_tokens", resp.Usage.OutputTokens),
		slog.Int64("cache_read_tokens", resp.Usage.CacheReadTokens),
		slog.Int64("cache_write_tokens", resp.Usage.CacheWriteTokens),
		slog.Float64("cost_usd", resp.Cost.Dollars()),
		slog.String("stop_reason", string(resp.StopReason)),
		slog.Int("tool_calls", len(resp.ToolCalls)),
		slog.Int("retries", resp.Retries),
	)
	l.log.LogAttrs(ctx, slog.LevelInfo, "llm call", attrs...)
	return resp, nil
}
