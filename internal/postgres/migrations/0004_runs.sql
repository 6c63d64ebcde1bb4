-- Review runs, fix runs and what they produce (spec DT5, §7, §7b, FX5, FX11, FX16):
-- the webhook events the worker acts on, review runs and their findings, maintainers'
-- feedback on findings, sandbox runs, fix runs and their steps, outputs waiting to be
-- published (or approved) and publish intents.
--
-- Every table here is a tenant table held to tenancy as migration 0001's loop holds the
-- tables that existed then (ENABLE and FORCE ROW LEVEL SECURITY, the tenant_isolation
-- policy, owned by quavon_owner, DML for quavon_app): the loop at the end does it for
-- the tables this migration creates, by name. References are composite (tenant_id, id)
-- keys; everything that belongs to a repository goes with it (ON DELETE CASCADE).
--
-- States are CHECKed here; which transitions are allowed is the store code's
-- (internal/review, internal/fix, internal/publish, internal/sandboxrun: compare-and-set
-- updates from the allowed predecessors). As a backstop, quavon_terminal_guard() refuses
-- any update that moves a row out of a terminal state, whoever asks.
--
-- Text that comes from repository code, model output or GitHub users is capped here
-- (octet_length) and, for test output and error messages, secret-redacted by the store
-- before it is written.

CREATE FUNCTION quavon_terminal_guard() RETURNS trigger
	LANGUAGE plpgsql AS $$
BEGIN
	-- TG_ARGV lists the table's terminal states.
	IF OLD.status = ANY (TG_ARGV) AND NEW.status IS DISTINCT FROM OLD.status THEN
		RAISE EXCEPTION '%: status % is terminal (update to % refused)', TG_TABLE_NAME, OLD.status, NEW.status
			USING ERRCODE = 'check_violation';
	END IF;
	RETURN NEW;
END
$$;

-- A commit id: SHA-1, or SHA-256 for repositories in that object format.
CREATE DOMAIN quavon_sha AS text CHECK (VALUE ~ '^([0-9a-f]{40}|[0-9a-f]{64})$');
-- A machine-readable reason (superseded, pr_closed, budget_exceeded, not_signed_off, ...).
CREATE DOMAIN quavon_reason AS text CHECK (VALUE ~ '^[a-z][a-z0-9_]{0,63}$');

