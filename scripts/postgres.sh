#!/usr/bin/env bash
# postgres.sh starts a local PostgreSQL server for Loom's tests.
#
# It is idempotent: it installs Debian's postgresql package if it is missing,
# creates and starts a cluster, and creates the role "loom" (password "loom")
# and the database "loom_test". Run it as root, then point the tests at the
# server:
#
#	eval "$(scripts/postgres.sh)"     # prints: export LOOM_TEST_POSTGRES_URL=...
#	. scripts/postgres.sh             # or source it to export the variable
#
# Tests that need PostgreSQL read LOOM_TEST_POSTGRES_URL; they skip without it
# unless CI is set, in which case they fail.

_loom_pg_main() {
	set -eu
	local port=5432 user=loom pass=loom db=loom_test
	if ! command -v pg_ctlcluster >/dev/null 2>&1 || ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
		echo "postgres.sh: installing postgresql" >&2
		export DEBIAN_FRONTEND=noninteractive
		apt-get update >&2
		apt-get install -y postgresql >&2
	fi
	local version
	version=$(ls /usr/lib/postgresql | sort -V | tail -n1)
	if ! pg_lsclusters -h | awk -v v="$version" '$1 == v && $2 == "main"' | grep -q .; then
		pg_createcluster "$version" main -p "$port" >&2
	fi
	if ! pg_lsclusters -h | awk -v v="$version" '$1 == v && $2 == "main" && $4 == "online"' | grep -q .; then
		pg_ctlcluster "$version" main start >&2
	fi
	# Use the port the cluster actually listens on.
	port=$(pg_lsclusters -h | awk -v v="$version" '$1 == v && $2 == "main" { print $3 }')
	# Wait until the server accepts connections.
	local i
	for i in $(seq 1 50); do
		if su postgres -c "psql -p $port -tAc 'select 1'" >/dev/null 2>&1; then
			break
		fi
		sleep 0.2
	done
	su postgres -c "psql -p $port -v ON_ERROR_STOP=1 -q" >&2 <<SQL
DO \$\$ BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$user') THEN
		CREATE ROLE $user LOGIN PASSWORD '$pass';
	ELSE
		ALTER ROLE $user LOGIN PASSWORD '$pass';
	END IF;
END \$\$;
SQL
	if ! su postgres -c "psql -p $port -tAc \"SELECT 1 FROM pg_database WHERE datname = '$db'\"" | grep -q 1; then
		su postgres -c "createdb -p $port -O $user $db" >&2
	fi
	echo "postgres://$user:$pass@127.0.0.1:$port/$db?sslmode=disable"
}

if [ "${BASH_SOURCE[0]}" != "$0" ]; then
	# Sourced: export the variable into the caller's shell.
	LOOM_TEST_POSTGRES_URL=$( (_loom_pg_main) ) && export LOOM_TEST_POSTGRES_URL
	unset -f _loom_pg_main
else
	url=$(_loom_pg_main)
	echo "export LOOM_TEST_POSTGRES_URL='$url'"
fi
