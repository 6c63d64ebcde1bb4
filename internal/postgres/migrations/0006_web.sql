-- The dashboard's sign-in: web sessions, and the way from a code-host identity to the
-- tenants that know it.
--
-- A session is found by the SHA-256 of its cookie value (32 random bytes behind the
-- tenant's id); the value itself is never stored. Sessions end at the first of their idle
-- and absolute expiry, or when revoked (sign-out, a newer sign-in of the same browser).
-- The code-host identity (host, login, id) a session signed in as is kept with it: an
-- approval re-checks that identity's live permission.

CREATE TABLE web_sessions (
	tenant_id       uuid NOT NULL,
	id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
	user_id         uuid NOT NULL,
	secret_hash     bytea NOT NULL UNIQUE CHECK (length(secret_hash) = 32),
	host            text NOT NULL CHECK (length(host) BETWEEN 1 AND 255),
	login           text NOT NULL CHECK (length(login) BETWEEN 1 AND 100),
	external_id     bigint NOT NULL CHECK (external_id > 0),
	created_at      timestamptz NOT NULL DEFAULT now(),
	last_seen_at    timestamptz NOT NULL DEFAULT now(),
	idle_expires_at timestamptz NOT NULL,
	expires_at      timestamptz NOT NULL,
	revoked_at      timestamptz,
	revoked_reason  text CHECK (revoked_reason ~ '^[a-z][a-z0-9_]{0,63}$'),
	CHECK (idle_expires_at <= expires_at),
	CHECK ((revoked_at IS NULL) = (revoked_reason IS NULL)),
	FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX web_sessions_user ON web_sessions (tenant_id, user_id);

ALTER TABLE web_sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE web_sessions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON web_sessions
	USING (tenant_id = quavon_current_tenant()) WITH CHECK (tenant_id = quavon_current_tenant());
ALTER TABLE web_sessions OWNER TO quavon_owner;
GRANT SELECT, INSERT, UPDATE, DELETE ON web_sessions TO quavon_app;

-- Sign-in arrives without a tenant: the identity GitHub confirmed says whose user it is.
-- Like the webhook routing functions of 0002, this one is owned by quavon_router, may read
-- only the columns it needs and returns tenant ids, never rows.
GRANT SELECT (tenant_id, host, external_id) ON user_identities TO quavon_router;
CREATE FUNCTION quavon_route_identity(h text, ext bigint) RETURNS SETOF uuid
	LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
	AS $$ SELECT tenant_id FROM public.user_identities WHERE host = h AND external_id = ext ORDER BY tenant_id $$;
ALTER FUNCTION quavon_route_identity(text, bigint) OWNER TO quavon_router;
REVOKE ALL ON FUNCTION quavon_route_identity(text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quavon_route_identity(text, bigint) TO quavon_app;
