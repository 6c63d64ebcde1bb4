// Package audit records who did what, in the caller's transaction, as a hash
// chain per tenant, and proves the chain intact.
//
// # Recording
//
// [Record] writes an entry in the caller's transaction: it commits or rolls
// back with the change it describes. The audit_log table is append-only (the
// app role may only SELECT and INSERT, and a trigger refuses UPDATE and
// DELETE to everyone) and tenant-scoped by forced row-level security.
//
// Record first locks the tenant's chain head (quavon_audit_head(), migration
// 0005): concurrent writers of one tenant take turns from that point until
// their transactions end, so call Record last in a transaction. Writers of
// different tenants never wait for each other. A database trigger refuses
// any insert that does not extend the head (wrong tenant, a sequence number
// other than head + 1, a prev_hash other than the head's hash, no hash), so
// no writer, however written, can fork or skip a chain.
//
// # The chain
//
// Entry n of a tenant (n = 1, 2, 3 …, without gaps) is the JSON object
//
//	{"tenant_id": "<uuid>", "seq": n, "at": "2006-01-02T15:04:05.000000Z",
//	 "actor_user_id": "<uuid>" (omitted when no user acted), "actor": "…",
//	 "action": "…", "subject_type": "…", "subject_id": "…",
//	 "metadata": <any JSON>, "prev_hash": "<64 hex>"}
//
// where prev_hash is the hash of entry n-1 and, for the first entry of the
// chain, 64 zeros. Its hash is
//
//	hex(SHA-256("quavon-audit-entry:v1" + "\n" + JCS(entry)))
//
// with JCS the RFC 8785 canonical JSON (package canonical). Numbers in the
// metadata are I-JSON numbers (IEEE 754 doubles): an integer above 2^53 is
// stored rounded, so put large identifiers in strings.
//
// [Walk] reads a tenant's entries in order and checks each one: the
// sequence has no gap, prev_hash is the previous entry's hash, the hash is
// the hash of the entry's content, the head (audit_heads) matches the last
// entry, and, given an [Anchor], every anchored entry still has the anchored
// hash. It names the first entry at which any of that fails ([Break]).
// `quavon audit verify` and `quavon audit export` are built on it. An export
// line is the canonical JSON of the entry with its "hash" added, so anyone
// can check an export without Quavon: drop "hash", canonicalise, hash, and
// compare with the line's hash and with the next line's prev_hash.
//
// # What the chain proves
//
// Anyone who can change the table (a database superuser, say) and edits,
// deletes, inserts or reorders entries breaks the chain at that entry, and
// Walk finds it, unless they also recompute every later hash and the head:
// SHA-256 has no key. Against that, keep an anchor outside the database (an
// export, or just the last line per tenant, in write-once storage or a
// ticket) and verify against it: a rewritten entry at or before the anchor
// no longer has the anchored hash.
//
// Entries written before migration 0005 have no hashes; they are numbered
// 1..k, counted in audit_heads.unchained and reported as unchained, and the
// chain starts after them.
package audit
