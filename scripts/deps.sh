#!/usr/bin/env bash
# Installs what is missing, and nothing else; quiet when nothing is missing.
#
# Usage: scripts/deps.sh [PART...]      PART is one of
#   web        npm ci (when node_modules is missing or older than package-lock.json)
#              and copy htmx and Pico CSS into static/vendor/ (gitignored, embedded);
#              npm ci also installs the devDependencies that the MCP tests run
#              (Playwright MCP, the MCP Inspector CLI: internal/mcpref), which
#              have no install scripts and so download no browser
#   browser    Debian's Chromium and the Playwright driver (scripts/browser.sh install)
#   postgres   the PostgreSQL server (scripts/postgres.sh install)
#   versitygw  the S3 server for the tests (scripts/versitygw.sh install)
#   all        all of the above (the default)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

log() { echo "deps.sh: $*" >&2; }

# shellcheck source=scripts/apt.sh
. "$root/scripts/apt.sh"

# Files copied out of node_modules: "source destination-name".
vendor_files=(
	"node_modules/htmx.org/dist/htmx.min.js htmx.min.js"
	"node_modules/@picocss/pico/css/pico.min.css pico.min.css"
)

deps_web() {
	command -v npm >/dev/null || { log "npm is not installed"; return 1; }
	# npm writes node_modules/.package-lock.json on every install: older than
	# package-lock.json means the lock file changed since.
	if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
		log "npm ci"
		npm ci --no-audit --no-fund --loglevel=error >/dev/null
		touch node_modules/.package-lock.json
	fi
	mkdir -p static/vendor
	local entry src dst
	for entry in "${vendor_files[@]}"; do
		src=${entry% *}
		dst=static/vendor/${entry#* }
		if ! cmp -s "$src" "$dst"; then
			cp "$src" "$dst"
		fi
	done
}

# apt_prefetch installs in one apt-get run every Debian package the parts below
# would install one by one, so that apt-get update runs once at most.
apt_prefetch() {
	local pkgs=() part
	for part in "$@"; do
		case $part in
		browser) [ -x /usr/bin/chromium ] || pkgs+=(chromium) ;;
		postgres) compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || pkgs+=(postgresql) ;;
		esac
	done
	[ ${#pkgs[@]} -gt 0 ] || return 0
	log "installing ${pkgs[*]} (apt)"
	apt_install "${pkgs[@]}"
}

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(all)
expanded=()
for part in "${parts[@]}"; do
	case $part in
	all) expanded+=(web browser postgres versitygw) ;;
	web | browser | postgres | versitygw) expanded+=("$part") ;;
	*)
		echo "usage: $0 [all|web|browser|postgres|versitygw]..." >&2
		exit 2
		;;
	esac
done

apt_prefetch "${expanded[@]}"
for part in "${expanded[@]}"; do
	case $part in
	web) deps_web ;;
	browser) scripts/browser.sh install ;;
	postgres) scripts/postgres.sh install ;;
	versitygw)
		[ -x scripts/versitygw.sh ] || { log "scripts/versitygw.sh is missing"; exit 1; }
		scripts/versitygw.sh install
		;;
	esac
done
