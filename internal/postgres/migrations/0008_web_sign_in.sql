-- A dashboard sign-in waiting for its tenant: when the identity GitHub confirmed is known in
-- more than one tenant, the browser chooses one (a plain form) before any session exists.
--
-- The row holds only what GitHub confirmed (host, login, numeric id) and the local return
-- path, found by the SHA-256 of a random cookie value (never stored), for ten minutes and
-- one use. It belongs to no tenant yet: the chosen tenant is checked against
-- quavon_route_identity() again when the choice is posted.

CREATE TABLE web_sign_ins (
	id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
	secret_hash bytea NOT NULL UNIQUE CHECK (length(secret_hash) = 32),
	host        text NOT NULL CHECK (length(host) BETWEEN 1 AND 255),
	login       text NOT NULL CHECK (length(login) BETWEEN 1 AND 100),
	external_id bigint NOT NULL CHECK (external_id > 0),
	return_path text NOT NULL CHECK (length(return_path) BETWEEN 1 AND 2048),
	created_at  timestamptz NOT NULL DEFAULT now(),
	expires_at  timestamptz NOT NULL
);
CREATE INDEX web_sign_ins_expires ON web_sign_ins (expires_at);
ALTER TABLE web_sign_ins OWNER TO quavon_owner;
GRANT SELECT, INSERT, DELETE ON web_sign_ins TO quavon_app;

-- Sign-in and every dashboard request (the session's count of tenants, to offer switching)
-- look identities up by host and id across tenants.
CREATE INDEX user_identities_identity ON user_identities (host, external_id);