-- Webhook events Quavon acts on, one per delivery, each with exactly one River job
-- (inserted in the same transaction by internal/intake). The typed, capped event is in
-- data (internal/intake.EventData); the actor is the webhook's sender.
CREATE TABLE webhook_events (
	tenant_id     uuid NOT NULL,
	id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
	delivery_id   text NOT NULL UNIQUE CHECK (length(delivery_id) BETWEEN 1 AND 100),
	app_kind      text NOT NULL CHECK (app_kind IN ('review', 'fixer')),
	repository_id uuid NOT NULL,
	event         text NOT NULL CHECK (event IN ('pull_request', 'issues', 'issue_comment')),
	action        text NOT NULL CHECK (action ~ '^[a-z_]{1,40}$'),
	number        integer NOT NULL CHECK (number > 0),
	actor_login   text NOT NULL CHECK (length(actor_login) BETWEEN 1 AND 100),
	actor_id      bigint NOT NULL CHECK (actor_id > 0),
	actor_type    text NOT NULL CHECK (actor_type IN ('User', 'Bot', 'Organization', 'Mannequin', 'Enterprise')),
	data          jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (octet_length(data::text) <= 1048576),
	received_at   timestamptz NOT NULL DEFAULT now(),
	processed_at  timestamptz,
	outcome       text CHECK (octet_length(outcome) <= 200),
	UNIQUE (tenant_id, id),
	FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX webhook_events_subject ON webhook_events (tenant_id, repository_id, number, received_at);
CREATE INDEX webhook_events_received ON webhook_events (tenant_id, received_at);

-- Review runs: one per (repository, pull request, head SHA) for automatic triggers
-- (attempt 1); a forced review (@<app> review) or a review of a head that became current
-- again after it was superseded is a new attempt, so every run has its own id for the
-- publisher's intent keys (review:{repositoryId}:{runId}).
--   queued → running | cancelled | skipped | failed
--   running → completed | failed | cancelled
-- completed, failed, cancelled and skipped are terminal; a cancelled run publishes nothing.
CREATE TABLE review_runs (
	tenant_id             uuid NOT NULL,
	id                    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
	repository_id         uuid NOT NULL,
	pr_number             integer NOT NULL CHECK (pr_number > 0),
	head_sha              quavon_sha NOT NULL,
	attempt               integer NOT NULL DEFAULT 1 CHECK (attempt BETWEEN 1 AND 1000),
	-- What the webhook said of the pull request when the run was made.
	head_ref              text NOT NULL DEFAULT '' CHECK (octet_length(head_ref) <= 1024),
	base_ref              text NOT NULL DEFAULT '' CHECK (octet_length(base_ref) <= 1024),
	base_sha              quavon_sha,
	-- The head repository's GitHub id; NULL (a deleted fork, or unknown) counts as a fork (FX13).
	head_repo_external_id bigint CHECK (head_repo_external_id > 0),
	draft                 boolean NOT NULL DEFAULT false,
	author_login          text NOT NULL DEFAULT '' CHECK (octet_length(author_login) <= 100),
	-- Set by the worker once it fetched: the merge base the diff starts from, and for an
	-- incremental review the previously reviewed head (an ancestor of head_sha).
	merge_base_sha        quavon_sha,
	since_sha             quavon_sha,
	trigger               text NOT NULL CHECK (trigger IN ('opened', 'synchronize', 'reopened', 'ready_for_review', 'command')),
	trigger_actor_login   text NOT NULL DEFAULT '' CHECK (octet_length(trigger_actor_login) <= 100),
	trigger_actor_id      bigint CHECK (trigger_actor_id > 0),
	trigger_event_id      uuid,
	full_review           boolean NOT NULL DEFAULT false,
	status                text NOT NULL DEFAULT 'queued'
		CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled', 'skipped')),
	reason                quavon_reason,
	detail                text NOT NULL DEFAULT '' CHECK (octet_length(detail) <= 2048),
	superseded_by         uuid,
	-- The effective policy's modes when the run started (the publisher re-checks the live ones).
	review_mode           text CHECK (review_mode IN ('off', 'shadow', 'on')),
	sast_mode             text CHECK (sast_mode IN ('off', 'shadow', 'on')),
	acceptance_mode       text CHECK (acceptance_mode IN ('off', 'shadow', 'on')),
	-- The three parts, each recorded on the run; sast_tools maps each scanner to its status
	-- (ok, partial, failed, missing, timed_out, no_files): a missing tool is never "no findings".
	llm_status            text NOT NULL DEFAULT 'pending' CHECK (llm_status IN ('pending', 'running', 'ok', 'partial', 'failed', 'skipped')),
	sast_status           text NOT NULL DEFAULT 'pending' CHECK (sast_status IN ('pending', 'running', 'ok', 'partial', 'failed', 'skipped')),
	acceptance_status     text NOT NULL DEFAULT 'pending' CHECK (acceptance_status IN ('pending', 'running', 'ok', 'partial', 'failed', 'skipped')),
	sast_tools            jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(sast_tools) = 'object' AND octet_length(sast_tools::text) <= 4096),
	findings_count        integer NOT NULL DEFAULT 0 CHECK (findings_count >= 0),
	dropped_unverified    integer NOT NULL DEFAULT 0 CHECK (dropped_unverified >= 0),
	-- Files left out of the LLM review, each {path, reason}, at most 500 (the count is exact).
	skipped_files         jsonb NOT NULL DEFAULT '[]'::jsonb
		CHECK (CASE WHEN jsonb_typeof(skipped_files) = 'array' THEN jsonb_array_length(skipped_files) <= 500 ELSE false END),
	skipped_files_count   integer NOT NULL DEFAULT 0 CHECK (skipped_files_count >= 0),
	model                 text NOT NULL DEFAULT '' CHECK (octet_length(model) <= 200),
	llm_calls             integer NOT NULL DEFAULT 0 CHECK (llm_calls >= 0),
	input_tokens          bigint NOT NULL DEFAULT 0 CHECK (input_tokens >= 0),
	output_tokens         bigint NOT NULL DEFAULT 0 CHECK (output_tokens >= 0),
	cost_micros           bigint NOT NULL DEFAULT 0 CHECK (cost_micros >= 0),
	-- The model's summary: untrusted text, sanitised by the publisher before it is shown.
	summary               text NOT NULL DEFAULT '' CHECK (octet_length(summary) <= 16384),
	created_at            timestamptz NOT NULL DEFAULT now(),
	updated_at            timestamptz NOT NULL DEFAULT now(),
	started_at            timestamptz,
	finished_at           timestamptz,
	UNIQUE (tenant_id, id),
	FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, id) ON DELETE CASCADE,
	FOREIGN KEY (tenant_id, superseded_by) REFERENCES review_runs (tenant_id, id) ON DELETE SET NULL (superseded_by),
	FOREIGN KEY (tenant_id, trigger_event_id) REFERENCES webhook_events (tenant_id, id) ON DELETE SET NULL (trigger_event_id),
	CHECK ((status IN ('completed', 'failed', 'cancelled', 'skipped')) = (finished_at IS NOT NULL)),
	CHECK (status NOT IN ('failed', 'cancelled', 'skipped') OR reason IS NOT NULL)
);
CREATE UNIQUE INDEX review_runs_head ON review_runs (tenant_id, repository_id, pr_number, head_sha, attempt);
CREATE INDEX review_runs_pr ON review_runs (tenant_id, repository_id, pr_number, created_at);
CREATE INDEX review_runs_finished ON review_runs (tenant_id, finished_at);
CREATE TRIGGER review_runs_terminal BEFORE UPDATE OF status ON review_runs
	FOR EACH ROW EXECUTE FUNCTION quavon_terminal_guard('completed', 'failed', 'cancelled', 'skipped');

