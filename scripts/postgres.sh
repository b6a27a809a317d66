#!/usr/bin/env bash
# A throwaway PostgreSQL server for the tests, on a free loopback port.
#
# Usage:
#   scripts/postgres.sh install     apt-get install postgresql when no initdb exists
#   scripts/postgres.sh start DIR   initdb DIR/pgdata (first time), start the server,
#                                   create database proctor_test and print
#                                   export PROCTOR_TEST_DATABASE_URL=…  on stdout
#   scripts/postgres.sh stop DIR    stop it (fast shutdown); no-op when not running;
#                                   a later start of DIR uses the same port when free
#
# As root, the server runs as user postgres (postgres refuses to run as root), so
# DIR is chowned to postgres and every folder above DIR must be searchable by it.
# Everything but the export line goes to stderr: eval "$(scripts/postgres.sh start DIR)".
set -euo pipefail

DATABASE=proctor_test

log() { echo "postgres.sh: $*" >&2; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/apt.sh
. "$root/scripts/apt.sh"

# pgbin prints the bin folder of the newest installed PostgreSQL server.
pgbin() {
	local d
	d=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
	[ -n "$d" ] && [ -x "$d/initdb" ] || return 1
	echo "$d"
}

# as_pg runs a command as the server's user: postgres when we are root.
as_pg() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

free_port() {
	node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

running() {
	as_pg "$bin/pg_ctl" -D "$1/pgdata" status >/dev/null 2>&1
}

cmd_install() {
	pgbin >/dev/null && return 0
	log "installing postgresql (apt)"
	apt_install postgresql
	pgbin >/dev/null || { log "apt installed postgresql but no initdb under /usr/lib/postgresql/*/bin"; return 1; }
}

cmd_start() {
	local dir=$1 port="" try
	bin=$(pgbin) || { log "PostgreSQL server not installed: run scripts/postgres.sh install"; return 1; }
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	if [ "$(id -u)" -eq 0 ]; then
		chown postgres: "$dir"
		if ! runuser -u postgres -- test -w "$dir"; then
			log "user postgres cannot write $dir (is a folder above it private? chmod 755 it)"
			return 1
		fi
	fi
	case $dir in *[[:space:]]*) log "DIR must not contain spaces: $dir"; return 1 ;; esac
	# The socket path must fit in sun_path (107 bytes).
	if [ ${#dir} -gt 80 ]; then log "DIR is too long for a Unix socket path: $dir"; return 1; fi
	as_pg mkdir -p "$dir/sock"
	if [ ! -f "$dir/pgdata/PG_VERSION" ]; then
		as_pg "$bin/initdb" -D "$dir/pgdata" -U postgres --auth=trust -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 ||
			{ cat "$dir/initdb.log" >&2; return 1; }
	fi
	if running "$dir"; then
		port=$(cat "$dir/port")
	else
		# A server started before comes back on its port (a restart); another
		# process may take a new port between free_port and the start.
		for try in 1 2 3; do
			if [ "$try" = 1 ] && [ -f "$dir/port" ]; then
				port=$(cat "$dir/port")
			else
				port=$(free_port)
			fi
			if as_pg "$bin/pg_ctl" -D "$dir/pgdata" -l "$dir/postgres.log" -w -t 60 \
				-o "-c listen_addresses=127.0.0.1 -p $port -k $dir/sock -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
				start >/dev/null; then
				break
			fi
			log "start on port $port failed (try $try); log:"
			port=""
			tail -n 5 "$dir/postgres.log" >&2 || true
		done
		[ -n "$port" ] || return 1
		echo "$port" >"$dir/port"
	fi
	if [ -z "$(as_pg "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -d postgres -Atqc "SELECT 1 FROM pg_database WHERE datname = '$DATABASE'")" ]; then
		as_pg "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres "$DATABASE"
	fi
	echo "export PROCTOR_TEST_DATABASE_URL='postgres://postgres@127.0.0.1:$port/$DATABASE?sslmode=disable'"
}

cmd_stop() {
	local dir=$1
	bin=$(pgbin) || return 0
	[ -d "$dir/pgdata" ] || return 0
	if running "$dir"; then
		as_pg "$bin/pg_ctl" -D "$dir/pgdata" -m fast -w -t 60 stop >/dev/null
	fi
}

case ${1:-} in
install) cmd_install ;;
start)
	[ $# -eq 2 ] || { echo "usage: $0 start DIR" >&2; exit 2; }
	cmd_start "$2"
	;;
stop)
	[ $# -eq 2 ] || { echo "usage: $0 stop DIR" >&2; exit 2; }
	cmd_stop "$2"
	;;
*)
	echo "usage: $0 install | start DIR | stop DIR" >&2
	exit 2
	;;
esac
