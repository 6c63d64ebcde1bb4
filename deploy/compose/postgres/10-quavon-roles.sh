#!/bin/bash
# Run once by the postgres image's entrypoint when it initialises the data
# directory: the role quavon_app (the same definition as migration 0001,
# which leaves an existing one alone) and one login role per service that
# is a member of it and nothing else. quavon migrate runs as postgres.
set -euo pipefail
api_pw=$(<"$API_DB_PASSWORD_FILE")
worker_pw=$(<"$WORKER_DB_PASSWORD_FILE")
publisher_pw=$(<"$PUBLISHER_DB_PASSWORD_FILE")
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
	-v api_pw="$api_pw" -v worker_pw="$worker_pw" -v publisher_pw="$publisher_pw" <<'SQL'
CREATE ROLE quavon_app NOLOGIN NOSUPERUSER NOBYPASSRLS;
CREATE ROLE quavon_api LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS PASSWORD :'api_pw' IN ROLE quavon_app;
CREATE ROLE quavon_worker LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS PASSWORD :'worker_pw' IN ROLE quavon_app;
CREATE ROLE quavon_publisher LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOBYPASSRLS PASSWORD :'publisher_pw' IN ROLE quavon_app;
SQL