-- Findings of a review run, one per fingerprint (line-independent, internal/sast): the
-- fingerprints of every finding a pull request showed decide what is posted again
-- (never), resolved or dismissed, so repository_id and pr_number are kept on each row.
--   new        found by this run and not shown before
--   posted     published (or shown before and carried over: posted once, never again)
--   resolved   shown before, its lines changed or disappeared in this run
--   dismissed  a maintainer dismissed its fingerprint on this pull request
-- Every text field is untrusted (model output or tool output).
CREATE TABLE review_findings (
	tenant_id           uuid NOT NULL,
	id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
	review_run_id       uuid NOT NULL,
	repository_id       uuid NOT NULL,
	pr_number           integer NOT NULL CHECK (pr_number > 0),
	fingerprint         text NOT NULL CHECK (fingerprint ~ '^[0-9a-f]{32,64}$'),
	source              text NOT NULL CHECK (source IN ('llm', 'sast')),
	-- Every tool that reported it (cross-tool groups list each); empty for a model-only finding.
	tools               text[] NOT NULL DEFAULT '{}' CHECK (cardinality(tools) <= 16),
	rule_ids            text[] NOT NULL DEFAULT '{}' CHECK (cardinality(rule_ids) <= 16),
	-- CWE-<n> or a rule family: what cross-tool grouping joins on.
	weakness            text NOT NULL DEFAULT '' CHECK (octet_length(weakness) <= 100),
	path                text NOT NULL CHECK (octet_length(path) BETWEEN 1 AND 4096),
	start_line          integer NOT NULL CHECK (start_line >= 1),
	end_line            integer NOT NULL,
	severity            text NOT NULL CHECK (severity IN ('critical', 'high', 'medium', 'low', 'info')),
	category            text NOT NULL DEFAULT '' CHECK (category ~ '^[a-z0-9_-]{0,40}$'),
	title               text NOT NULL CHECK (octet_length(title) BETWEEN 1 AND 400),
	body                text NOT NULL DEFAULT '' CHECK (octet_length(body) <= 8192),
	-- The changed lines the finding quotes (verified against the file).
	quote               text NOT NULL DEFAULT '' CHECK (octet_length(quote) <= 4096),
	suggestion          text NOT NULL DEFAULT '' CHECK (octet_length(suggestion) <= 8192),
	status              text NOT NULL DEFAULT 'new' CHECK (status IN ('new', 'posted', 'resolved', 'dismissed')),
	-- The finding's review comment on GitHub, once the publisher posted it.
	external_comment_id bigint CHECK (external_comment_id > 0),
	created_at          timestamptz NOT NULL DEFAULT now(),
	updated_at          timestamptz NOT NULL DEFAULT now(),
	UNIQUE (tenant_id, id),
	UNIQUE (tenant_id, review_run_id, fingerprint),
	CHECK (end_line >= start_line),
	FOREIGN KEY (tenant_id, review_run_id) REFERENCES review_runs (tenant_id, id) ON DELETE CASCADE,
	FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX review_findings_pr ON review_findings (tenant_id, repository_id, pr_number, fingerprint);

-- Maintainers' feedback on findings, append-only in practice: a fingerprint is dismissed
-- on a pull request while its latest dismiss/undismiss row is a dismiss.
CREATE TABLE finding_feedback (
	tenant_id     uuid NOT NULL,
	id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
	repository_id uuid NOT NULL,
	pr_number     integer NOT NULL CHECK (pr_number > 0),
	fingerprint   text NOT NULL CHECK (fingerprint ~ '^[0-9a-f]{32,64}$'),
	finding_id    uuid,
	action        text NOT NULL CHECK (action IN ('dismiss', 'undismiss', 'helpful', 'unhelpful')),
	reason        text CHECK (reason IN ('false_positive', 'wont_fix', 'not_relevant', 'other')),
	comment       text NOT NULL DEFAULT '' CHECK (octet_length(comment) <= 2000),
	source        text NOT NULL CHECK (source IN ('dashboard', 'api', 'github')),
	user_id       uuid,
	actor_login   text NOT NULL DEFAULT '' CHECK (octet_length(actor_login) <= 100),
	created_at    timestamptz NOT NULL DEFAULT now(),
	UNIQUE (tenant_id, id),
	CHECK (reason IS NULL OR action = 'dismiss'),
	CHECK (user_id IS NOT NULL OR actor_login <> ''),
	FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, id) ON DELETE CASCADE,
	FOREIGN KEY (tenant_id, finding_id) REFERENCES review_findings (tenant_id, id) ON DELETE SET NULL (finding_id),
	FOREIGN KEY (tenant_id, user_id) REFERENCES users (tenant_id, id) ON DELETE SET NULL (user_id)
);
CREATE INDEX finding_feedback_pr ON finding_feedback (tenant_id, repository_id, pr_number, fingerprint, created_at);

