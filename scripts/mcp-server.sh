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

. "$(dirname "$0")/npm-install.sh"
npm_install_once mcp-server.sh "$cache" "$pkg" "$version"
[ -x "$bin" ] || { echo "mcp-server.sh: $bin is missing after the install" >&2; exit 1; }
echo "$bin"
