# apt.sh: sourced by the scripts that install Debian packages (deps.sh,
# browser.sh, postgres.sh); defines as_root, apt_get and apt_install.
#
# Another apt-get or dpkg (an unattended upgrade, a second terminal) holds
# the package lock for minutes at a time: apt_get then waits for it, saying
# so once, up to PROCTOR_APT_WAIT seconds (default 600), instead of failing.

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# apt_get runs `apt-get ARGS` as root, quietly, waiting while the package
# lock is held by another process; its output is shown only when it fails.
apt_get() {
	local limit=${PROCTOR_APT_WAIT:-600} waited=0 out status
	while :; do
		status=0
		out=$(as_root env DEBIAN_FRONTEND=noninteractive apt-get -qq "$@" 2>&1) || status=$?
		if [ "$status" -eq 0 ]; then
			return 0
		fi
		if ! grep -qE 'Could not get lock|Unable to acquire the dpkg frontend lock|Unable to lock (the )?(directory|administration)' <<<"$out"; then
			printf '%s\n' "$out" >&2
			return "$status"
		fi
		if [ "$waited" -ge "$limit" ]; then
			printf '%s\n' "$out" >&2
			echo "apt: another apt-get or dpkg still holds the package lock after ${limit} s; let it finish (or stop it), then run this again" >&2
			return "$status"
		fi
		if [ "$waited" -eq 0 ]; then
			echo "apt: another apt-get or dpkg holds the package lock; waiting for it (up to ${limit} s, PROCTOR_APT_WAIT)" >&2
		fi
		sleep 5
		waited=$((waited + 5))
	done
}

# apt_install installs packages, running apt-get update at most once per
# deps.sh run.
apt_install() {
	if [ -z "${PROCTOR_APT_UPDATED:-}" ]; then
		apt_get update
		export PROCTOR_APT_UPDATED=1
	fi
	apt_get install -y "$@"
}