-- Fix runs (issue fixes, and review fixes on a pull request). States (internal/fix/doc.go):
--   queued → running | ineligible | failed
--   running → awaiting_approval | publishing (auto) | failed
--   awaiting_approval → approved | rejected | expired
--   approved → publishing | failed
--   publishing → published | failed
-- ineligible, failed, rejected, expired and published are terminal.
CREATE TABLE fix_runs (
	tenant_id             uuid NOT NULL,
	id                    uuid PRIMARY KEY DEFAULT gen_random_uuid(),
	repository_id         uuid NOT NULL,
	-- issue: an issue fix (number is the issue); pull_request: a review fix (number is the
	-- pull request, review_run_id the reviewed run, finding_ids what to fix).
	subject               text NOT NULL CHECK (subject IN ('issue', 'pull_request')),
	number                integer NOT NULL CHECK (number > 0),
	review_run_id         uuid,
	finding_ids           uuid[] NOT NULL DEFAULT '{}' CHECK (cardinality(finding_ids) <= 20),
	-- pr: a draft PR to the default branch; stacked_pr: a draft PR into the reviewed pull
	-- request's head branch; commit: one compare-and-swap commit on that branch (§7b).
	delivery              text NOT NULL CHECK (delivery IN ('pr', 'stacked_pr', 'commit')),
	-- The effective fix mode when the run was made (auto only on private and internal repositories).
	mode                  text NOT NULL CHECK (mode IN ('approval', 'auto')),
	trigger               text NOT NULL CHECK (trigger IN ('label', 'comment', 'dashboard')),
	-- The code-host identity whose permission is checked when the job runs and again by
	-- the publisher (CH5); requested_by is the Quavon user of a dashboard request.
	trigger_actor_login   text NOT NULL CHECK (length(trigger_actor_login) BETWEEN 1 AND 100),
	trigger_actor_id      bigint NOT NULL CHECK (trigger_actor_id > 0),
	trigger_label         text CHECK (octet_length(trigger_label) <= 100),
	trigger_comment_id    bigint CHECK (trigger_comment_id > 0),
	trigger_event_id      uuid,
	requested_by          uuid,
	status                text NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'ineligible', 'running', 'failed',
		'awaiting_approval', 'approved', 'rejected', 'expired', 'publishing', 'published')),
	reason                quavon_reason,
	detail                text NOT NULL DEFAULT '' CHECK (octet_length(detail) <= 2048),
	-- The commit the agent worked on and its branch: the default branch's tip for an issue
	-- fix, the reviewed head (expectedHeadSha) for a review fix.
	base_sha              quavon_sha,
	base_ref              text NOT NULL DEFAULT '' CHECK (octet_length(base_ref) <= 1024),
	-- Review fixes: the pull request's head repository (NULL counts as a fork, FX13).
	head_repo_external_id bigint CHECK (head_repo_external_id > 0),
	-- The patch (FX5): the changes with their base blob ids (internal/patch FixFileChange,
	-- what the publisher commits), the unified diff the approval preview shows, and
	-- PatchSHA256 of the changes, which pins what was approved.
	changes               jsonb CHECK (changes IS NULL OR (jsonb_typeof(changes) = 'array' AND octet_length(changes::text) <= 33554432)),
	diff                  text CHECK (octet_length(diff) <= 33554432),
	patch_sha256          text CHECK (patch_sha256 ~ '^[0-9a-f]{64}$'),
	-- The agent's summary (model output: redacted here, sanitised by the renderer).
	summary               text NOT NULL DEFAULT '' CHECK (octet_length(summary) <= 16384),
	-- The last test and lint results: exit code, status, duration and the output tails,
	-- secret-redacted and capped so that all tails of a run together are at most 8 KiB (DT5, SB10).
	test_results          jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(test_results) = 'object'
		AND coalesce(octet_length(test_results #>> '{test,stdoutTail}'), 0) + coalesce(octet_length(test_results #>> '{test,stderrTail}'), 0)
		  + coalesce(octet_length(test_results #>> '{lint,stdoutTail}'), 0) + coalesce(octet_length(test_results #>> '{lint,stderrTail}'), 0) <= 8192
		AND octet_length(test_results::text) <= 65536),
	steps                 integer NOT NULL DEFAULT 0 CHECK (steps >= 0),
	sandbox_runs          integer NOT NULL DEFAULT 0 CHECK (sandbox_runs >= 0),
	model                 text NOT NULL DEFAULT '' CHECK (octet_length(model) <= 200),
	input_tokens          bigint NOT NULL DEFAULT 0 CHECK (input_tokens >= 0),
	output_tokens         bigint NOT NULL DEFAULT 0 CHECK (output_tokens >= 0),
	cost_micros           bigint NOT NULL DEFAULT 0 CHECK (cost_micros >= 0),
	created_at            timestamptz NOT NULL DEFAULT now(),
	updated_at            timestamptz NOT NULL DEFAULT now(),
	started_at            timestamptz,
	finished_at           timestamptz,
	UNIQUE (tenant_id, id),
	FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, id) ON DELETE CASCADE,
	FOREIGN KEY (tenant_id, review_run_id) REFERENCES review_runs (tenant_id, id) ON DELETE SET NULL (review_run_id),
	FOREIGN KEY (tenant_id, trigger_event_id) REFERENCES webhook_events (tenant_id, id) ON DELETE SET NULL (trigger_event_id),
	FOREIGN KEY (tenant_id, requested_by) REFERENCES users (tenant_id, id) ON DELETE SET NULL (requested_by),
	CHECK ((subject = 'issue') = (delivery = 'pr')),
	CHECK (subject = 'pull_request' OR (review_run_id IS NULL AND cardinality(finding_ids) = 0)),
	CHECK ((changes IS NULL) = (patch_sha256 IS NULL) AND (changes IS NULL) = (diff IS NULL)),
	CHECK (status NOT IN ('awaiting_approval', 'approved', 'publishing', 'published') OR (patch_sha256 IS NOT NULL AND base_sha IS NOT NULL)),
	CHECK ((status IN ('ineligible', 'failed', 'rejected', 'expired', 'published')) = (finished_at IS NOT NULL)),
	CHECK (status NOT IN ('ineligible', 'failed', 'rejected', 'expired') OR reason IS NOT NULL)
);
-- At most one running fix per issue (or pull request): the worker's move to running
-- fails on this index instead of checking first (FX10).
CREATE UNIQUE INDEX fix_runs_one_running ON fix_runs (tenant_id, repository_id, number) WHERE status = 'running';
CREATE INDEX fix_runs_subject ON fix_runs (tenant_id, repository_id, number, created_at);
CREATE INDEX fix_runs_finished ON fix_runs (tenant_id, finished_at);
CREATE TRIGGER fix_runs_terminal BEFORE UPDATE OF status ON fix_runs
	FOR EACH ROW EXECUTE FUNCTION quavon_terminal_guard('ineligible', 'failed', 'rejected', 'expired', 'published');

-- The fix agent's step log: which tool, a digest of its arguments (never the arguments,
-- which carry file content), the outcome; capped in number (internal/fix MaxSteps).
CREATE TABLE fix_run_steps (
	tenant_id      uuid NOT NULL,
	fix_run_id     uuid NOT NULL,
	step           integer NOT NULL CHECK (step BETWEEN 1 AND 1000),
	tool           text NOT NULL CHECK (tool IN ('list_files', 'read_file', 'search', 'edit_file', 'create_file',
		'delete_file', 'run_tests', 'run_linter', 'finish', 'unknown')),
	arguments_sha256 text NOT NULL CHECK (arguments_sha256 ~ '^[0-9a-f]{64}$'),
	outcome        text NOT NULL CHECK (outcome IN ('ok', 'error', 'refused', 'limit')),
	detail         text NOT NULL DEFAULT '' CHECK (octet_length(detail) <= 512),
	sandbox_run_id uuid,
	duration_ms    integer NOT NULL DEFAULT 0 CHECK (duration_ms >= 0),
	created_at     timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (tenant_id, fix_run_id, step),
	FOREIGN KEY (tenant_id, fix_run_id) REFERENCES fix_runs (tenant_id, id) ON DELETE CASCADE
);

