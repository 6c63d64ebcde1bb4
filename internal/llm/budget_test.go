package llm

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func userRequest(text string, maxOut int) Request {
	return Request{Messages: []Message{{Role: RoleUser, Text: text}}, MaxOutputTokens: maxOut}
}

var testPrice = Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}

// A call whose worst case does not fit is refused before the model is
// called; settling counts the real usage, not the reservation.
func TestBudgetRefusesBeforeTheCallAndSettlesOnUsage(t *testing.T) {
	t.Parallel()
	m := NewScripted(func(int, Request) Step {
		return Step{Text: "ok", Usage: &Usage{InputTokens: 100, OutputTokens: 10}}
	}, "m", testPrice)
	b, err := NewBudget(Ceiling{Tokens: 2000, Cost: USD(1)}, BudgetOptions{Feature: FeatureFix})
	if err != nil {
		t.Fatal(err)
	}
	bm := b.Model(m)
	resp, err := bm.Complete(context.Background(), userRequest("hello", 500))
	if err != nil {
		t.Fatal(err)
	}
	want := Spend{Tokens: 110, Cost: testPrice.Cost(resp.Usage)}
	if got := b.Spent(); got != want {
		t.Fatalf("spent %+v after one call, want the real usage %+v", got, want)
	}
	// Worst case 1 500 output tokens + the prompt: over 2 000 - 110.
	_, err = bm.Complete(context.Background(), userRequest("hello", 1900))
	var be *BudgetExceededError
	if !errors.As(err, &be) || be.Scope != "run" || be.Limit != "tokens" {
		t.Fatalf("over the token ceiling: %v", err)
	}
	if m.Calls() != 1 {
		t.Fatalf("the model saw %d calls, want 1: the refusal must come before the call", m.Calls())
	}
	// Cost ceiling: $1 at $15 per million output tokens is 66 666 tokens.
	b2, _ := NewBudget(Ceiling{Tokens: 1 << 40, Cost: USD(1)}, BudgetOptions{})
	if _, err := b2.Model(m).Complete(context.Background(), userRequest("hello", 70_000)); !errors.As(err, &be) || be.Limit != "cost" {
		t.Fatalf("over the cost ceiling: %v", err)
	}
	if _, err := NewBudget(Ceiling{Tokens: 1}, BudgetOptions{}); err == nil {
		t.Fatal("a budget without a cost ceiling was accepted")
	}
}

// Many goroutines reserve at once: admitted worst cases never add up past
// the ceiling, and what settles never exceeds it either.
func TestBudgetConcurrentReservationsNeverOverspend(t *testing.T) {
	t.Parallel()
	var inFlight, peak atomic.Int64
	m := NewScripted(func(int, Request) Step {
		n := inFlight.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(time.Millisecond)
		inFlight.Add(-1)
		return Step{Text: "ok", Usage: &Usage{InputTokens: 50, OutputTokens: 100}}
	}, "m", testPrice)
	ceiling := Ceiling{Tokens: 20_000, Cost: USD(10)}
	b, _ := NewBudget(ceiling, BudgetOptions{})
	bm := b.Model(m)
	req := userRequest("x", 400)
	worst := EstimateInputTokens(req) + 400
	var wg sync.WaitGroup
	var ok, refused atomic.Int64
	for range 200 {
		wg.Go(func() {
			_, err := bm.Complete(context.Background(), req)
			var be *BudgetExceededError
			switch {
			case err == nil:
				ok.Add(1)
			case errors.As(err, &be):
				refused.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if ok.Load()+refused.Load() != 200 || refused.Load() == 0 {
		t.Fatalf("ok %d refused %d: want some refusals", ok.Load(), refused.Load())
	}
	if peak.Load()*worst > ceiling.Tokens {
		t.Fatalf("%d calls in flight at once with a worst case of %d tokens each: over the ceiling of %d", peak.Load(), worst, ceiling.Tokens)
	}
	if s := b.Spent(); s.Tokens > ceiling.Tokens || s.Tokens != ok.Load()*150 {
		t.Fatalf("spent %d tokens for %d calls, ceiling %d", s.Tokens, ok.Load(), ceiling.Tokens)
	}
	if b.reserved != (Spend{}) {
		t.Fatalf("reservations left after every call returned: %+v", b.reserved)
	}
}

// A failed call with a status was not billed; a timeout may have been.
func TestBudgetSettlesFailures(t *testing.T) {
	t.Parallel()
	m := NewScripted(Steps(Step{Fail: &Failure{Status: 400}}, Step{Delay: time.Hour}), "m", testPrice)
	b, _ := NewBudget(Ceiling{Tokens: 1 << 30, Cost: USD(100)}, BudgetOptions{})
	bm := b.Model(m)
	if _, err := bm.Complete(context.Background(), userRequest("x", 100)); err == nil {
		t.Fatal("want the scripted 400")
	}
	if s := b.Spent(); s != (Spend{}) {
		t.Fatalf("a refused call was charged: %+v", s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	req := userRequest("x", 100)
	if _, err := bm.Complete(ctx, req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a timeout, got %v", err)
	}
	if s := b.Spent(); s.Tokens != EstimateInputTokens(req)+100 {
		t.Fatalf("a timed-out call settled at %+v, want its whole reservation", s)
	}
}

// A probe never spends past ProbeCeiling: a model whose worst case for the
// probe's request costs more is refused before it is called.
func TestProbeBudget(t *testing.T) {
	t.Parallel()
	ok := NewScripted(Steps(Call("quavon_probe", map[string]string{"word": "ready"})), "cheap", Price{Input: 3, Output: 15})
	if _, err := Probe(context.Background(), ok); err != nil || ok.Calls() != 1 {
		t.Fatalf("a model at $3/$15 per million fails the probe: %v (%d calls)", err, ok.Calls())
	}
	dear := NewScripted(Steps(Call("quavon_probe", map[string]string{"word": "ready"})), "dear", Price{Input: 300, Output: 1500})
	_, err := Probe(context.Background(), dear)
	var be *BudgetExceededError
	if !errors.As(err, &be) || dear.Calls() != 0 {
		t.Fatalf("a model at $300/$1500 per million: %v after %d calls, want refused before the call", err, dear.Calls())
	}
}
