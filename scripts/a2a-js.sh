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

. "$(dirname "$0")/npm-install.sh"
npm_install_once a2a-js.sh "$cache" "$pkg" "$version" "$express"
echo "$cache/node_modules"