-- Every sandbox job the worker sends (spec §3, SB10): why, which image (class and the
-- digest the runner resolved), how it ended, how long, how many bytes went in
-- (compressed snapshots) and came out (artefacts), and whether output was cut.
--   running → completed | timed_out | failed | rejected | error   (all terminal)
-- error: the worker got no valid result (enqueue failed, deadline, shutdown).
CREATE TABLE sandbox_runs (
	tenant_id        uuid NOT NULL,
	id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
	repository_id    uuid NOT NULL,
	review_run_id    uuid,
	fix_run_id       uuid,
	job_id           text CHECK (job_id ~ '^[A-Za-z0-9_-]{8,64}$'),
	purpose          text NOT NULL CHECK (purpose IN ('sast', 'fix_test', 'fix_lint')),
	image_class      text NOT NULL CHECK (image_class ~ '^(scanners|node|python|go|byo:[a-z0-9][a-z0-9._-]{0,62})$'),
	image_digest     text CHECK (image_digest ~ '^([a-z0-9][a-z0-9._/:-]{0,254}@)?sha256:[0-9a-f]{64}$'),
	runner_id        text CHECK (runner_id ~ '^[A-Za-z0-9._-]{1,64}$'),
	status           text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'completed', 'timed_out', 'failed', 'rejected', 'error')),
	reason           quavon_reason,
	error            text NOT NULL DEFAULT '' CHECK (octet_length(error) <= 1024),
	exit_code        integer,
	setup_exit_code  integer,
	setup_timed_out  boolean NOT NULL DEFAULT false,
	duration_ms      bigint CHECK (duration_ms >= 0),
	setup_ms         bigint CHECK (setup_ms >= 0),
	run_ms           bigint CHECK (run_ms >= 0),
	wall_ms          bigint CHECK (wall_ms >= 0),
	bytes_in         bigint NOT NULL DEFAULT 0 CHECK (bytes_in >= 0),
	bytes_out        bigint NOT NULL DEFAULT 0 CHECK (bytes_out >= 0),
	output_truncated boolean NOT NULL DEFAULT false,
	started_at       timestamptz NOT NULL DEFAULT now(),
	finished_at      timestamptz,
	UNIQUE (tenant_id, id),
	CHECK (num_nonnulls(review_run_id, fix_run_id) = 1),
	CHECK ((purpose = 'sast') = (review_run_id IS NOT NULL)),
	CHECK ((status = 'running') = (finished_at IS NULL)),
	FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, id) ON DELETE CASCADE,
	FOREIGN KEY (tenant_id, review_run_id) REFERENCES review_runs (tenant_id, id) ON DELETE CASCADE,
	FOREIGN KEY (tenant_id, fix_run_id) REFERENCES fix_runs (tenant_id, id) ON DELETE CASCADE
);
CREATE UNIQUE INDEX sandbox_runs_job ON sandbox_runs (job_id) WHERE job_id IS NOT NULL;
CREATE INDEX sandbox_runs_review ON sandbox_runs (tenant_id, review_run_id) WHERE review_run_id IS NOT NULL;
CREATE INDEX sandbox_runs_fix ON sandbox_runs (tenant_id, fix_run_id) WHERE fix_run_id IS NOT NULL;
CREATE TRIGGER sandbox_runs_terminal BEFORE UPDATE OF status ON sandbox_runs
	FOR EACH ROW EXECUTE FUNCTION quavon_terminal_guard('completed', 'timed_out', 'failed', 'rejected', 'error');

