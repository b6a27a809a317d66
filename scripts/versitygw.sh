#!/usr/bin/env bash
# versitygw.sh: install, start and stop a local versitygw S3 server for tests.
#
#   scripts/versitygw.sh install      install versitygw into .cache/bin (idempotent)
#   scripts/versitygw.sh start DIR    start it on a free loopback port, data in DIR/data;
#                                     prints `export PROCTOR_TEST_S3_*=...` lines
#   scripts/versitygw.sh stop DIR     stop the server started with DIR (idempotent)
#
# Usage from a Makefile or shell: eval "$(scripts/versitygw.sh start .cache/s3)"
set -euo pipefail

VERSION=v1.8.0
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN_DIR=$ROOT/.cache/bin
BIN=$BIN_DIR/versitygw
ACCESS_KEY=${VERSITYGW_ACCESS_KEY:-proctortest}
SECRET_KEY=${VERSITYGW_SECRET_KEY:-proctortestsecret}

die() { echo "versitygw.sh: $*" >&2; exit 1; }

install() {
	if [[ -x $BIN ]]; then
		return 0
	fi
	command -v go >/dev/null || die "go is not on PATH"
	echo "versitygw.sh: installing versitygw $VERSION into $BIN_DIR (about 100 s cold)" >&2
	mkdir -p "$BIN_DIR"
	GOBIN=$BIN_DIR CGO_ENABLED=0 go install "github.com/versity/versitygw/cmd/versitygw@$VERSION" >&2
	[[ -x $BIN ]] || die "go install finished but $BIN is missing"
}

# free_port prints a TCP port on 127.0.0.1 that was free a moment ago.
free_port() {
	if command -v python3 >/dev/null; then
		python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
		return
	fi
	local p
	for _ in $(seq 1 100); do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return
		fi
	done
	die "no free port found"
}

# http_status prints the HTTP status code of GET url, or 000 if nothing answers.
http_status() {
	if command -v curl >/dev/null; then
		curl -s -o /dev/null -m 2 -w '%{http_code}' "$1" || true
		return
	fi
	python3 - "$1" <<'PY'
import sys, urllib.request, urllib.error
try:
    print(urllib.request.urlopen(sys.argv[1], timeout=2).status)
except urllib.error.HTTPError as e:
    print(e.code)
except Exception:
    print("000")
PY
}

running() {
	local pidfile=$1/versitygw.pid
	[[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

print_env() {
	echo "export PROCTOR_TEST_S3_ENDPOINT=127.0.0.1:$(cat "$1/versitygw.port")"
	echo "export PROCTOR_TEST_S3_ACCESS_KEY=$ACCESS_KEY"
	echo "export PROCTOR_TEST_S3_SECRET_KEY=$SECRET_KEY"
}

start() {
	local dir=${1:?usage: versitygw.sh start DIR}
	install
	mkdir -p "$dir/data"
	dir=$(cd "$dir" && pwd)
	if running "$dir" && [[ -f $dir/versitygw.port ]]; then
		print_env "$dir"
		return 0
	fi
	local port
	port=$(free_port)
	echo "$port" >"$dir/versitygw.port"
	"$BIN" --access "$ACCESS_KEY" --secret "$SECRET_KEY" --port "127.0.0.1:$port" --quiet \
		posix "$dir/data" >"$dir/versitygw.log" 2>&1 </dev/null &
	echo $! >"$dir/versitygw.pid"

	# Any HTTP answer (403 on / without credentials) means it is serving.
	local deadline=$((SECONDS + 30)) code
	while ((SECONDS < deadline)); do
		if ! running "$dir"; then
			cat "$dir/versitygw.log" >&2 || true
			rm -f "$dir/versitygw.pid"
			die "versitygw exited during start (log above: $dir/versitygw.log)"
		fi
		code=$(http_status "http://127.0.0.1:$port/")
		if [[ $code != 000 ]]; then
			print_env "$dir"
			return 0
		fi
		sleep 0.1
	done
	stop "$dir"
	die "versitygw did not answer on 127.0.0.1:$port within 30 s (log: $dir/versitygw.log)"
}

stop() {
	local dir=${1:?usage: versitygw.sh stop DIR}
	local pidfile=$dir/versitygw.pid
	[[ -f $pidfile ]] || return 0
	local pid
	pid=$(cat "$pidfile")
	if kill -0 "$pid" 2>/dev/null; then
		kill "$pid"
		for _ in $(seq 1 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			kill -9 "$pid" 2>/dev/null || true
		fi
	fi
	rm -f "$pidfile" "$dir/versitygw.port"
}

case ${1:-} in
install) install ;;
start) start "${2:-}" ;;
stop) stop "${2:-}" ;;
*) die "usage: $0 install | start DIR | stop DIR" ;;
esac
