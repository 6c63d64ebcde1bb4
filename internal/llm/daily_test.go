package llm_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/quavon/quavon/internal/llm"
	"github.com/quavon/quavon/internal/llm/llmfake"
	"github.com/quavon/quavon/internal/llm/provider"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/testenv"
)

var dailyPrice = llm.Price{Input: 3, Output: 15}

// dailyUsage is what every call of the daily tests costs: 300 + 1500 µ$.
var dailyUsage = llm.Usage{InputTokens: 100, OutputTokens: 100}

func dailyRequest() llm.Request {
	return llm.Request{MaxOutputTokens: 200, Messages: []llm.Message{{Role: llm.RoleUser, Text: "judge the criteria"}}}
}

// runUntilRefused is one run: calls until the daily ceiling refuses.
func runUntilRefused(ctx context.Context, db *postgres.DB, tenant postgres.TenantID, ceiling llm.Ceiling) (llm.Spend, error) {
	ledger, err := llm.NewDailyLedger(db, tenant, llm.FeatureAcceptance, ceiling, nil)
	if err != nil {
		return llm.Spend{}, err
	}
	b, err := llm.NewBudget(llm.Ceiling{Tokens: 1 << 40, Cost: llm.USD(1000)}, llm.BudgetOptions{Feature: llm.FeatureAcceptance, Daily: ledger})
	if err != nil {
		return llm.Spend{}, err
	}
	m := b.Model(llm.NewScripted(func(int, llm.Request) llm.Step {
		return llm.Step{Text: "met", Usage: &dailyUsage}
	}, "judge", dailyPrice))
	// 27 calls fit the ceiling in all; a run making far more is not being refused.
	for range 200 {
		_, err := m.Complete(ctx, dailyRequest())
		var be *llm.BudgetExceededError
		if errors.As(err, &be) {
			if be.Scope != "daily" {
				return llm.Spend{}, fmt.Errorf("refused by the %s budget", be.Scope)
			}
			return b.Spent(), nil
		}
		if err != nil {
			return llm.Spend{}, err
		}
	}
	return b.Spent(), errors.New("200 calls and the daily ceiling never refused one")
}

// TestHelperDailyLedgerProcess is one process of TestDailyCeilingAcross
// Processes (it re-executes the test binary); on its own it does nothing.
func TestHelperDailyLedgerProcess(t *testing.T) {
	url := os.Getenv("QUAVON_TEST_LLM_CHILD_DB")
	if url == "" {
		t.Skip("helper process of TestDailyCeilingAcrossProcesses")
	}
	var ceiling llm.Ceiling
	if err := json.Unmarshal([]byte(os.Getenv("QUAVON_TEST_LLM_CHILD_CEILING")), &ceiling); err != nil {
		t.Fatal(err)
	}
	db, err := postgres.Open(context.Background(), url, "", 5)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			s, err := runUntilRefused(context.Background(), db, postgres.TenantID(os.Getenv("QUAVON_TEST_LLM_CHILD_TENANT")), ceiling)
			if err != nil {
				t.Error(err)
				return
			}
			line, _ := json.Marshal(s)
			fmt.Printf("SPEND %s\n", line)
		})
	}
	wg.Wait()
}

// 20 runs in 4 processes share one feature's daily ceiling of a tenant:
// together they never spend past it, every reservation is settled, and
// the ceiling is used up rather than refused early.
func TestDailyCeilingAcrossProcesses(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	s := cp.Seed(t, "acme", "app", "private")
	ceiling := llm.Ceiling{Tokens: 1 << 40, Cost: llm.USD(0.05)} // 27 calls of 1 800 µ$
	raw, _ := json.Marshal(ceiling)
	var mu sync.Mutex
	var total llm.Spend
	runs := 0
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperDailyLedgerProcess$", "-test.count=1")
			cmd.Env = append(os.Environ(), "QUAVON_TEST_LLM_CHILD_DB="+cp.AppURL, "QUAVON_TEST_LLM_CHILD_TENANT="+string(s.Tenant),
				"QUAVON_TEST_LLM_CHILD_CEILING="+string(raw))
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Error(err)
				return
			}
			if err := cmd.Start(); err != nil {
				t.Error(err)
				return
			}
			sc := bufio.NewScanner(out)
			var lines []string
			for sc.Scan() {
				lines = append(lines, sc.Text())
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("helper process: %v\n%v", err, lines)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, l := range lines {
				var sp llm.Spend
				if _, err := fmt.Sscanf(l, "SPEND %s", new(string)); err != nil {
					continue
				}
				if err := json.Unmarshal([]byte(l[len("SPEND "):]), &sp); err != nil {
					t.Error(err)
					continue
				}
				total.Tokens += sp.Tokens
				total.Cost += sp.Cost
				runs++
			}
		})
	}
	wg.Wait()
	if runs != 20 {
		t.Fatalf("%d runs reported, want 20", runs)
	}
	perCall := dailyPrice.Cost(dailyUsage)
	worst := dailyPrice.WorstCase(llm.EstimateInputTokens(dailyRequest()), 200)
	if total.Cost > ceiling.Cost {
		t.Fatalf("20 runs spent %v together, over the daily ceiling of %v", total.Cost, ceiling.Cost)
	}
	if total.Cost < ceiling.Cost-worst-perCall {
		t.Fatalf("20 runs spent only %v of %v: refused early", total.Cost, ceiling.Cost)
	}
	ledger, _ := llm.NewDailyLedger(cp.App, s.Tenant, llm.FeatureAcceptance, ceiling, nil)
	u, err := ledger.Usage(context.Background(), time.Now().UTC().Format(time.DateOnly))
	if err != nil {
		t.Fatal(err)
	}
	if u.Settled != total || u.Reserved != (llm.Spend{}) || u.Refused < 20 || int64(u.Calls)*int64(perCall) != int64(total.Cost) {
		t.Fatalf("ledger %+v, runs reported %+v", u, total)
	}
}