ALTER TABLE fix_run_steps ADD FOREIGN KEY (tenant_id, sandbox_run_id)
	REFERENCES sandbox_runs (tenant_id, id) ON DELETE SET NULL (sandbox_run_id);

-- Outputs to publish, or to approve first: one per run and kind. payload holds typed
-- fields the publisher renders (never rendered text); the bound hashes pin what an
-- approval was given for (patch, base, head, payload, policy verdicts).
--   stored             shadow mode: kept, never published (terminal)
--   ready              to publish (review outputs in mode on; fix outputs in auto mode)
--   awaiting_approval  a maintainer decides before expires_at
--   awaiting_approval → approved | rejected | expired | cancelled
--   ready, approved → published | failed | cancelled
-- stored, rejected, expired, published, failed and cancelled are terminal.
CREATE TABLE pending_outputs (
	tenant_id      uuid NOT NULL,
	id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
	repository_id  uuid NOT NULL,
	kind           text NOT NULL CHECK (kind IN ('review', 'check_run', 'sarif', 'fix_pr', 'fix_commit')),
	review_run_id  uuid,
	fix_run_id     uuid,
	status         text NOT NULL CHECK (status IN ('stored', 'ready', 'awaiting_approval', 'approved', 'rejected',
		'expired', 'published', 'failed', 'cancelled')),
	reason         quavon_reason,
	payload        jsonb NOT NULL CHECK (jsonb_typeof(payload) = 'object' AND octet_length(payload::text) <= 4194304),
	payload_sha256 text NOT NULL CHECK (payload_sha256 ~ '^[0-9a-f]{64}$'),
	patch_sha256   text CHECK (patch_sha256 ~ '^[0-9a-f]{64}$'),
	base_sha       quavon_sha,
	head_sha       quavon_sha,
	policy_sha256  text CHECK (policy_sha256 ~ '^[0-9a-f]{64}$'),
	expires_at     timestamptz,
	decided_by     uuid,
	decided_at     timestamptz,
	decision_note  text NOT NULL DEFAULT '' CHECK (octet_length(decision_note) <= 2000),
	created_at     timestamptz NOT NULL DEFAULT now(),
	updated_at     timestamptz NOT NULL DEFAULT now(),
	UNIQUE (tenant_id, id),
	CHECK (CASE WHEN kind IN ('review', 'check_run', 'sarif') THEN review_run_id IS NOT NULL AND fix_run_id IS NULL
		ELSE fix_run_id IS NOT NULL AND review_run_id IS NULL AND patch_sha256 IS NOT NULL AND base_sha IS NOT NULL END),
	CHECK (kind <> 'fix_commit' OR head_sha IS NOT NULL),
	CHECK (status <> 'awaiting_approval' OR (expires_at IS NOT NULL AND kind IN ('fix_pr', 'fix_commit'))),
	CHECK (status NOT IN ('approved', 'rejected') OR decided_at IS NOT NULL),
	FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, id) ON DELETE CASCADE,
	FOREIGN KEY (tenant_id, review_run_id) REFERENCES review_runs (tenant_id, id) ON DELETE CASCADE,
	FOREIGN KEY (tenant_id, fix_run_id) REFERENCES fix_runs (tenant_id, id) ON DELETE CASCADE,
	FOREIGN KEY (tenant_id, decided_by) REFERENCES users (tenant_id, id) ON DELETE SET NULL (decided_by)
);
CREATE UNIQUE INDEX pending_outputs_review ON pending_outputs (tenant_id, review_run_id, kind) WHERE review_run_id IS NOT NULL;
CREATE UNIQUE INDEX pending_outputs_fix ON pending_outputs (tenant_id, fix_run_id, kind) WHERE fix_run_id IS NOT NULL;
CREATE INDEX pending_outputs_expiry ON pending_outputs (expires_at) WHERE status = 'awaiting_approval';
CREATE TRIGGER pending_outputs_terminal BEFORE UPDATE OF status ON pending_outputs
	FOR EACH ROW EXECUTE FUNCTION quavon_terminal_guard('stored', 'rejected', 'expired', 'published', 'failed', 'cancelled');

