#!/usr/bin/env bash
# mcp-server.sh installs the MCP "everything" test server and prints the path
# of its executable.
#
# The tool/mcptool tests start it as a real MCP server (over stdio and over
# streamable HTTP). The npm package is installed once into a cache directory
# (LOOM_MCP_CACHE, default $HOME/.cache/loom-mcp); later runs find it there
# and install nothing. Needs node and npm.
#
#   LOOM_MCP_EVERYTHING=$(scripts/mcp-server.sh); export LOOM_MCP_EVERYTHING
#
# With the argument "adk" it installs, beside it, the older release ADK's
# conformance case tool/mcp_001 was recorded against (its tools echo, add
# and longRunningOperation, which later releases renamed or dropped);
# "loom conformance test" starts that one when LOOM_MCP_EVERYTHING_ADK
# is set:
#
#   LOOM_MCP_EVERYTHING_ADK=$(scripts/mcp-server.sh adk); export LOOM_MCP_EVERYTHING_ADK
set -euo pipefail

pkg=@modelcontextprotocol/server-everything
cache=${LOOM_MCP_CACHE:-${HOME:-/tmp}/.cache/loom-mcp}
case "${1:-}" in
"") version=2026.8.31 ;;
adk)
	version=2025.9.25
	cache=$cache/adk
	;;
*)
	echo "usage: mcp-server.sh [adk]" >&2
	exit 2
	;;
esac
bin=$cache/node_modules/.bin/mcp-server-everything
manifest=$cache/node_modules/$pkg/package.json

installed() {
	[ -x "$bin" ] && [ -f "$manifest" ] &&
		node -e 'process.exit(require(process.argv[1]).version === process.argv[2] ? 0 : 1)' "$manifest" "$version"
}

if ! installed; then
	if ! command -v npm >/dev/null 2>&1; then
		echo "mcp-server.sh: npm is not installed (apt-get install nodejs npm)" >&2
		exit 1
	fi
	echo "mcp-server.sh: installing $pkg@$version into $cache" >&2
	mkdir -p "$cache"
	npm install --prefix "$cache" --no-audit --no-fund --loglevel=error "$pkg@$version" >&2
	installed || { echo "mcp-server.sh: $bin is missing after the install" >&2; exit 1; }
fi
echo "$bin"
