package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/quavon/quavon/internal/policy"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/testenv"
)

// BenchmarkPolicyRead: the effective policy of a repository (repository and
// policy row in one query, then policy.Resolve), read in a tenant-scoped
// transaction by 50 concurrent clients, against the same transaction and
// query as the database superuser, for whom row-level security does not
// apply, interleaved in one loop over 200 tenants × 5 repositories.
// Goal: rls/plain ≤ 1.2 at p50.
func BenchmarkPolicyRead(b *testing.B) {
	const tenants, reposPer, clients, readsPerClient = 200, 5, 50, 20
	cp := testenv.NewControlPlane(b, clients)
	ctx := context.Background()
	plain, err := postgres.Open(ctx, cp.DB.AdminURL, "", clients)
	if err != nil {
		b.Fatal(err)
	}
	defer plain.Close()
	doc, _ := policy.Marshal(policy.Default())
	type target struct {
		tenant postgres.TenantID
		owner  string
	}
	var targets []target
	for i := range tenants {
		s := cp.Seed(b, fmt.Sprintf("org%03d", i), "repo0", "private")
		err := cp.App.InTenant(ctx, s.Tenant, func(tx pgx.Tx) error {
			for r := 1; r < reposPer; r++ {
				if _, err := tx.Exec(ctx, `INSERT INTO repositories (tenant_id, external_id, owner, name, visibility)
					VALUES (quavon_current_tenant(), (random()*1e12)::bigint + 1, $1, $2, 'private')`,
					fmt.Sprintf("org%03d", i), fmt.Sprintf("repo%d", r)); err != nil {
					return err
				}
			}
			_, err := tx.Exec(ctx, `INSERT INTO repository_policies (tenant_id, repository_id, document)
				SELECT tenant_id, id, $1 FROM repositories`, doc)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		targets = append(targets, target{s.Tenant, fmt.Sprintf("org%03d", i)})
	}
	if _, err := cp.Admin.Exec(ctx, "ANALYZE"); err != nil {
		b.Fatal(err)
	}
	read := func(db *postgres.DB, t target, repo string) error {
		return db.InTenant(ctx, t.tenant, func(tx pgx.Tx) error {
			var visibility string
			var stored []byte
			err := tx.QueryRow(ctx, `SELECT r.visibility, p.document::text FROM repositories r
				LEFT JOIN repository_policies p ON p.tenant_id = r.tenant_id AND p.repository_id = r.id
				WHERE r.tenant_id = $1 AND r.host = 'github.com' AND lower(r.owner) = lower($2) AND lower(r.name) = lower($3)`,
				string(t.tenant), t.owner, repo).Scan(&visibility, &stored)
			if err != nil {
				return err
			}
			if eff := policy.Resolve(stored, policy.RepoFacts{Private: visibility != "public"}); eff.Invalid != nil {
				return eff.Invalid
			}
			return nil
		})
	}
	round := func(db *postgres.DB) []time.Duration {
		var mu sync.Mutex
		var wg sync.WaitGroup
		var lat []time.Duration
		for c := range clients {
			wg.Go(func() {
				local := make([]time.Duration, 0, readsPerClient)
				for i := range readsPerClient {
					t := targets[(c*readsPerClient+i)%len(targets)]
					t0 := time.Now()
					if err := read(db, t, fmt.Sprintf("repo%d", i%reposPer)); err != nil {
						b.Error(err)
						return
					}
					local = append(local, time.Since(t0))
				}
				mu.Lock()
				lat = append(lat, local...)
				mu.Unlock()
			})
		}
		wg.Wait()
		return lat
	}
	round(cp.App) // warm both pools
	round(plain)
	b.ResetTimer()
	var rls, base []time.Duration
	for i := 0; b.Loop(); i++ {
		// Alternate which goes first, so neither always runs on a warmer machine.
		if i%2 == 0 {
			rls = append(rls, round(cp.App)...)
			base = append(base, round(plain)...)
		} else {
			base = append(base, round(plain)...)
			rls = append(rls, round(cp.App)...)
		}
	}
	pct := func(l []time.Duration, p float64) float64 {
		slices.Sort(l)
		return float64(l[int(float64(len(l)-1)*p)].Microseconds()) / 1000
	}
	r50, r99, p50, p99 := pct(rls, 0.5), pct(rls, 0.99), pct(base, 0.5), pct(base, 0.99)
	b.ReportMetric(r50, "rls-p50-ms")
	b.ReportMetric(r99, "rls-p99-ms")
	b.ReportMetric(p50, "plain-p50-ms")
	b.ReportMetric(p99, "plain-p99-ms")
	b.ReportMetric(pct(rls, 0.95), "rls-p95-ms")
	b.ReportMetric(pct(base, 0.95), "plain-p95-ms")
	b.ReportMetric(r50/p50, "rls/plain-p50")
	b.ReportMetric(r99/p99, "rls/plain-p99")
}
