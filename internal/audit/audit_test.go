package audit_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gowebpki/jcs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/quavon/quavon/internal/audit"
	"github.com/quavon/quavon/internal/postgres"
	"github.com/quavon/quavon/internal/testenv"
)

// An entry commits and rolls back with the caller's transaction, belongs to
// its tenant, and bad events are refused.
func TestRecordInCallersTransaction(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	a := cp.Seed(t, "alpha", "app", "private")
	b := cp.Seed(t, "beta", "app", "private")
	ctx := context.Background()
	ev := audit.Event{ActorUserID: a.User, Actor: "user:alice", Action: "repository.policy.update",
		SubjectType: "repository", SubjectID: a.Repository, Metadata: map[string]any{"changes": []string{"/features/fix/mode"}}}
	rollback := errors.New("rollback")
	err := cp.App.InTenant(ctx, a.Tenant, func(tx pgx.Tx) error {
		if _, err := audit.Record(ctx, tx, ev); err != nil {
			return err
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatal(err)
	}
	err = cp.App.InTenant(ctx, a.Tenant, func(tx pgx.Tx) error {
		_, err := audit.Record(ctx, tx, ev)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	count := func(s testenv.Seeded) (n int) {
		err := cp.App.InTenant(ctx, s.Tenant, func(tx pgx.Tx) error {
			return tx.QueryRow(ctx, "SELECT count(*) FROM audit_log WHERE action = 'repository.policy.update'").Scan(&n)
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if count(a) != 1 || count(b) != 0 {
		t.Fatalf("entries: alpha %d (want 1: the rolled-back one is gone), beta %d", count(a), count(b))
	}
	// The rolled-back entry took no place in the chain: the one entry is entry 1.
	if r := walk(t, cp, a.Tenant, nil); !r.Intact() || r.HeadSeq != 1 || r.Entries != 1 {
		t.Fatalf("after a rollback: %+v %v", r, r.Break)
	}
	for _, bad := range []audit.Event{
		{Actor: "x", Action: "Update", SubjectType: "r", SubjectID: "1"},
		{Actor: "", Action: "a.b", SubjectType: "r", SubjectID: "1"},
		{Actor: "x", Action: "a.b", SubjectType: "r", SubjectID: "1", Metadata: strings.Repeat("x", 70<<10)},
		{Actor: "x", Action: "a.b", SubjectType: "r", SubjectID: "1", ActorUserID: "not-a-uuid"},
		{Actor: "x\x00y", Action: "a.b", SubjectType: "r", SubjectID: "1"},
		{Actor: "x", Action: "a.b", SubjectType: "r", SubjectID: "\xff"},
		{Actor: "x", Action: "a.b", SubjectType: "r", SubjectID: "1", Metadata: map[string]string{"k": "a\x00b"}},
		{Actor: "x", Action: "a.b", SubjectType: "r", SubjectID: "1", Metadata: math.Inf(1)},
		{Actor: "x", Action: "a.b", SubjectType: "r", SubjectID: "1", Metadata: json.RawMessage(`{"a":1,"a":2}`)},
	} {
		err := cp.App.InTenant(ctx, a.Tenant, func(tx pgx.Tx) error { _, err := audit.Record(ctx, tx, bad); return err })
		if err == nil || !strings.HasPrefix(err.Error(), "audit: ") {
			t.Errorf("%q %q: err = %v, want a refusal from audit", bad.Action, bad.SubjectID, err)
		}
	}
}

// walk verifies tenant's chain as the service role, in a snapshot.
func walk(t testing.TB, cp *testenv.ControlPlane, tenant postgres.TenantID, anchor *audit.Anchor) *audit.Report {
	t.Helper()
	r, _ := walkEntries(t, cp, tenant, anchor)
	return r
}

func walkEntries(t testing.TB, cp *testenv.ControlPlane, tenant postgres.TenantID, anchor *audit.Anchor) (*audit.Report, []audit.Entry) {
	t.Helper()
	var r *audit.Report
	var entries []audit.Entry
	err := cp.App.InTenantSnapshot(context.Background(), tenant, func(tx pgx.Tx) error {
		var err error
		r, err = audit.Walk(context.Background(), tx, anchor, func(e *audit.Entry) error {
			entries = append(entries, *e)
			return nil
		})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return r, entries
}

// recordN records n entries in tenant, one transaction each, with metadata
// that exercises canonicalisation.
func recordN(t testing.TB, cp *testenv.ControlPlane, s testenv.Seeded, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		err := cp.App.InTenant(ctx, s.Tenant, func(tx pgx.Tx) error {
			_, err := audit.Record(ctx, tx, audit.Event{ActorUserID: s.User, Actor: "user:alice", Action: "repository.policy.update",
				SubjectType: "repository", SubjectID: s.Repository, Metadata: trickyMetadata(i)})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// trickyMetadata is JSON whose jsonb round trip changes its text but not its
// canonical form: key order, escapes, numbers in other notations, non-ASCII,
// nesting.
func trickyMetadata(i int) any {
	return map[string]any{
		"z": i, "a": []any{1e21, 5e-324, 0.1, math.Copysign(0, -1), 1.5e300, 9007199254740993, 1e-7, 123456789012.5},
		"esc": "quote \" backslash \\ tab \t nl \n ctl \u001f <html> & \u2028 \u00e9 \U0001F600 e\u0301",
		"€":   map[string]any{"b": nil, "a": true, "c": false, "": "empty key"}, "nested": [][]any{{}, {map[string]any{}}},
		"big": math.MaxInt64, "neg": -42, "10": "ten", "1": "one", "\u00e9": "é key", "e\u0301": "decomposed key",
	}
}

// The chain over Record's entries is intact, every hash is what the package
// documentation says (recomputed here with the JCS library directly), each
// entry points at the one before, and the first at 64 zeros.
func TestChainIsIntactAndRecomputable(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	a := cp.Seed(t, "alpha", "app", "private")
	b := cp.Seed(t, "beta", "app", "private")
	recordN(t, cp, a, 12)
	recordN(t, cp, b, 3)
	r, entries := walkEntries(t, cp, a.Tenant, nil)
	if !r.Intact() || r.Entries != 12 || r.HeadSeq != 12 || r.Unchained != 0 || len(entries) != 12 {
		t.Fatalf("report %+v, break %v, %d entries", r, r.Break, len(entries))
	}
	prev := strings.Repeat("0", 64)
	for i, e := range entries {
		if e.Seq != int64(i+1) || e.TenantID != string(a.Tenant) || e.PrevHash != prev {
			t.Fatalf("entry %d: seq %d tenant %s prev %s", i, e.Seq, e.TenantID, e.PrevHash)
		}
		line, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := json.Unmarshal(line, &obj); err != nil {
			t.Fatal(err)
		}
		delete(obj, "hash")
		raw, _ := json.Marshal(obj)
		c, err := jcs.Transform(raw)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(append([]byte("quavon-audit-entry:v1\n"), c...))
		if hex.EncodeToString(sum[:]) != e.Hash {
			t.Fatalf("entry %d: hash %s, recomputed %x over %s", e.Seq, e.Hash, sum, c)
		}
		if _, err := time.Parse("2006-01-02T15:04:05.000000Z", e.At); err != nil {
			t.Fatalf("at %q: %v", e.At, err)
		}
		prev = e.Hash
	}
	if r.HeadHash != prev {
		t.Fatalf("head %s, last entry %s", r.HeadHash, prev)
	}
	if r := walk(t, cp, b.Tenant, nil); !r.Intact() || r.Entries != 3 {
		t.Fatalf("beta: %+v %v", r, r.Break)
	}
	// A tenant without entries is intact and empty.
	c := cp.Seed(t, "gamma", "app", "private")
	if r := walk(t, cp, c.Tenant, nil); !r.Intact() || r.Entries != 0 || r.HeadSeq != 0 {
		t.Fatalf("empty tenant: %+v %v", r, r.Break)
	}
}

// Walk refuses a transaction whose statements see different snapshots.
func TestWalkNeedsASnapshot(t *testing.T) {
	cp := testenv.NewControlPlane(t, 2)
	a := cp.Seed(t, "alpha", "app", "private")
	ctx := context.Background()
	err := cp.App.InTenant(ctx, a.Tenant, func(tx pgx.Tx) error {
		_, err := audit.Walk(ctx, tx, nil, nil)
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "repeatable read") {
		t.Fatalf("Walk in READ COMMITTED: %v", err)
	}
}

// Parallel writers of one tenant each get their own place in one chain;
// writers of another tenant do not wait for them.
func TestConcurrentWritersOneTenant(t *testing.T) {
	const writers, each = 12, 15
	cp := testenv.NewControlPlane(t, writers+4)
	a := cp.Seed(t, "alpha", "app", "private")
	b := cp.Seed(t, "beta", "app", "private")
	ctx := context.Background()
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range each {
				err := cp.App.InTenant(ctx, a.Tenant, func(tx pgx.Tx) error {
					// Some work of the caller's in the same transaction, before the entry.
					if _, err := tx.Exec(ctx, "INSERT INTO webhook_deliveries (tenant_id, delivery_id, event) VALUES (quavon_current_tenant(), gen_random_uuid()::text, 'ping')"); err != nil {
						return err
					}
					_, err := audit.Record(ctx, tx, audit.Event{Actor: fmt.Sprintf("writer-%d", w), Action: "test.write",
						SubjectType: "writer", SubjectID: fmt.Sprint(i), Metadata: map[string]int{"w": w, "i": i}})
					return err
				})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	r, entries := walkEntries(t, cp, a.Tenant, nil)
	if !r.Intact() || r.Entries != writers*each || r.HeadSeq != writers*each {
		t.Fatalf("after %d parallel entries: %+v, break %v", writers*each, r, r.Break)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		seen[e.Actor+"/"+e.SubjectID] = true
	}
	if len(seen) != writers*each {
		t.Fatalf("%d distinct entries, want %d", len(seen), writers*each)
	}

	// A transaction holding alpha's head does not hold up beta.
	held := make(chan struct{})
	release := make(chan struct{})
	go func() {
		_ = cp.App.InTenant(ctx, a.Tenant, func(tx pgx.Tx) error {
			if _, err := audit.Record(ctx, tx, audit.Event{Actor: "holder", Action: "test.hold", SubjectType: "t", SubjectID: "1"}); err != nil {
				return err
			}
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	other := make(chan error, 1)
	go func() {
		other <- cp.App.InTenant(ctx, b.Tenant, func(tx pgx.Tx) error {
			_, err := audit.Record(ctx, tx, audit.Event{Actor: "other", Action: "test.other", SubjectType: "t", SubjectID: "1"})
			return err
		})
	}()
	select {
	case err := <-other:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("beta's entry waited for alpha's open transaction")
	}
	// While alpha's head is held, alpha's next writer waits; it goes on after.
	waited := make(chan error, 1)
	go func() {
		waited <- cp.App.InTenant(ctx, a.Tenant, func(tx pgx.Tx) error {
			_, err := audit.Record(ctx, tx, audit.Event{Actor: "waiter", Action: "test.wait", SubjectType: "t", SubjectID: "1"})
			return err
		})
	}()
	select {
	case err := <-waited:
		t.Fatalf("alpha's second writer did not wait for the first: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	if r := walk(t, cp, a.Tenant, nil); !r.Intact() || r.Entries != writers*each+2 {
		t.Fatalf("alpha at the end: %+v %v", r, r.Break)
	}
}

// superuser runs stmts as the server's superuser with triggers off (the
// append-only and chain triggers included): what someone with full access
// to the database can do.
func superuser(t testing.TB, cp *testenv.ControlPlane, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, cp.Admin, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SET LOCAL session_replication_role = replica"); err != nil {
			return err
		}
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// anchorOf is an export of tenant's log as an anchor.
func anchorOf(t testing.TB, entries []audit.Entry) *audit.Anchor {
	t.Helper()
	var buf bytes.Buffer
	for _, e := range entries {
		line, _ := json.Marshal(e)
		buf.Write(append(line, '\n'))
	}
	a, err := audit.ReadAnchor(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Whatever someone with the database's superuser does to the log, Walk names
// the first entry it touched.
func TestTamperingIsFound(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	cases := []struct {
		name   string
		tamper func(tenant string, entries []audit.Entry) []string
		// with the anchor taken before the tampering
		anchored bool
		seq      int64
		reason   string
	}{
		{name: "edited metadata", seq: 3, reason: "does not match its content", tamper: func(tn string, _ []audit.Entry) []string {
			return []string{fmt.Sprintf(`UPDATE audit_log SET metadata = jsonb_set(metadata, '{z}', '99') WHERE tenant_id = '%s' AND seq = 3`, tn)}
		}},
		{name: "edited actor", seq: 4, reason: "does not match its content", tamper: func(tn string, _ []audit.Entry) []string {
			return []string{fmt.Sprintf(`UPDATE audit_log SET actor = 'user:mallory' WHERE tenant_id = '%s' AND seq = 4`, tn)}
		}},
		{name: "edited time", seq: 2, reason: "does not match its content", tamper: func(tn string, _ []audit.Entry) []string {
			return []string{fmt.Sprintf(`UPDATE audit_log SET at = at - interval '1 day' WHERE tenant_id = '%s' AND seq = 2`, tn)}
		}},
		{name: "metadata no decoder reads alike", seq: 5, reason: "not canonical JSON", tamper: func(tn string, _ []audit.Entry) []string {
			return []string{fmt.Sprintf(`UPDATE audit_log SET metadata = '{"n": 1e400}' WHERE tenant_id = '%s' AND seq = 5`, tn)}
		}},
		{name: "deleted entry", seq: 3, reason: "missing: the log goes from entry 2 to entry 4", tamper: func(tn string, _ []audit.Entry) []string {
			return []string{fmt.Sprintf(`DELETE FROM audit_log WHERE tenant_id = '%s' AND seq = 3`, tn)}
		}},
		{name: "deleted first entry", seq: 1, reason: "missing: the log starts at entry 2", tamper: func(tn string, _ []audit.Entry) []string {
			return []string{fmt.Sprintf(`DELETE FROM audit_log WHERE tenant_id = '%s' AND seq = 1`, tn)}
		}},
		{name: "deleted last entry", seq: 6, reason: "the chain head is at entry 6", tamper: func(tn string, _ []audit.Entry) []string {
			return []string{fmt.Sprintf(`DELETE FROM audit_log WHERE tenant_id = '%s' AND seq = 6`, tn)}
		}},
		{name: "deleted last entry and moved the head back", anchored: true, seq: 6, reason: "the anchor holds entries up to 6", tamper: func(tn string, es []audit.Entry) []string {
			return []string{fmt.Sprintf(`DELETE FROM audit_log WHERE tenant_id = '%s' AND seq = 6`, tn),
				fmt.Sprintf(`UPDATE audit_heads SET seq = 5, hash = decode('%s', 'hex') WHERE tenant_id = '%s'`, es[4].Hash, tn)}
		}},
		{name: "reordered entries", seq: 3, reason: "prev_hash is not the hash of entry 2", tamper: func(tn string, _ []audit.Entry) []string {
			return []string{
				fmt.Sprintf(`UPDATE audit_log SET seq = 1000 WHERE tenant_id = '%s' AND seq = 3`, tn),
				fmt.Sprintf(`UPDATE audit_log SET seq = 3 WHERE tenant_id = '%s' AND seq = 4`, tn),
				fmt.Sprintf(`UPDATE audit_log SET seq = 4 WHERE tenant_id = '%s' AND seq = 1000`, tn)}
		}},
		{name: "entries swapped with their hashes", seq: 3, reason: "prev_hash is not the hash of entry 2", tamper: func(tn string, _ []audit.Entry) []string {
			// Rows keep their positions; everything else changes places.
			cols := "at = o.at, actor = o.actor, action = o.action, subject_type = o.subject_type, subject_id = o.subject_id, metadata = o.metadata, prev_hash = o.prev_hash, hash = o.hash"
			return []string{fmt.Sprintf(`UPDATE audit_log a SET %s FROM audit_log o WHERE a.tenant_id = '%s' AND o.tenant_id = a.tenant_id AND
				((a.seq = 3 AND o.seq = 4) OR (a.seq = 4 AND o.seq = 3))`, cols, tn)}
		}},
		{name: "entry moved to another tenant", seq: 2, reason: "missing", tamper: func(tn string, _ []audit.Entry) []string {
			return []string{fmt.Sprintf(`UPDATE audit_log SET tenant_id = gen_random_uuid() WHERE tenant_id = '%s' AND seq = 2`, tn)}
		}},
		{name: "entry inserted beyond the head", seq: 7, reason: "beyond the chain head", tamper: func(tn string, es []audit.Entry) []string {
			return []string{fmt.Sprintf(`INSERT INTO audit_log (tenant_id, seq, actor, action, subject_type, subject_id, prev_hash, hash)
				VALUES ('%s', 7, 'user:mallory', 'token.create', 'user', 'x', decode('%s', 'hex'), sha256('x'))`, tn, es[5].Hash)}
		}},
		{name: "hash removed", seq: 4, reason: "no hash", tamper: func(tn string, _ []audit.Entry) []string {
			return []string{fmt.Sprintf(`UPDATE audit_log SET hash = NULL, prev_hash = NULL WHERE tenant_id = '%s' AND seq = 4`, tn)}
		}},
		{name: "head changed", seq: 6, reason: "head's hash is not the last entry's", tamper: func(tn string, _ []audit.Entry) []string {
			return []string{fmt.Sprintf(`UPDATE audit_heads SET hash = sha256('x') WHERE tenant_id = '%s'`, tn)}
		}},
		{name: "head removed", seq: 1, reason: "no chain head", tamper: func(tn string, _ []audit.Entry) []string {
			return []string{fmt.Sprintf(`DELETE FROM audit_heads WHERE tenant_id = '%s'`, tn)}
		}},
		{name: "rewritten with recomputed hashes", anchored: true, seq: 3, reason: "differs from the anchor", tamper: func(tn string, es []audit.Entry) []string {
			// The strongest attacker: entry 3 changed, every later hash and the head recomputed.
			var stmts []string
			prev := es[1].Hash
			for i := 2; i < len(es); i++ {
				e := es[i]
				if i == 2 {
					e.Actor = "user:mallory"
				}
				e.PrevHash = prev
				h, err := e.ComputeHash()
				if err != nil {
					t.Fatal(err)
				}
				stmts = append(stmts, fmt.Sprintf(`UPDATE audit_log SET actor = '%s', prev_hash = decode('%s', 'hex'), hash = decode('%s', 'hex')
					WHERE tenant_id = '%s' AND seq = %d`, e.Actor, e.PrevHash, h, tn, e.Seq))
				prev = h
			}
			return append(stmts, fmt.Sprintf(`UPDATE audit_heads SET hash = decode('%s', 'hex') WHERE tenant_id = '%s'`, prev, tn))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := cp.Seed(t, "t"+strings.ReplaceAll(c.name, " ", "-"), "app", "private")
			recordN(t, cp, s, 6)
			before, entries := walkEntries(t, cp, s.Tenant, nil)
			if !before.Intact() {
				t.Fatalf("broken before tampering: %v", before.Break)
			}
			superuser(t, cp, c.tamper(string(s.Tenant), entries)...)
			var anchor *audit.Anchor
			if c.anchored {
				// Without the anchor, this tampering is not visible.
				if r := walk(t, cp, s.Tenant, nil); !r.Intact() {
					t.Fatalf("want the chain alone to miss this, got %v", r.Break)
				}
				anchor = anchorOf(t, entries)
			}
			r := walk(t, cp, s.Tenant, anchor)
			if r.Intact() {
				t.Fatalf("tampering not found: %+v", r)
			}
			if r.Break.Seq != c.seq || !strings.Contains(r.Break.Reason, c.reason) {
				t.Fatalf("break %v, want entry %d: …%s…", r.Break, c.seq, c.reason)
			}
		})
	}
}

// The database refuses, for the service role and the superuser alike, every
// insert that does not extend the chain: nothing can fork or skip it, even
// without Record.
func TestInsertsAroundTheChainAreRefused(t *testing.T) {
	cp := testenv.NewControlPlane(t, 4)
	a := cp.Seed(t, "alpha", "app", "private")
	b := cp.Seed(t, "beta", "app", "private")
	recordN(t, cp, a, 2)
	ctx := context.Background()
	r := walk(t, cp, a.Tenant, nil)
	insert := func(seq int, prev, hash string) string {
		return fmt.Sprintf(`INSERT INTO audit_log (tenant_id, seq, actor, action, subject_type, subject_id, prev_hash, hash)
			VALUES (quavon_current_tenant(), %d, 'x', 'a.b', 's', 'i', %s, %s)`, seq, prev, hash)
	}
	head := "decode('" + r.HeadHash + "', 'hex')"
	for _, c := range []struct {
		name, sql, code string
	}{
		{"skips a place", insert(4, head, "sha256('x')"), "23514"},
		{"repeats a place", insert(2, head, "sha256('x')"), "23514"},
		{"forks from an older entry", insert(3, "sha256('y')", "sha256('x')"), "23514"},
		{"no hash", insert(3, head, "NULL"), "23514"},
		{"another tenant's", strings.Replace(insert(3, head, "sha256('x')"), "quavon_current_tenant()", "'"+string(b.Tenant)+"'", 1), "42501"},
	} {
		for _, role := range []string{"service", "superuser"} {
			run := func(tx pgx.Tx) error { _, err := tx.Exec(ctx, c.sql); return err }
			var err error
			if role == "service" {
				err = cp.App.InTenant(ctx, a.Tenant, run)
			} else {
				err = pgx.BeginFunc(ctx, cp.Admin, func(tx pgx.Tx) error {
					if _, err := tx.Exec(ctx, "SELECT set_config('quavon.tenant_id', $1, true)", string(a.Tenant)); err != nil {
						return err
					}
					return run(tx)
				})
			}
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != c.code {
				t.Errorf("%s as %s: err = %v, want SQLSTATE %s", c.name, role, err, c.code)
			}
		}
	}
	// A tenant that never recorded has no head to extend.
	err := cp.App.InTenant(ctx, b.Tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, insert(1, "decode(repeat('00', 32), 'hex')", "sha256('x')"))
		return err
	})
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23514" {
		t.Errorf("first entry without the head: %v", err)
	}
	// The service role cannot move a head itself.
	err = cp.App.InTenant(ctx, a.Tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "UPDATE audit_heads SET seq = seq + 1")
		return err
	})
	if !errors.As(err, &pe) || pe.Code != "42501" {
		t.Errorf("service role updating its head: %v", err)
	}
	if r := walk(t, cp, a.Tenant, nil); !r.Intact() || r.Entries != 2 {
		t.Fatalf("after the refusals: %+v %v", r, r.Break)
	}
}
