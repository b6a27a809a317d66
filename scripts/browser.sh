#!/usr/bin/env bash
# Installs what the browser tests and the web-agent runner need, without any
# download of Playwright's own browsers (this machine reaches none of them):
#   - Debian's Chromium at /usr/bin/chromium;
#   - the Playwright driver that github.com/mxschmitt/playwright-go v0.6401.0
#     expects, assembled from the npm package playwright-core plus this
#     machine's node:
#         DIR/node                 -> symlink to node
#         DIR/package/cli.js       (and the rest of playwright-core)
#     DIR defaults to .cache/playwright-driver; point playwright-go at it with
#     PLAYWRIGHT_DRIVER_PATH=DIR or RunOptions{DriverDirectory: DIR}.
#
# Usage: scripts/browser.sh install [DIR]
#        scripts/browser.sh check [DIR]   (exit 1 if anything is missing)
# Idempotent and quiet when nothing is missing.
set -euo pipefail

# Keep in step with playwright-go's playwrightCliVersion (run.go): Run refuses a
# driver whose --version differs.
PLAYWRIGHT_VERSION=1.64.1
CHROMIUM=/usr/bin/chromium

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

log() { echo "browser.sh: $*" >&2; }

# shellcheck source=scripts/apt.sh
. "$root/scripts/apt.sh"

driver_version() {
	local dir=$1
	[ -x "$dir/node" ] && [ -f "$dir/package/cli.js" ] || return 1
	"$dir/node" "$dir/package/cli.js" --version 2>/dev/null
}

driver_ok() {
	local out
	out=$(driver_version "$1") || return 1
	# playwright-go accepts any output containing the version; we ask for the
	# exact line "Version 1.64.1" so a 1.64.10 never passes for it.
	[ "$out" = "Version $PLAYWRIGHT_VERSION" ]
}

# patch_bundle makes the same edit that playwright-go's Install applies to
# package/lib/coreBundle.js (run.go, patchDriverBundle), so that a later
# playwright.Install finds nothing to write: the driver may live in a folder
# the server's user cannot write (the Docker image's /opt/playwright-driver).
patch_bundle() {
	local f=$1/package/lib/coreBundle.js
	[ -f "$f" ] || { log "missing $f"; return 1; }
	if grep -q -e 'pageError\.location\.url' -e 'pageError\.location\.lineNumber' -e 'pageError\.location\.columnNumber' "$f"; then
		sed -i \
			-e 's/pageError\.location\.url/pageError.location?.url || ""/g' \
			-e 's/pageError\.location\.lineNumber/pageError.location?.lineNumber || 0/g' \
			-e 's/pageError\.location\.columnNumber/pageError.location?.columnNumber || 0/g' \
			"$f"
	fi
}

install_chromium() {
	[ -x "$CHROMIUM" ] && return 0
	log "installing chromium (apt)"
	apt_install chromium
	[ -x "$CHROMIUM" ] || { log "apt installed chromium but $CHROMIUM is missing"; return 1; }
}

install_driver() {
	local dir=$1 node tmp
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	node=$(command -v node) || { log "node is not installed"; return 1; }
	if [ "$(readlink "$dir/node" 2>/dev/null || true)" != "$node" ]; then
		ln -sfn "$node" "$dir/node"
	fi
	if ! driver_ok "$dir"; then
		log "installing playwright-core@$PLAYWRIGHT_VERSION into $dir"
		tmp=$(mktemp -d)
		(cd "$tmp" && npm pack "playwright-core@$PLAYWRIGHT_VERSION" --silent >/dev/null)
		rm -rf "$dir/package"
		# The npm tarball nests everything under package/, the layout
		# playwright-go expects (DIR/package/cli.js).
		tar xzf "$tmp/playwright-core-$PLAYWRIGHT_VERSION.tgz" -C "$dir"
		rm -rf "$tmp"
	fi
	patch_bundle "$dir"
	if ! driver_ok "$dir"; then
		log "driver in $dir reports '$(driver_version "$dir" || true)', want 'Version $PLAYWRIGHT_VERSION'"
		return 1
	fi
}

cmd=${1:-install}
dir=${2:-$root/.cache/playwright-driver}
case $cmd in
install)
	install_chromium
	install_driver "$dir"
	;;
check)
	ok=0
	[ -x "$CHROMIUM" ] || { log "$CHROMIUM missing"; ok=1; }
	driver_ok "$dir" || { log "playwright driver $PLAYWRIGHT_VERSION missing in $dir"; ok=1; }
	exit $ok
	;;
*)
	echo "usage: $0 install|check [DRIVER_DIR]" >&2
	exit 2
	;;
esac