// The daily ceiling refuses before anything is sent: the provider emulator
// records no request. Another tenant's day is untouched.
func TestDailyCeilingRefusesBeforeTheRequest(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	a := cp.Seed(t, "alpha", "app", "private")
	b := cp.Seed(t, "beta", "app", "private")
	fake := llmfake.New(llmfake.Options{APIKey: "k"})
	defer fake.Close()
	m, err := provider.New(provider.Endpoint{Provider: "anthropic", Model: "claude-haiku-4-5", BaseURL: fake.AnthropicURL(), APIKey: "k",
		Price: llm.DefaultPrices()["claude-haiku-4-5"]})
	if err != nil {
		t.Fatal(err)
	}
	ceiling := llm.Ceiling{Tokens: 100, Cost: llm.USD(1)}
	la, _ := llm.NewDailyLedger(cp.App, a.Tenant, llm.FeatureReview, ceiling, nil)
	budget, _ := llm.NewBudget(llm.Ceiling{Tokens: 1 << 30, Cost: llm.USD(100)}, llm.BudgetOptions{Daily: la})
	_, err = budget.Model(m).Complete(context.Background(), dailyRequest())
	var be *llm.BudgetExceededError
	if !errors.As(err, &be) || be.Scope != "daily" || be.Limit != "tokens" {
		t.Fatalf("over the daily token ceiling: %v", err)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Fatalf("the emulator received %d requests", n)
	}
	lb, _ := llm.NewDailyLedger(cp.App, b.Tenant, llm.FeatureReview, llm.Ceiling{Tokens: 10_000, Cost: llm.USD(1)}, nil)
	budget, _ = llm.NewBudget(llm.Ceiling{Tokens: 1 << 30, Cost: llm.USD(100)}, llm.BudgetOptions{Daily: lb})
	if _, err := budget.Model(m).Complete(context.Background(), dailyRequest()); err != nil {
		t.Fatal(err)
	}
	day := time.Now().UTC().Format(time.DateOnly)
	if u, _ := la.Usage(context.Background(), day); u.Settled.Tokens != 0 {
		t.Fatalf("tenant alpha's day counts beta's call: %+v", u)
	}
	if u, _ := lb.Usage(context.Background(), day); u.Settled.Tokens == 0 || u.Reserved.Tokens != 0 {
		t.Fatalf("tenant beta's day: %+v", u)
	}
}

// A call reserved before midnight settles on the day it was reserved on.
func TestDailyReservationSettlesOnItsDay(t *testing.T) {
	cp := testenv.NewControlPlane(t, 2)
	s := cp.Seed(t, "acme", "app", "private")
	var mu sync.Mutex
	now := time.Date(2026, 11, 30, 23, 59, 59, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	l, _ := llm.NewDailyLedger(cp.App, s.Tenant, llm.FeatureFix, llm.Ceiling{Tokens: 1 << 30, Cost: llm.USD(10)}, clock)
	r, err := l.Reserve(context.Background(), llm.Spend{Tokens: 500, Cost: 900})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	if err := l.Settle(context.Background(), r, llm.Spend{Tokens: 200, Cost: 300}); err != nil {
		t.Fatal(err)
	}
	u, _ := l.Usage(context.Background(), "2026-11-30")
	if u.Settled != (llm.Spend{Tokens: 200, Cost: 300}) || u.Reserved != (llm.Spend{}) {
		t.Fatalf("30 November: %+v", u)
	}
	if err := l.Settle(context.Background(), r, llm.Spend{}); err == nil {
		t.Fatal("a reservation settled twice")
	}
}
