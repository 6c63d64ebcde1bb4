-- Quavon control plane, first schema: tenants, installations, repositories and their
-- policies, users and code-host identities, role grants, API tokens, the audit log,
-- webhook deliveries and fix-run caps.
--
-- Roles (cluster-wide, created here when missing, never with LOGIN):
--   quavon_owner     owns every tenant table; FORCE ROW LEVEL SECURITY binds it too.
--   quavon_registry  owns tenants (RLS enabled, not forced) and quavon_tenants(), the
--                    one way to list tenants without a tenant (the retention job).
--   quavon_app       what services are members of: DML on tenant tables, owns nothing.
-- Tenancy: every table with tenant_id has ENABLE and FORCE ROW LEVEL SECURITY and the
-- policy tenant_isolation on the transaction's quavon.tenant_id; references between tenant
-- tables are composite (tenant_id, id) foreign keys, so a row can never point into another
-- tenant (foreign-key checks bypass RLS, so a plain id reference would not stop that).
-- quavon.tenant_id is set by SET LOCAL in postgres.DB.InTenant; without it,
-- quavon_current_tenant() is NULL and no row matches.

DO $$
BEGIN
	CREATE ROLE quavon_owner NOLOGIN NOSUPERUSER NOBYPASSRLS;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
	NULL; -- another database of the cluster created it (concurrently)
END
$$;
DO $$
BEGIN
	CREATE ROLE quavon_registry NOLOGIN NOSUPERUSER NOBYPASSRLS;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
	NULL; -- another database of the cluster created it (concurrently)
END
$$;
DO $$
BEGIN
	CREATE ROLE quavon_app NOLOGIN NOSUPERUSER NOBYPASSRLS;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
	NULL; -- another database of the cluster created it (concurrently)
END
$$;

CREATE FUNCTION quavon_current_tenant() RETURNS uuid
	LANGUAGE sql STABLE PARALLEL SAFE
	AS $$ SELECT NULLIF(current_setting('quavon.tenant_id', true), '')::uuid $$;

CREATE TABLE tenants (
	id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
	name           text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
	retention_days integer NOT NULL DEFAULT 90 CHECK (retention_days BETWEEN 1 AND 3650),
	created_at     timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenants
	USING (id = quavon_current_tenant()) WITH CHECK (id = quavon_current_tenant());
ALTER TABLE tenants OWNER TO quavon_registry;

CREATE FUNCTION quavon_tenants() RETURNS TABLE (id uuid, retention_days integer)
	LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public
	AS $$ SELECT id, retention_days FROM public.tenants ORDER BY id $$;
ALTER FUNCTION quavon_tenants() OWNER TO quavon_registry;
REVOKE ALL ON FUNCTION quavon_tenants() FROM PUBLIC;

CREATE TABLE installations (
	tenant_id     uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
	app_kind      text NOT NULL CHECK (app_kind IN ('review', 'fixer')),
	external_id   bigint NOT NULL CHECK (external_id > 0),
	account_login text NOT NULL,
	permissions   jsonb NOT NULL DEFAULT '{}'::jsonb,
	suspended_at  timestamptz,
	created_at    timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (app_kind, external_id)
);
CREATE INDEX installations_tenant ON installations (tenant_id);

CREATE TABLE repositories (
	tenant_id      uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
	id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
	host           text NOT NULL DEFAULT 'github.com',
	external_id    bigint NOT NULL CHECK (external_id > 0),
	owner          text NOT NULL CHECK (length(owner) BETWEEN 1 AND 100),
	name           text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
	visibility     text NOT NULL CHECK (visibility IN ('public', 'private', 'internal')),
	default_branch text NOT NULL DEFAULT 'main',
	created_at     timestamptz NOT NULL DEFAULT now(),
	UNIQUE (host, external_id),
	UNIQUE (tenant_id, id)
);
CREATE UNIQUE INDEX repositories_name ON repositories (tenant_id, host, lower(owner), lower(name));

CREATE TABLE repository_policies (
	tenant_id     uuid NOT NULL,
	repository_id uuid NOT NULL,
	document      jsonb NOT NULL,
	version       bigint NOT NULL DEFAULT 1 CHECK (version > 0),
	updated_at    timestamptz NOT NULL DEFAULT now(),
	updated_by    uuid,
	PRIMARY KEY (tenant_id, repository_id),
	FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, id) ON DELETE CASCADE
);

