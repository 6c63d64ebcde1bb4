package audit

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"time"

	"github.com/jackc/pgx/v5"
)

// Break is the first entry of a tenant at which the chain does not hold.
type Break struct {
	// Seq is the entry's position; for a missing entry, the position it
	// should have.
	Seq int64
	// ID is the entry's row id (0 for a missing entry).
	ID     int64
	Reason string
}

func (b *Break) String() string {
	if b.ID == 0 {
		return fmt.Sprintf("entry %d: %s", b.Seq, b.Reason)
	}
	return fmt.Sprintf("entry %d (row id %d): %s", b.Seq, b.ID, b.Reason)
}

// Report is what [Walk] found for one tenant.
type Report struct {
	Tenant string
	// Entries is how many entries were read; Unchained how many of them
	// date from before the chain (migration 0005).
	Entries, Unchained int64
	// HeadSeq and HeadHash are the tenant's chain head (audit_heads): the
	// last entry's position and hash, the values to keep as an anchor.
	HeadSeq  int64
	HeadHash string
	// Anchored is how many entries were checked against the anchor.
	Anchored int64
	// Break is the first broken entry; nil when the chain is intact.
	Break *Break
}

// Intact says whether the chain holds.
func (r *Report) Intact() bool { return r.Break == nil }

func (r *Report) broken(seq, id int64, format string, args ...any) {
	if r.Break == nil {
		r.Break = &Break{Seq: seq, ID: id, Reason: fmt.Sprintf(format, args...)}
	}
}

