-- The audit log as a hash chain per tenant (internal/audit).
--
-- Every entry carries seq (1, 2, 3 … per tenant, no gaps), prev_hash (the hash of entry
-- seq - 1; 32 zero bytes for the first chained entry) and hash = SHA-256 of
-- "quavon-audit-entry:v1\n" followed by the RFC 8785 canonical JSON of the entry with its
-- prev_hash (internal/audit/doc.go has the exact form). The hash is computed by the
-- writer (Go: canonical JSON is not something SQL can do); the database holds the chain's
-- shape: audit_heads keeps each tenant's last seq and hash, and a trigger refuses any
-- insert that does not extend it (wrong tenant, seq not head + 1, prev_hash not the
-- head's hash, no hash), so no writer can fork or skip the chain, and concurrent writers
-- of one tenant are serialised on the head row (quavon_audit_head() locks it until the
-- transaction ends). What the database cannot check, the content behind each hash,
-- `quavon audit verify` does.
--
-- Entries written before this migration are numbered per tenant in id order and stay
-- unchained (no hashes); audit_heads.unchained says how many, and the chain starts after
-- them.
--
-- quavon_auditor (NOLOGIN) may read the log and the heads and list tenants, nothing else:
-- grant it to the login role that runs `quavon audit verify` and `export`.

DO $$
BEGIN
	CREATE ROLE quavon_auditor NOLOGIN NOSUPERUSER NOBYPASSRLS;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
	NULL; -- another database of the cluster created it (concurrently)
END
$$;

CREATE TABLE audit_heads (
	tenant_id  uuid PRIMARY KEY,
	seq        bigint NOT NULL DEFAULT 0 CHECK (seq >= 0),
	hash       bytea NOT NULL DEFAULT decode(repeat('00', 32), 'hex') CHECK (length(hash) = 32),
	unchained  bigint NOT NULL DEFAULT 0 CHECK (unchained BETWEEN 0 AND seq),
	updated_at timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE audit_log ADD COLUMN seq bigint;
ALTER TABLE audit_log ADD COLUMN prev_hash bytea;
ALTER TABLE audit_log ADD COLUMN hash bytea;

-- Number the entries already written (the append-only trigger is off for this one
-- statement, inside the migration's transaction).
ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only;
UPDATE audit_log a SET seq = n.seq
	FROM (SELECT id, row_number() OVER (PARTITION BY tenant_id ORDER BY id) AS seq FROM audit_log) n
	WHERE a.id = n.id;
ALTER TABLE audit_log ENABLE TRIGGER audit_log_append_only;
INSERT INTO audit_heads (tenant_id, seq, unchained)
	SELECT tenant_id, max(seq), max(seq) FROM audit_log GROUP BY tenant_id;

ALTER TABLE audit_log ALTER COLUMN seq SET NOT NULL;
ALTER TABLE audit_log ADD CONSTRAINT audit_log_seq CHECK (seq > 0);
ALTER TABLE audit_log ADD CONSTRAINT audit_log_chain_hashes CHECK (
	(prev_hash IS NULL AND hash IS NULL) OR (length(prev_hash) = 32 AND length(hash) = 32));
ALTER TABLE audit_log ADD CONSTRAINT audit_log_tenant_seq UNIQUE (tenant_id, seq);

-- Tenancy as migration 0001's loop gives every tenant table (that loop ran before this
-- table existed). The app role may only read heads: they move through the two functions
-- below, which run as the owner.
ALTER TABLE audit_heads ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_heads FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON audit_heads
	USING (tenant_id = quavon_current_tenant()) WITH CHECK (tenant_id = quavon_current_tenant());
ALTER TABLE audit_heads OWNER TO quavon_owner;
GRANT SELECT ON audit_heads TO quavon_app;

-- The transaction's tenant's head, locked until the transaction ends (created at seq 0
-- on a tenant's first entry), and the time its next entry is recorded at.
CREATE FUNCTION quavon_audit_head() RETURNS TABLE (tenant uuid, head_seq bigint, head_hash bytea, entry_at timestamptz)
	LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public
	AS $$
DECLARE
	t uuid := quavon_current_tenant();
BEGIN
	IF t IS NULL THEN
		RAISE EXCEPTION 'audit: no tenant in this transaction' USING ERRCODE = 'insufficient_privilege';
	END IF;
	RETURN QUERY SELECT h.tenant_id, h.seq, h.hash, clock_timestamp()
		FROM public.audit_heads h WHERE h.tenant_id = t FOR NO KEY UPDATE;
	IF NOT FOUND THEN -- the tenant's first entry (or a first entry racing another)
		INSERT INTO public.audit_heads (tenant_id) VALUES (t) ON CONFLICT (tenant_id) DO NOTHING;
		RETURN QUERY SELECT h.tenant_id, h.seq, h.hash, clock_timestamp()
			FROM public.audit_heads h WHERE h.tenant_id = t FOR NO KEY UPDATE;
	END IF;
END
$$;
ALTER FUNCTION quavon_audit_head() OWNER TO quavon_owner;
REVOKE ALL ON FUNCTION quavon_audit_head() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quavon_audit_head() TO quavon_app;

-- Every insert must extend its tenant's chain; the head moves with it.
CREATE FUNCTION quavon_audit_chain() RETURNS trigger
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, public
	AS $$
DECLARE
	h public.audit_heads%ROWTYPE;
BEGIN
	IF NEW.tenant_id IS DISTINCT FROM quavon_current_tenant() THEN
		RAISE EXCEPTION 'audit_log: an entry for another tenant than the transaction''s'
			USING ERRCODE = 'insufficient_privilege';
	END IF;
	SELECT * INTO h FROM public.audit_heads WHERE tenant_id = NEW.tenant_id FOR NO KEY UPDATE;
	IF NOT FOUND OR NEW.seq IS DISTINCT FROM h.seq + 1 OR NEW.prev_hash IS DISTINCT FROM h.hash
		OR NEW.hash IS NULL THEN
		RAISE EXCEPTION 'audit_log: entry % does not extend its tenant''s chain (head at %); record entries with internal/audit',
			NEW.seq, coalesce(h.seq, 0) USING ERRCODE = 'check_violation';
	END IF;
	UPDATE public.audit_heads SET seq = NEW.seq, hash = NEW.hash, updated_at = now()
		WHERE tenant_id = NEW.tenant_id;
	RETURN NEW;
END
$$;
ALTER FUNCTION quavon_audit_chain() OWNER TO quavon_owner;
REVOKE ALL ON FUNCTION quavon_audit_chain() FROM PUBLIC;
CREATE TRIGGER audit_log_chain BEFORE INSERT ON audit_log
	FOR EACH ROW EXECUTE FUNCTION quavon_audit_chain();

-- The auditor reads; it writes nothing and calls neither function above.
GRANT USAGE ON SCHEMA public TO quavon_auditor;
GRANT SELECT ON audit_log, audit_heads TO quavon_auditor;
GRANT EXECUTE ON FUNCTION quavon_tenants() TO quavon_auditor;
GRANT EXECUTE ON FUNCTION quavon_current_tenant() TO quavon_auditor;