CREATE TABLE users (
	tenant_id    uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
	id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
	display_name text NOT NULL DEFAULT '',
	created_at   timestamptz NOT NULL DEFAULT now(),
	UNIQUE (tenant_id, id)
);

CREATE TABLE user_identities (
	tenant_id   uuid NOT NULL,
	user_id     uuid NOT NULL,
	host        text NOT NULL DEFAULT 'github.com',
	login       text NOT NULL CHECK (length(login) BETWEEN 1 AND 100),
	external_id bigint NOT NULL CHECK (external_id > 0),
	PRIMARY KEY (tenant_id, host, external_id),
	FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX user_identities_user ON user_identities (user_id);

CREATE TABLE role_grants (
	tenant_id     uuid NOT NULL,
	user_id       uuid NOT NULL,
	repository_id uuid NOT NULL,
	role          text NOT NULL CHECK (role IN ('repo:manage', 'repo:review')),
	created_at    timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (user_id, repository_id, role),
	FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE,
	FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX role_grants_repository ON role_grants (repository_id);

CREATE TABLE api_tokens (
	tenant_id    uuid NOT NULL,
	id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
	user_id      uuid NOT NULL,
	name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
	token_hash   bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
	created_at   timestamptz NOT NULL DEFAULT now(),
	expires_at   timestamptz,
	last_used_at timestamptz,
	revoked_at   timestamptz,
	FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE CASCADE
);

CREATE TABLE audit_log (
	tenant_id     uuid NOT NULL,
	id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	at            timestamptz NOT NULL DEFAULT now(),
	actor_user_id uuid,
	actor         text NOT NULL,
	action        text NOT NULL CHECK (action ~ '^[a-z_]+(\.[a-z_]+)+$'),
	subject_type  text NOT NULL,
	subject_id    text NOT NULL,
	metadata      jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX audit_log_tenant_at ON audit_log (tenant_id, at);

-- Append-only for everyone, the owner included: privileges keep the app role to SELECT and
-- INSERT; this trigger refuses UPDATE and DELETE whoever asks.
CREATE FUNCTION quavon_audit_append_only() RETURNS trigger
	LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'audit_log is append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
	FOR EACH ROW EXECUTE FUNCTION quavon_audit_append_only();

CREATE TABLE webhook_deliveries (
	tenant_id    uuid NOT NULL,
	delivery_id  text PRIMARY KEY CHECK (length(delivery_id) BETWEEN 1 AND 100),
	event        text NOT NULL,
	received_at  timestamptz NOT NULL DEFAULT now(),
	processed_at timestamptz
);
CREATE INDEX webhook_deliveries_received ON webhook_deliveries (tenant_id, received_at);

CREATE TABLE fix_run_caps (
	tenant_id uuid NOT NULL,
	scope     text NOT NULL CHECK (scope IN ('issue', 'repository', 'tenant')),
	key       text NOT NULL,
	day       date NOT NULL,
	count     integer NOT NULL CHECK (count > 0),
	PRIMARY KEY (tenant_id, scope, key, day)
);

-- Every table with tenant_id: RLS enabled and forced, the isolation policy, owned by
-- quavon_owner, DML for quavon_app (audit_log: SELECT and INSERT only).
DO $$
DECLARE
	t text;
BEGIN
	FOR t IN
		SELECT c.relname FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
		JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
		WHERE c.relkind = 'r'
	LOOP
		EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
		EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
		EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (tenant_id = quavon_current_tenant()) WITH CHECK (tenant_id = quavon_current_tenant())', t);
		EXECUTE format('ALTER TABLE %I OWNER TO quavon_owner', t);
		IF t = 'audit_log' THEN
			EXECUTE format('GRANT SELECT, INSERT ON %I TO quavon_app', t);
		ELSE
			EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO quavon_app', t);
		END IF;
	END LOOP;
END
$$;

GRANT SELECT, INSERT, UPDATE ON tenants TO quavon_app;
GRANT EXECUTE ON FUNCTION quavon_tenants() TO quavon_app;
GRANT EXECUTE ON FUNCTION quavon_current_tenant() TO quavon_app;
GRANT USAGE ON SCHEMA public TO quavon_app;
