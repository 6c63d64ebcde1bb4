-- GitHub App installations: routing webhooks to tenants, and which app covers which
-- repository.
--
-- A webhook arrives without a tenant: its installation (or, for a new installation, its
-- account) says whose it is. quavon_route_installation() and quavon_route_account() are
-- the only ways to ask without a tenant. They are SECURITY DEFINER functions owned by
-- quavon_router, a NOLOGIN role with BYPASSRLS that owns nothing else and may only read
-- the two columns of installations they need; they return a tenant id, never rows.

DO $$
BEGIN
	CREATE ROLE quavon_router NOLOGIN NOSUPERUSER BYPASSRLS;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
	NULL;
END
$$;

ALTER TABLE installations ADD COLUMN account_id bigint NOT NULL DEFAULT 0 CHECK (account_id >= 0);
ALTER TABLE installations ADD COLUMN account_type text NOT NULL DEFAULT 'Organization'
	CHECK (account_type IN ('Organization', 'User', 'Enterprise'));
ALTER TABLE installations ADD COLUMN repository_selection text NOT NULL DEFAULT 'selected'
	CHECK (repository_selection IN ('all', 'selected'));
CREATE INDEX installations_account ON installations (account_id);

-- The installation of each app through which Quavon reaches a repository; NULL when that
-- app does not cover it (removed from the installation, or never added).
ALTER TABLE repositories ADD COLUMN review_installation_id bigint;
ALTER TABLE repositories ADD COLUMN fixer_installation_id bigint;
ALTER TABLE repositories ADD COLUMN archived boolean NOT NULL DEFAULT false;

GRANT SELECT (tenant_id, app_kind, external_id, account_id) ON installations TO quavon_router;

CREATE FUNCTION quavon_route_installation(kind text, installation bigint) RETURNS uuid
	LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
	AS $$ SELECT tenant_id FROM public.installations WHERE app_kind = kind AND external_id = installation $$;
ALTER FUNCTION quavon_route_installation(text, bigint) OWNER TO quavon_router;
REVOKE ALL ON FUNCTION quavon_route_installation(text, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quavon_route_installation(text, bigint) TO quavon_app;

-- The tenant an account's other installations belong to (the review and the Fixer app of
-- one organisation share a tenant); NULL for a new account.
CREATE FUNCTION quavon_route_account(account bigint) RETURNS uuid
	LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
	AS $$ SELECT tenant_id FROM public.installations WHERE account_id = account AND account > 0 LIMIT 1 $$;
ALTER FUNCTION quavon_route_account(bigint) OWNER TO quavon_router;
REVOKE ALL ON FUNCTION quavon_route_account(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quavon_route_account(bigint) TO quavon_app;
