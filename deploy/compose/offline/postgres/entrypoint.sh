#!/bin/bash
# The official postgres image's contract, as far as compose.yaml uses it:
# on an empty $PGDATA, initdb with POSTGRES_USER and POSTGRES_PASSWORD_FILE,
# create POSTGRES_DB, run /docker-entrypoint-initdb.d/*.sh against a server
# that listens on a private socket only (so pg_isready, and the healthcheck,
# stay false until the real server starts), then exec the command as
# postgres.
set -Eeuo pipefail
if [[ $(id -u) == 0 ]]; then
	mkdir -p "$PGDATA"
	chown -R postgres:postgres "$PGDATA" /var/run/postgresql
	chmod 0700 "$PGDATA"
	exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
if [[ ! -s $PGDATA/PG_VERSION ]]; then
	[[ -r ${POSTGRES_PASSWORD_FILE:-} ]] || { echo "entrypoint: POSTGRES_PASSWORD_FILE is not readable" >&2; exit 1; }
	initdb --username="$POSTGRES_USER" --pwfile="$POSTGRES_PASSWORD_FILE" --auth-local=trust \
		--auth-host=scram-sha-256 --encoding=UTF8 -D "$PGDATA" >/dev/null
	echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
	export PGHOST=/tmp/pginit
	mkdir -p "$PGHOST"
	pg_ctl -D "$PGDATA" -o "-c listen_addresses='' -c unix_socket_directories=$PGHOST" -w start >/dev/null
	if [[ $POSTGRES_DB != postgres ]]; then
		psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname postgres -q \
			-c "CREATE DATABASE \"$POSTGRES_DB\""
	fi
	for f in /docker-entrypoint-initdb.d/*.sh; do
		[[ -e $f ]] || continue
		echo "entrypoint: running $f"
		bash "$f"
	done
	pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
	unset PGHOST
	rm -rf /tmp/pginit
fi
exec "$@"
