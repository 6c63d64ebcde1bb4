-- The acceptance-criteria check (spec AC1–AC3): the issues its criteria come from and one
-- check per pull-request head.
--
-- issues holds the issues of a repository as far as the check needs them. Text (title and
-- body) is written only from a read through the review app's read-only token, with the
-- repository's visibility at that read (internal/acceptance/check); webhook events of
-- either app only keep the row in step: an edit, close or reopen marks the text stale (the
-- next check reads it again), a transfer or a deletion clears it for good. So the text of
-- an issue moved to another repository, or deleted, is never used, and a row never holds
-- text the review app could not read.
--
-- ac_checks is one row per (repository, pull request, head SHA): the check runs at most once
-- per head (AC3), whatever the number of review runs of that head. A check that did not
-- call the model says why (no_link, no_criteria, transferred, ...).
--
-- Both are tenant tables held to tenancy as 0001's loop holds its tables (the loop at the
-- end); references are composite (tenant_id, id) keys and go with their repository.
-- Retention (internal/retention): issues by updated_at, ac_checks by created_at.

CREATE TABLE issues (
	tenant_id       uuid NOT NULL,
	id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
	repository_id   uuid NOT NULL,
	number          integer NOT NULL CHECK (number > 0),
	state           text NOT NULL CHECK (state IN ('open', 'closed')),
	is_pull_request boolean NOT NULL DEFAULT false,
	-- Who could read the text when it was read: the repository's visibility then.
	visibility      text CHECK (visibility IN ('public', 'private', 'internal')),
	title           text NOT NULL DEFAULT '' CHECK (octet_length(title) <= 1024),
	-- GitHub caps a body at 65 536 characters.
	body            text NOT NULL DEFAULT '' CHECK (octet_length(body) <= 262144),
	-- When the text was last read through the review app; NULL: no text (never read, or
	-- stale after an edit).
	read_at         timestamptz,
	transferred     boolean NOT NULL DEFAULT false,
	deleted         boolean NOT NULL DEFAULT false,
	updated_at      timestamptz NOT NULL DEFAULT now(),
	UNIQUE (tenant_id, id),
	UNIQUE (tenant_id, repository_id, number),
	FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, id) ON DELETE CASCADE,
	-- Text only with a read and a visibility; never for a transferred or deleted issue.
	CHECK (read_at IS NOT NULL OR (title = '' AND body = '')),
	CHECK (read_at IS NULL OR visibility IS NOT NULL),
	CHECK (NOT (transferred OR deleted) OR (read_at IS NULL AND title = '' AND body = ''))
);
CREATE INDEX issues_updated ON issues (tenant_id, updated_at);

CREATE TABLE ac_checks (
	tenant_id      uuid NOT NULL,
	id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
	repository_id  uuid NOT NULL,
	pr_number      integer NOT NULL CHECK (pr_number > 0),
	head_sha       quavon_sha NOT NULL,
	-- The review run that made the check (later runs of the head reuse it).
	review_run_id  uuid,
	mode           text NOT NULL CHECK (mode IN ('shadow', 'on')),
	-- completed: the judge answered (or the check ended without a model call, reason says
	-- why); failed: the model call failed (budget, provider), every criterion unclear.
	status         text NOT NULL CHECK (status IN ('completed', 'skipped', 'failed')),
	reason         quavon_reason,
	detail         text NOT NULL DEFAULT '' CHECK (octet_length(detail) <= 2048),
	-- The issue judged (the first linked issue with criteria), and every linked issue with
	-- its admission ([{number, sources, usable, refusal}]).
	issue_number   integer CHECK (issue_number > 0),
	links          jsonb NOT NULL DEFAULT '[]'::jsonb
		CHECK (jsonb_typeof(links) = 'array' AND octet_length(links::text) <= 16384),
	-- The criteria (acceptance.Extraction) and the verified verdicts
	-- (acceptance.Verification): untrusted text, capped by the extractor and the verifier.
	criteria       jsonb NOT NULL DEFAULT '{}'::jsonb
		CHECK (jsonb_typeof(criteria) = 'object' AND octet_length(criteria::text) <= 131072),
	verdicts       jsonb NOT NULL DEFAULT '{}'::jsonb
		CHECK (jsonb_typeof(verdicts) = 'object' AND octet_length(verdicts::text) <= 262144),
	met            integer NOT NULL DEFAULT 0 CHECK (met >= 0),
	unmet          integer NOT NULL DEFAULT 0 CHECK (unmet >= 0),
	unclear        integer NOT NULL DEFAULT 0 CHECK (unclear >= 0),
	model          text NOT NULL DEFAULT '' CHECK (octet_length(model) <= 200),
	llm_calls      integer NOT NULL DEFAULT 0 CHECK (llm_calls BETWEEN 0 AND 1),
	input_tokens   bigint NOT NULL DEFAULT 0 CHECK (input_tokens >= 0),
	output_tokens  bigint NOT NULL DEFAULT 0 CHECK (output_tokens >= 0),
	cost_micros    bigint NOT NULL DEFAULT 0 CHECK (cost_micros >= 0),
	created_at     timestamptz NOT NULL DEFAULT now(),
	UNIQUE (tenant_id, id),
	UNIQUE (tenant_id, repository_id, pr_number, head_sha),
	FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, id) ON DELETE CASCADE,
	FOREIGN KEY (tenant_id, review_run_id) REFERENCES review_runs (tenant_id, id) ON DELETE SET NULL (review_run_id),
	CHECK (status = 'completed' OR reason IS NOT NULL),
	CHECK (status <> 'skipped' OR llm_calls = 0)
);
CREATE INDEX ac_checks_created ON ac_checks (tenant_id, created_at);

DO $$
DECLARE
	t text;
BEGIN
	FOREACH t IN ARRAY ARRAY['issues', 'ac_checks']
	LOOP
		EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
		EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
		EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (tenant_id = quavon_current_tenant()) WITH CHECK (tenant_id = quavon_current_tenant())', t);
		EXECUTE format('ALTER TABLE %I OWNER TO quavon_owner', t);
		EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO quavon_app', t);
	END LOOP;
END
$$;
