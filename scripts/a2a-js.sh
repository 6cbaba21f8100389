#!/usr/bin/env bash
# a2a-js.sh installs the A2A JavaScript SDK and prints the directory of its
# node_modules, for the A2A tests' JavaScript peers (a client that drives
# Loom's A2A server and a scripted A2A server that Loom's remote agent
# calls; both under server/a2aserver/testdata/js).
#
# The npm package is installed once into a cache directory (LOOM_A2A_CACHE,
# default $HOME/.cache/loom-a2a); later runs find it there and install
# nothing. Needs node and npm.
#
#   LOOM_A2A_JS=$(scripts/a2a-js.sh); export LOOM_A2A_JS
set -euo pipefail

version=1.3.0
pkg=@a2a-js/sdk
# The SDK's server runs on Express, a peer dependency.
express=express@5.1.0
cache=${LOOM_A2A_CACHE:-${HOME:-/tmp}/.cache/loom-a2a}
manifest=$cache/node_modules/$pkg/package.json

installed() {
	[ -f "$manifest" ] && [ -f "$cache/node_modules/express/package.json" ] &&
		node -e 'process.exit(require(process.argv[1]).version === process.argv[2] ? 0 : 1)' "$manifest" "$version"
}

if ! installed; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "a2a-js.sh: npm is not installed (apt-get install nodejs npm)" >&2
		exit 1
	fi
	echo "a2a-js.sh: installing $pkg@$version into $cache" >&2
	mkdir -p "$cache"
	npm install --prefix "$cache" --no-audit --no-fund --loglevel=error "$pkg@$version" "$express" >&2
	installed || { echo "a2a-js.sh: $pkg is missing after the install" >&2; exit 1; }
fi
echo "$cache/node_modules"
