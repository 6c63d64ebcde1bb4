package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/audit"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/testenv"
)

// BenchmarkAuditRecord: an audited transaction (one audit.Record, the hash
// chain: head lock, canonical JSON, SHA-256, the chain trigger) against the
// same transaction writing the same entry unchained (json.Marshal and one
// INSERT into audit_log as it was before the chain: same columns, indexes
// and forced RLS, no trigger), interleaved in one run, in three shapes: one
// writer; 8 writers in 8 tenants; 8 writers in one tenant (the chain
// serialises them from Record to commit). Each ratio is the median over
// interleaved pairs of rounds. Then Walk (verify) of 5,000 entries against
// reading the same rows. Goals: one writer and 8 tenants ≤ 2.5× (the chain
// adds a round trip for the head and the head's update to a transaction
// that does nothing else; real audited transactions do more); one tenant is
// the price of a total order, reported, not capped; verify ≥ 10,000
// entries/s.
func BenchmarkAuditRecord(b *testing.B) {
	const writers, perWriter, walkEntries = 8, 25, 5000
	cp := testenv.NewControlPlane(b, writers+2)
	ctx := context.Background()
	// The baseline is audit_log as it was before the chain: the same columns,
	// primary key, index on (tenant_id, at) and forced row-level security.
	if _, err := cp.Admin.Exec(ctx, `CREATE TABLE bench_audit_plain (LIKE audit_log INCLUDING DEFAULTS INCLUDING IDENTITY);
		ALTER TABLE bench_audit_plain ADD PRIMARY KEY (id);
		CREATE INDEX ON bench_audit_plain (tenant_id, at);
		ALTER TABLE bench_audit_plain ENABLE ROW LEVEL SECURITY;
		ALTER TABLE bench_audit_plain FORCE ROW LEVEL SECURITY;
		CREATE POLICY tenant_isolation ON bench_audit_plain
			USING (tenant_id = quavon_current_tenant()) WITH CHECK (tenant_id = quavon_current_tenant());
		GRANT SELECT, INSERT ON bench_audit_plain TO quavon_app`); err != nil {
		b.Fatal(err)
	}
	var tenants []testenv.Seeded
	for i := range writers {
		tenants = append(tenants, cp.Seed(b, fmt.Sprintf("org%d", i), "app", "private"))
	}
	event := func(w, i int) audit.Event {
		return audit.Event{ActorUserID: tenants[0].User, Actor: "user:ada", Action: "repository.policy.update",
			SubjectType: "repository", SubjectID: tenants[0].Repository,
			Metadata: map[string]any{"repository": "acme/app", "fromVersion": i, "toVersion": i + 1,
				"changes": []map[string]any{{"path": "/features/fix/mode", "old": "off", "new": "approval"}}, "writer": w}}
	}
	chained := func(tn postgres.TenantID, e audit.Event) error {
		return cp.App.InTenant(ctx, tn, func(tx pgx.Tx) error {
			_, err := audit.Record(ctx, tx, e)
			return err
		})
	}
	plain := func(tn postgres.TenantID, e audit.Event) error {
		return cp.App.InTenant(ctx, tn, func(tx pgx.Tx) error {
			meta, err := json.Marshal(e.Metadata)
			if err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `INSERT INTO bench_audit_plain (tenant_id, seq, actor_user_id, actor, action, subject_type, subject_id, metadata)
				VALUES (quavon_current_tenant(), 1, $1, $2, $3, $4, $5, $6)`, e.ActorUserID, e.Actor, e.Action, e.SubjectType, e.SubjectID, meta)
			return err
		})
	}
	// shape runs writers × perWriter entries through write and returns the wall time.
	shape := func(write func(postgres.TenantID, audit.Event) error, n int, oneTenant bool) time.Duration {
		var wg sync.WaitGroup
		t0 := time.Now()
		for w := range n {
			tn := tenants[w].Tenant
			if oneTenant {
				tn = tenants[0].Tenant
			}
			wg.Go(func() {
				for i := range perWriter {
					if err := write(tn, event(w, i)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		return time.Since(t0)
	}
	shapes := []struct {
		name      string
		n         int
		oneTenant bool
	}{{"one-writer", 1, false}, {"8-tenants", writers, false}, {"one-tenant", writers, true}}
	for _, s := range shapes { // warm up
		shape(chained, s.n, s.oneTenant)
		shape(plain, s.n, s.oneTenant)
	}
	// Per shape, the ratio of each interleaved pair of rounds; the median of
	// those is robust to bursts of load from other processes on the machine.
	ratios := make([][]float64, len(shapes))
	rates := make([][2][]float64, len(shapes))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		for j, s := range shapes {
			var c, p time.Duration
			// Alternate which goes first, so neither always runs on a warmer machine.
			if i%2 == 0 {
				c, p = shape(chained, s.n, s.oneTenant), shape(plain, s.n, s.oneTenant)
			} else {
				p, c = shape(plain, s.n, s.oneTenant), shape(chained, s.n, s.oneTenant)
			}
			entries := float64(s.n * perWriter)
			ratios[j] = append(ratios[j], c.Seconds()/p.Seconds())
			rates[j][0] = append(rates[j][0], entries/c.Seconds())
			rates[j][1] = append(rates[j][1], entries/p.Seconds())
		}
	}
	b.StopTimer()
	median := func(v []float64) float64 {
		slices.Sort(v)
		return v[len(v)/2]
	}
	for j, s := range shapes {
		b.ReportMetric(median(rates[j][0]), s.name+"-chain-entries/s")
		b.ReportMetric(median(rates[j][1]), s.name+"-plain-entries/s")
		b.ReportMetric(median(ratios[j]), s.name+"-chain/plain")
	}

	// Verify: Walk of one tenant's chain against reading the same rows.
	walker := cp.Seed(b, "walker", "app", "private")
	for i := 0; i < walkEntries; i += 500 {
		err := cp.App.InTenant(ctx, walker.Tenant, func(tx pgx.Tx) error {
			for k := range 500 {
				if _, err := audit.Record(ctx, tx, event(0, i+k)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	var walkT, readT time.Duration
	for range 3 {
		t0 := time.Now()
		err := cp.App.InTenantSnapshot(ctx, walker.Tenant, func(tx pgx.Tx) error {
			r, err := audit.Walk(ctx, tx, nil, nil)
			if err == nil && (!r.Intact() || r.Entries != walkEntries) {
				err = fmt.Errorf("walk: %+v %v", r, r.Break)
			}
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		walkT += time.Since(t0)
		t0 = time.Now()
		err = cp.App.InTenantSnapshot(ctx, walker.Tenant, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `SELECT id, seq, at, actor_user_id::text, actor, action, subject_type, subject_id, metadata::text, prev_hash, hash
				FROM audit_log WHERE tenant_id = quavon_current_tenant() ORDER BY seq`)
			if err != nil {
				return err
			}
			n := 0
			for rows.Next() {
				n++
			}
			if n != walkEntries {
				return fmt.Errorf("read %d rows", n)
			}
			return rows.Err()
		})
		if err != nil {
			b.Fatal(err)
		}
		readT += time.Since(t0)
	}
	b.ReportMetric(float64(3*walkEntries)/walkT.Seconds(), "verify-entries/s")
	b.ReportMetric(walkT.Seconds()/readT.Seconds(), "verify/read")
}
