#!/usr/bin/env bash
# mcp-inspector.sh installs the MCP inspector's command-line client and
# prints the path of its executable.
#
# The server/mcpserver and cli tests call Loom agents served as MCP servers
# with it, a real MCP client from outside the Go world. The npm package is
# installed once into a cache directory (LOOM_MCP_CACHE, default
# $HOME/.cache/loom-mcp, shared with scripts/mcp-server.sh); later runs find
# it there and install nothing. Needs node and npm.
#
#   LOOM_MCP_INSPECTOR=$(scripts/mcp-inspector.sh); export LOOM_MCP_INSPECTOR
set -euo pipefail

version=1.0.3
pkg=@modelcontextprotocol/inspector-cli
cache=${LOOM_MCP_CACHE:-${HOME:-/tmp}/.cache/loom-mcp}
bin=$cache/node_modules/.bin/mcp-inspector-cli

. "$(dirname "$0")/npm-install.sh"
npm_install_once mcp-inspector.sh "$cache" "$pkg" "$version"
[ -x "$bin" ] || { echo "mcp-inspector.sh: $bin is missing after the install" >&2; exit 1; }
echo "$bin"