// Walk reads every entry of tx's tenant in order, checks the chain (see the
// package documentation) and calls fn, when not nil, with every entry read,
// broken or not. The hashes of anchor's entries for the tenant, when anchor
// is not nil, must be those in the log. An error is returned only when the
// log cannot be read or fn fails; a broken chain is the Report's Break.
//
// tx must be a REPEATABLE READ (or SERIALIZABLE) transaction
// (postgres.DB.InTenantSnapshot), so that the head and the entries are one
// snapshot while writers go on, and an entry beyond the head is tampering,
// not a writer that committed in between.
func Walk(ctx context.Context, tx pgx.Tx, anchor *Anchor, fn func(*Entry) error) (*Report, error) {
	r := &Report{}
	var headHash []byte
	var hasHead bool
	var isolation string
	err := tx.QueryRow(ctx, `SELECT current_setting('transaction_isolation'), coalesce(quavon_current_tenant()::text, ''),
			coalesce(h.seq, 0), coalesce(h.hash, ''::bytea), coalesce(h.unchained, 0), h.tenant_id IS NOT NULL
		FROM (SELECT 1) one LEFT JOIN audit_heads h ON h.tenant_id = quavon_current_tenant()`).
		Scan(&isolation, &r.Tenant, &r.HeadSeq, &headHash, &r.Unchained, &hasHead)
	if err != nil {
		return nil, fmt.Errorf("audit: chain head: %w", err)
	}
	if isolation != "repeatable read" && isolation != "serializable" {
		return nil, fmt.Errorf("audit: Walk needs a repeatable read transaction, not %s", isolation)
	}
	if r.Tenant == "" {
		return nil, errors.New("audit: no tenant in this transaction")
	}
	r.HeadHash = hex.EncodeToString(headHash)
	anchored := anchor.tenant(r.Tenant)
	rows, err := tx.Query(ctx, `SELECT id, seq, at, actor_user_id::text, actor, action, subject_type, subject_id,
			metadata::text, prev_hash, hash
		FROM audit_log WHERE tenant_id = quavon_current_tenant() ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("audit: entries: %w", err)
	}
	defer rows.Close()
	prev := Genesis
	for rows.Next() {
		var (
			e         Entry
			id        int64
			at        time.Time
			actorUser *string
			meta      string
			prevH, h  []byte
		)
		if err := rows.Scan(&id, &e.Seq, &at, &actorUser, &e.Actor, &e.Action, &e.SubjectType, &e.SubjectID,
			&meta, &prevH, &h); err != nil {
			return nil, fmt.Errorf("audit: entries: %w", err)
		}
		r.Entries++
		e.TenantID, e.At, e.Metadata = r.Tenant, FormatTime(at), json.RawMessage(meta)
		if actorUser != nil {
			e.ActorUserID = *actorUser
		}
		chainedRow := h != nil
		if chainedRow {
			e.PrevHash, e.Hash = hex.EncodeToString(prevH), hex.EncodeToString(h)
		}
		want := r.Entries // the position this row must have
		switch {
		case r.Break != nil:
		case !hasHead:
			r.broken(e.Seq, id, "the tenant has entries but no chain head (audit_heads): it was removed")
		case e.Seq > r.HeadSeq && e.Seq == want:
			r.broken(e.Seq, id, "beyond the chain head (at entry %d): inserted around the chain", r.HeadSeq)
		case e.Seq != want && want == 1:
			r.broken(want, 0, "missing: the log starts at entry %d", e.Seq)
		case e.Seq != want:
			r.broken(want, 0, "missing: the log goes from entry %d to entry %d", want-1, e.Seq)
		case e.Seq <= r.Unchained:
			if chainedRow {
				r.broken(e.Seq, id, "an entry from before the chain (1..%d) has hashes", r.Unchained)
			}
		case !chainedRow:
			r.broken(e.Seq, id, "no hash: the entry was written around the chain")
		case e.PrevHash != prev:
			r.broken(e.Seq, id, "its prev_hash is not the hash of entry %d: entries were reordered, replaced or inserted", e.Seq-1)
		default:
			got, err := e.ComputeHash()
			switch {
			case err != nil:
				r.broken(e.Seq, id, "its metadata is not canonical JSON (%v): the entry was changed", err)
			case got != e.Hash:
				r.broken(e.Seq, id, "its hash does not match its content: the entry was changed")
			}
			prev = e.Hash
		}
		if a, ok := anchored[e.Seq]; ok {
			r.Anchored++
			if a != e.Hash && r.Break == nil {
				r.broken(e.Seq, id, "its hash differs from the anchor's: the log was rewritten (hashes recomputed) after the anchor was taken")
			}
		}
		if fn != nil {
			if err := fn(&e); err != nil {
				return nil, err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit: entries: %w", err)
	}
	if r.Break == nil && r.Entries < r.HeadSeq {
		r.broken(r.Entries+1, 0, "missing: the chain head is at entry %d, the log ends at entry %d", r.HeadSeq, r.Entries)
	}
	if r.Break == nil && hasHead && prev != r.HeadHash {
		r.broken(r.HeadSeq, 0, "the chain head's hash is not the last entry's: the head was changed")
	}
	if r.Break == nil {
		var last int64
		for seq := range anchored {
			last = max(last, seq)
		}
		if last > r.Entries {
			r.broken(r.Entries+1, 0, "missing: the anchor holds entries up to %d, the log ends at entry %d", last, r.Entries)
		}
	}
	return r, nil
}

// Anchor is a set of entry hashes kept outside the database (an earlier
// export, or just its last line per tenant) that the log must still hold.
type Anchor struct {
	hashes map[string]map[int64]string
}

func (a *Anchor) tenant(t string) map[int64]string {
	if a == nil {
		return nil
	}
	return a.hashes[t]
}

// Tenants lists the anchor's tenants.
func (a *Anchor) Tenants() []string {
	var out []string
	if a != nil {
		for t := range a.hashes {
			out = append(out, t)
		}
	}
	return out
}

var hexHashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// maxAnchorLine bounds one line of an anchor file (an entry's metadata is
// at most 64 KiB; JSON escaping can grow it sixfold).
const maxAnchorLine = 1 << 20

// ReadAnchor reads JSON Lines of entries (the export's format); only each
// line's tenant_id, seq and hash are used, and lines without a hash (entries
// from before the chain) are skipped.
func ReadAnchor(rd io.Reader) (*Anchor, error) {
	a := &Anchor{hashes: map[string]map[int64]string{}}
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), maxAnchorLine)
	n := 0
	for sc.Scan() {
		n++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var line struct {
			TenantID string `json:"tenant_id"`
			Seq      int64  `json:"seq"`
			Hash     string `json:"hash"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, fmt.Errorf("anchor line %d: %w", n, err)
		}
		switch {
		case !uuidRE.MatchString(line.TenantID) || line.Seq < 1:
			return nil, fmt.Errorf("anchor line %d: want tenant_id (a uuid) and seq ≥ 1", n)
		case line.Hash == "":
			continue
		case !hexHashRE.MatchString(line.Hash):
			return nil, fmt.Errorf("anchor line %d: hash: want 64 lower-case hex digits", n)
		}
		if a.hashes[line.TenantID] == nil {
			a.hashes[line.TenantID] = map[int64]string{}
		}
		if h, ok := a.hashes[line.TenantID][line.Seq]; ok && h != line.Hash {
			return nil, fmt.Errorf("anchor line %d: entry %d of %s appears twice with different hashes", n, line.Seq, line.TenantID)
		}
		a.hashes[line.TenantID][line.Seq] = line.Hash
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("anchor line %d: %w", n+1, err)
	}
	return a, nil
}

// Tenants lists every tenant (through quavon_tenants(), which the app and
// auditor roles may call without a tenant) and, for a role that bypasses
// row-level security (the operator's), every other tenant with a chain
// head: the audit log of a deleted tenant stays.
func Tenants(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) ([]string, error) {
	rows, err := q.Query(ctx, "SELECT id::text FROM quavon_tenants() UNION SELECT tenant_id::text FROM audit_heads ORDER BY 1")
	if err != nil {
		return nil, fmt.Errorf("audit: tenants: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("audit: tenants: %w", err)
	}
	return out, nil
}
