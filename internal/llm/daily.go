package llm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/postgres"
)

// DailyLedger is the Daily ceiling of one feature and tenant in the table
// llm_budget_days (migration 0003: forced row-level security, one row per
// tenant, feature and UTC day). Reserve and Settle are one statement each
// in their own tenant transaction, so runs in any number of processes
// share the ceiling: the conditional upsert takes the row's lock and
// admits the reservation only if settled spend, open reservations and this
// one fit. A process that dies between Reserve and Settle leaves its
// reservation counted for the rest of the day (the safe direction).
type DailyLedger struct {
	db      *postgres.DB
	tenant  postgres.TenantID
	feature Feature
	ceiling Ceiling
	now     func() time.Time
}

var _ Daily = (*DailyLedger)(nil)

// NewDailyLedger is the ledger of feature for tenant with ceiling per day.
// now is the clock (nil: time.Now).
func NewDailyLedger(db *postgres.DB, tenant postgres.TenantID, feature Feature, ceiling Ceiling, now func() time.Time) (*DailyLedger, error) {
	if db == nil || tenant == "" {
		return nil, errors.New("llm.NewDailyLedger: database and tenant are required")
	}
	if !feature.Valid() {
		return nil, fmt.Errorf("llm.NewDailyLedger: unknown feature %q", feature)
	}
	if ceiling.Tokens < 1 || ceiling.Cost < 1 {
		return nil, errors.New("llm.NewDailyLedger: token and cost ceilings must both be at least 1")
	}
	if now == nil {
		now = time.Now
	}
	return &DailyLedger{db: db, tenant: tenant, feature: feature, ceiling: ceiling, now: now}, nil
}

// Reserve counts worst against today's ceiling or refuses.
func (d *DailyLedger) Reserve(ctx context.Context, worst Spend) (Reservation, error) {
	day := d.now().UTC().Format(time.DateOnly)
	r := Reservation{Day: day, Spend: worst}
	refuse := func(used Spend) error {
		limit := "tokens"
		if used.Tokens+worst.Tokens <= d.ceiling.Tokens {
			limit = "cost"
		}
		return &BudgetExceededError{Scope: "daily", Feature: d.feature, Limit: limit, Used: used, Requested: worst, Ceiling: d.ceiling}
	}
	if worst.Tokens > d.ceiling.Tokens || worst.Cost > d.ceiling.Cost {
		return Reservation{}, refuse(Spend{})
	}
	var admitted bool
	var used Spend
	err := d.db.InTenant(ctx, d.tenant, func(tx pgx.Tx) error {
		var tokens, cost int64
		err := tx.QueryRow(ctx, `
			INSERT INTO llm_budget_days AS d (tenant_id, feature, day, reserved_tokens, reserved_micros, calls)
			VALUES (quavon_current_tenant(), $1, $2::date, $3, $4, 1)
			ON CONFLICT (tenant_id, feature, day) DO UPDATE
				SET reserved_tokens = d.reserved_tokens + EXCLUDED.reserved_tokens,
					reserved_micros = d.reserved_micros + EXCLUDED.reserved_micros,
					calls = d.calls + 1
				WHERE d.tokens + d.reserved_tokens + EXCLUDED.reserved_tokens <= $5
					AND d.cost_micros + d.reserved_micros + EXCLUDED.reserved_micros <= $6
			RETURNING d.tokens + d.reserved_tokens, d.cost_micros + d.reserved_micros`,
			string(d.feature), day, worst.Tokens, int64(worst.Cost), d.ceiling.Tokens, int64(d.ceiling.Cost)).Scan(&tokens, &cost)
		if err == nil {
			admitted = true
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		// Refused: count the refusal and read what is in use, for the error.
		return tx.QueryRow(ctx, `
			UPDATE llm_budget_days SET refused = refused + 1
			WHERE tenant_id = quavon_current_tenant() AND feature = $1 AND day = $2::date
			RETURNING tokens + reserved_tokens, cost_micros + reserved_micros`,
			string(d.feature), day).Scan(&used.Tokens, &used.Cost)
	})
	if err != nil {
		return Reservation{}, fmt.Errorf("llm: daily %s budget: %w", d.feature, err)
	}
	if !admitted {
		return Reservation{}, refuse(used)
	}
	return r, nil
}

// Settle replaces the reservation r with the actual spend.
func (d *DailyLedger) Settle(ctx context.Context, r Reservation, actual Spend) error {
	return d.db.InTenant(ctx, d.tenant, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			UPDATE llm_budget_days SET
				reserved_tokens = reserved_tokens - $3, reserved_micros = reserved_micros - $4,
				tokens = tokens + $5, cost_micros = cost_micros + $6
			WHERE tenant_id = quavon_current_tenant() AND feature = $1 AND day = $2::date`,
			string(d.feature), r.Day, r.Spend.Tokens, int64(r.Spend.Cost), actual.Tokens, int64(actual.Cost))
		if err != nil {
			return fmt.Errorf("llm: settle daily %s budget: %w", d.feature, err)
		}
		if tag.RowsAffected() != 1 {
			return fmt.Errorf("llm: settle daily %s budget: no reservation on %s", d.feature, r.Day)
		}
		return nil
	})
}

// DailyUsage is one day's row of a feature, for reports and tests.
type DailyUsage struct {
	Settled, Reserved Spend
	Calls, Refused    int
}

// Usage reads the ledger's row for day (YYYY-MM-DD); zero when none.
func (d *DailyLedger) Usage(ctx context.Context, day string) (DailyUsage, error) {
	var u DailyUsage
	err := d.db.InTenant(ctx, d.tenant, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT tokens, cost_micros, reserved_tokens, reserved_micros, calls, refused
			FROM llm_budget_days WHERE tenant_id = quavon_current_tenant() AND feature = $1 AND day = $2::date`,
			string(d.feature), day).Scan(&u.Settled.Tokens, &u.Settled.Cost, &u.Reserved.Tokens, &u.Reserved.Cost, &u.Calls, &u.Refused)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return err
	})
	return u, err
}
