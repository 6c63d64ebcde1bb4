-- Daily model budgets per tenant and feature (internal/llm DailyLedger): one row per
-- tenant, feature and UTC day. tokens and cost_micros are settled spend; reserved_* are
-- the worst cases of calls in flight, which count against the ceiling until settled
-- (a process that dies mid-call leaves its reservation counted for the day). The
-- ceilings themselves are settings (QUAVON_LLM_<FEATURE>_DAILY_MAX_*). Costs are in
-- micro-dollars.

CREATE TABLE llm_budget_days (
	tenant_id       uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
	feature         text NOT NULL CHECK (feature IN ('review', 'acceptance', 'fix')),
	day             date NOT NULL,
	tokens          bigint NOT NULL DEFAULT 0 CHECK (tokens >= 0),
	cost_micros     bigint NOT NULL DEFAULT 0 CHECK (cost_micros >= 0),
	reserved_tokens bigint NOT NULL DEFAULT 0 CHECK (reserved_tokens >= 0),
	reserved_micros bigint NOT NULL DEFAULT 0 CHECK (reserved_micros >= 0),
	calls           integer NOT NULL DEFAULT 0 CHECK (calls >= 0),
	refused         integer NOT NULL DEFAULT 0 CHECK (refused >= 0),
	PRIMARY KEY (tenant_id, feature, day)
);

-- Tenancy as migration 0001's loop gives every tenant table (that loop ran before this
-- table existed): RLS enabled and forced, the isolation policy, owned by quavon_owner,
-- DML for quavon_app.
ALTER TABLE llm_budget_days ENABLE ROW LEVEL SECURITY;
ALTER TABLE llm_budget_days FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON llm_budget_days
	USING (tenant_id = quavon_current_tenant()) WITH CHECK (tenant_id = quavon_current_tenant());
ALTER TABLE llm_budget_days OWNER TO quavon_owner;
GRANT SELECT, INSERT, UPDATE, DELETE ON llm_budget_days TO quavon_app;
