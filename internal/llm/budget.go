package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
)

// Spend is tokens and cost.
type Spend struct {
	Tokens int64
	Cost   Micros
}

func (s Spend) add(o Spend) Spend { return Spend{s.Tokens + o.Tokens, s.Cost + o.Cost} }
func (s Spend) sub(o Spend) Spend { return Spend{s.Tokens - o.Tokens, s.Cost - o.Cost} }

// Ceiling bounds a Spend. Both limits are required (≥ 1).
type Ceiling = Spend

// BudgetExceededError refuses a call whose worst case does not fit: the run
// (spec §4: the run fails with this reason and is not retried) or the
// feature's daily ceiling of the tenant.
type BudgetExceededError struct {
	Scope   string // "run" or "daily"
	Feature Feature
	Limit   string // "tokens" or "cost"
	// Used counts settled calls and the reservations of calls in flight;
	// Requested is this call's worst case.
	Used, Requested, Ceiling Spend
}

func (e *BudgetExceededError) Error() string {
	scope := "run"
	if e.Scope == "daily" {
		scope = "daily " + string(e.Feature)
	}
	if e.Limit == "cost" {
		return fmt.Sprintf("llm: %s budget exceeded: cost ceiling %s, used %s, this call up to %s",
			scope, e.Ceiling.Cost, e.Used.Cost, e.Requested.Cost)
	}
	return fmt.Sprintf("llm: %s budget exceeded: token ceiling %d, used %d, this call up to %d",
		scope, e.Ceiling.Tokens, e.Used.Tokens, e.Requested.Tokens)
}

// Daily is a ceiling shared by every run of one feature and tenant for a
// UTC day, held elsewhere (Postgres: NewDailyLedger). Reserve takes the
// worst case or refuses with *BudgetExceededError; Settle replaces a
// reservation with the real spend.
type Daily interface {
	Reserve(ctx context.Context, worst Spend) (Reservation, error)
	Settle(ctx context.Context, r Reservation, actual Spend) error
}

// Reservation is a Daily reservation, settled exactly once.
type Reservation struct {
	Day   string // the UTC day it counts against
	Spend Spend
}

// Budget holds the token and cost ceilings of one run. Before every call
// its Model reserves the worst case (EstimateInputTokens plus
// MaxOutputTokens, priced at the dearer input rate) against the run and,
// when set, the daily ceiling, and refuses with *BudgetExceededError when
// it does not fit, without calling the model; after the call it settles on
// the real usage. Reservations of concurrent calls count until settled, so
// concurrent calls never overspend. Safe for concurrent use.
type Budget struct {
	ceiling Ceiling
	feature Feature
	daily   Daily
	log     *slog.Logger

	mu       sync.Mutex
	used     Spend // settled
	reserved Spend // in flight
	calls    int
}

// BudgetOptions are optional parts of a Budget.
type BudgetOptions struct {
	Feature Feature
	// Daily, when set, is checked after the run's own ceiling.
	Daily  Daily
	Logger *slog.Logger
}

// NewBudget makes the budget of one run.
func NewBudget(c Ceiling, opts BudgetOptions) (*Budget, error) {
	if c.Tokens < 1 || c.Cost < 1 {
		return nil, errors.New("llm.NewBudget: token and cost ceilings must both be at least 1")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Budget{ceiling: c, feature: opts.Feature, daily: opts.Daily, log: log}, nil
}

// Spent is what settled calls used.
func (b *Budget) Spent() Spend {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Calls is how many calls were let through.
func (b *Budget) Calls() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

// Model wraps m: every call goes through the budget. There is no other way
// to reach m from the returned Model.
func (b *Budget) Model(m Model) Model { return &budgeted{b: b, next: m, info: m.Info()} }

type budgeted struct {
	b    *Budget
	next Model
	info Info // Info is fixed for a model's lifetime
}

func (g *budgeted) Info() Info { return g.info }

func (g *budgeted) Complete(ctx context.Context, req Request) (Response, error) {
	// The model validates the whole request; the worst case needs only
	// the output cap.
	if req.MaxOutputTokens < 1 || req.MaxOutputTokens > MaxOutputTokensLimit {
		return Response{}, fmt.Errorf("%w: MaxOutputTokens %d: want 1..%d", ErrInvalidRequest, req.MaxOutputTokens, MaxOutputTokensLimit)
	}
	b := g.b
	info := g.info
	prompt := EstimateInputTokens(req)
	worst := Spend{Tokens: prompt + int64(req.MaxOutputTokens), Cost: info.Price.WorstCase(prompt, int64(req.MaxOutputTokens))}
	if err := b.reserve(worst); err != nil {
		b.refused(ctx, err)
		return Response{}, err
	}
	var dr Reservation
	if b.daily != nil {
		var err error
		if dr, err = b.daily.Reserve(ctx, worst); err != nil {
			b.release(worst, Spend{})
			b.refused(ctx, err)
			return Response{}, err
		}
	}
	resp, err := g.next.Complete(ctx, req)
	actual := Spend{Tokens: resp.Usage.Total(), Cost: info.Price.Cost(resp.Usage)}
	if err != nil {
		// A refusal with a status was not billed; anything else (timeout,
		// lost connection) may have been, so the reservation stands.
		var ae *APIError
		if !errors.As(err, &ae) {
			actual = worst
		}
	}
	if b.daily != nil {
		// Settle even when ctx has ended: the spend happened.
		if serr := b.daily.Settle(context.WithoutCancel(ctx), dr, actual); serr != nil {
			b.log.LogAttrs(ctx, slog.LevelError, "llm daily budget not settled: the reservation stays counted",
				slog.String("feature", string(b.feature)), slog.String("error", serr.Error()))
		}
	}
	b.release(worst, actual)
	return resp, err
}

func (b *Budget) reserve(worst Spend) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	inUse := b.used.add(b.reserved)
	next := inUse.add(worst)
	limit := ""
	switch {
	case next.Tokens > b.ceiling.Tokens:
		limit = "tokens"
	case next.Cost > b.ceiling.Cost:
		limit = "cost"
	}
	if limit != "" {
		return &BudgetExceededError{Scope: "run", Feature: b.feature, Limit: limit, Used: inUse, Requested: worst, Ceiling: b.ceiling}
	}
	b.reserved = b.reserved.add(worst)
	b.calls++
	return nil
}

func (b *Budget) release(reserved, actual Spend) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reserved = b.reserved.sub(reserved)
	b.used = b.used.add(actual)
}

func (b *Budget) refused(ctx context.Context, err error) {
	var be *BudgetExceededError
	if errors.As(err, &be) {
		b.log.LogAttrs(ctx, slog.LevelWarn, "llm call refused by budget", slog.String("scope", be.Scope),
			slog.String("feature", string(b.feature)), slog.String("limit", be.Limit),
			slog.Int64("used_tokens", be.Used.Tokens), slog.Int64("requested_tokens", be.Requested.Tokens),
			slog.Int64("ceiling_tokens", be.Ceiling.Tokens), slog.Float64("used_usd", be.Used.Cost.Dollars()),
			slog.Float64("requested_usd", be.Requested.Cost.Dollars()), slog.Float64("ceiling_usd", be.Ceiling.Cost.Dollars()))
		return
	}
	b.log.LogAttrs(ctx, slog.LevelError, "llm daily budget unavailable: call refused",
		slog.String("feature", string(b.feature)), slog.String("error", err.Error()))
}