-- One intent per external write, keyed as the spec says (review:, check:, sarif:,
-- fix_pr:, fix_commit: {repositoryId}:{runId}). The marker is the hidden idempotency
-- marker put in the body or message; reconcile looks for it.
--   pending → in_flight | cancelled | failed
--   in_flight → published | failed | in_flight (a retry, after reconcile found nothing)
-- published, failed and cancelled are terminal.
CREATE TABLE publish_intents (
	tenant_id         uuid NOT NULL,
	id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
	repository_id     uuid NOT NULL,
	pending_output_id uuid NOT NULL,
	kind              text NOT NULL CHECK (kind IN ('review', 'check', 'sarif', 'fix_pr', 'fix_commit')),
	key               text NOT NULL UNIQUE
		CHECK (key ~ '^(review|check|sarif|fix_pr|fix_commit):[0-9a-f-]{36}:[0-9a-f-]{36}$'),
	marker            text NOT NULL UNIQUE CHECK (marker ~ '^[0-9a-f]{32}$'),
	status            text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'in_flight', 'published', 'failed', 'cancelled')),
	attempts          integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
	claimed_at        timestamptz,
	reason            quavon_reason,
	last_error        text NOT NULL DEFAULT '' CHECK (octet_length(last_error) <= 1024),
	-- What GitHub answered: the review, check run or SARIF upload id, the pull request,
	-- the commit and the branch written.
	external_id       text CHECK (octet_length(external_id) BETWEEN 1 AND 200),
	external_number   integer CHECK (external_number > 0),
	commit_sha        quavon_sha,
	branch            text CHECK (octet_length(branch) <= 255),
	created_at        timestamptz NOT NULL DEFAULT now(),
	updated_at        timestamptz NOT NULL DEFAULT now(),
	published_at      timestamptz,
	UNIQUE (tenant_id, id),
	CHECK (starts_with(key, kind || ':')),
	CHECK ((status = 'published') = (published_at IS NOT NULL)),
	CHECK (status NOT IN ('failed', 'cancelled') OR reason IS NOT NULL),
	FOREIGN KEY (tenant_id, repository_id) REFERENCES repositories (tenant_id, id) ON DELETE CASCADE,
	FOREIGN KEY (tenant_id, pending_output_id) REFERENCES pending_outputs (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX publish_intents_output ON publish_intents (tenant_id, pending_output_id);
CREATE TRIGGER publish_intents_terminal BEFORE UPDATE OF status ON publish_intents
	FOR EACH ROW EXECUTE FUNCTION quavon_terminal_guard('published', 'failed', 'cancelled');

-- Tenancy as migration 0001's loop gives every tenant table (that loop ran before these
-- tables existed): RLS enabled and forced, the isolation policy, owned by quavon_owner,
-- DML for quavon_app.
DO $$
DECLARE
	t text;
BEGIN
	FOREACH t IN ARRAY ARRAY['webhook_events', 'review_runs', 'review_findings', 'finding_feedback', 'fix_runs',
		'fix_run_steps', 'sandbox_runs', 'pending_outputs', 'publish_intents']
	LOOP
		EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
		EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
		EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (tenant_id = quavon_current_tenant()) WITH CHECK (tenant_id = quavon_current_tenant())', t);
		EXECUTE format('ALTER TABLE %I OWNER TO quavon_owner', t);
		EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %I TO quavon_app', t);
	END LOOP;
END
$$;
GRANT USAGE ON DOMAIN quavon_sha TO quavon_app;
GRANT USAGE ON DOMAIN quavon_reason TO quavon_app;
