#!/usr/bin/env bash
# Tests apt.sh's wait for the package lock with the lock really held by
# another process (an fcntl lock on dpkg's frontend lock, as apt-get and
# dpkg take it). Needs root and python3; run by `make test`.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/apt.sh
. "$root/scripts/apt.sh"

fail() { echo "apt_test.sh: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || fail "needs root (it takes dpkg's lock)"

tmp=$(mktemp -d)
trap 'kill "$holder" 2>/dev/null || true; rm -rf "$tmp"' EXIT

# hold_lock SECONDS holds dpkg's frontend lock that long in the background.
hold_lock() {
	rm -f "$tmp/held"
	python3 - "$1" "$tmp/held" <<'PY' &
import fcntl, sys, time
with open("/var/lib/dpkg/lock-frontend", "w") as f:
    fcntl.lockf(f, fcntl.LOCK_EX)
    open(sys.argv[2], "w").close()
    time.sleep(float(sys.argv[1]))
PY
	holder=$!
	for _ in $(seq 1 100); do [ -f "$tmp/held" ] && return 0; sleep 0.1; done
	fail "the lock was not taken"
}

# An apt-get that meets the lock waits for it, says so once, and succeeds.
hold_lock 7
start=$SECONDS
PROCTOR_APT_WAIT=60 apt_get install -y coreutils 2>"$tmp/err" || fail "apt_get did not succeed once the lock was free: $(cat "$tmp/err")"
took=$((SECONDS - start))
[ "$took" -ge 5 ] || fail "apt_get returned after ${took} s, while the lock was held for 7 s"
grep -q "holds the package lock; waiting for it (up to 60 s" "$tmp/err" || fail "no message while waiting: $(cat "$tmp/err")"
[ "$(grep -c "waiting for it" "$tmp/err")" -eq 1 ] || fail "the wait was announced more than once"
wait "$holder" || true

# One that waits past its bound fails, saying what to do.
hold_lock 30
if PROCTOR_APT_WAIT=5 apt_get install -y coreutils 2>"$tmp/err"; then
	fail "apt_get succeeded while the lock was held"
fi
grep -q "still holds the package lock after 5 s; let it finish" "$tmp/err" || fail "no message on giving up: $(cat "$tmp/err")"
echo "apt_test.sh: ok (waited ${took} s for a held lock; gave up after its bound with a message)"
