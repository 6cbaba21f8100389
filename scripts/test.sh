#!/usr/bin/env bash
# test.sh runs Loom's whole test suite on a fresh machine.
#
# It installs and starts what the tests need (a local PostgreSQL server and
# Debian's Chromium, both via apt when missing, an MCP server, an MCP client
# and the A2A JavaScript SDK from the npm registry, and a Temporal development server
# built from the Go module proxy; run as root), then runs every test of the
# module under the race detector in shuffled order.
set -euo pipefail
cd "$(dirname "$0")/.."

# A Temporal development server for durable/temporal, built from its Go
# module on the first run (minutes): started first, in the background, so
# that the build overlaps the other installs.
temporal_out=$(mktemp)
scripts/temporal.sh >"$temporal_out" &
temporal_pid=$!

# PostgreSQL for the sqlsession and sqlmemory backends.
. scripts/postgres.sh
echo "test.sh: PostgreSQL at ${LOOM_TEST_POSTGRES_URL%%\?*}" >&2

# Chromium for the dev UI end-to-end test.
if [ -x scripts/chromium.sh ]; then
	LOOM_CHROMIUM=$(scripts/chromium.sh)
	export LOOM_CHROMIUM
	echo "test.sh: Chromium at $LOOM_CHROMIUM" >&2
fi

# A real MCP server (from the npm registry) for the MCP toolset tests.
LOOM_MCP_EVERYTHING=$(scripts/mcp-server.sh)
export LOOM_MCP_EVERYTHING
echo "test.sh: MCP server at $LOOM_MCP_EVERYTHING" >&2
# The older release ADK's conformance case tool/mcp_001 was recorded against.
LOOM_MCP_EVERYTHING_ADK=$(scripts/mcp-server.sh adk)
export LOOM_MCP_EVERYTHING_ADK

# A real MCP client (the MCP inspector's CLI, from the npm registry) for the
# tests of Loom agents served as MCP servers.
LOOM_MCP_INSPECTOR=$(scripts/mcp-inspector.sh)
export LOOM_MCP_INSPECTOR
echo "test.sh: MCP inspector CLI at $LOOM_MCP_INSPECTOR" >&2

# The A2A JavaScript SDK (from the npm registry) for the A2A server and
# remote agent tests, which run its client and a scripted server with node.
LOOM_A2A_JS=$(scripts/a2a-js.sh)
export LOOM_A2A_JS
echo "test.sh: A2A JavaScript SDK at $LOOM_A2A_JS" >&2
if ! wait "$temporal_pid"; then
	echo "test.sh: scripts/temporal.sh failed" >&2
	exit 1
fi
LOOM_TEMPORAL_ADDR=$(cat "$temporal_out")
rm -f "$temporal_out"
export LOOM_TEMPORAL_ADDR
echo "test.sh: Temporal at $LOOM_TEMPORAL_ADDR" >&2

# cli's TestCreateGo tidies a scaffolded module with the module proxy off;
# tidy reads the modules that the tests of Loom's dependencies need, which
# no build of Loom downloads. Fetch them now (a tidy module changes nothing).
go mod tidy -diff >/dev/null

go test -race -shuffle=on -timeout 20m "$@" ./...

# ADK's conformance suite (../shared/adk-conformance), replayed against
# Loom in process; the last line is "N passed, M failed". Every case must
# pass unless LOOM_CONFORMANCE_MIN says how many may (a local run without
# the suite says so and goes on).
if [ -d ../shared/adk-conformance/tests ]; then
	conformance_out=$(mktemp)
	go run ./cmd/loom conformance test ../shared/adk-conformance/tests | tee "$conformance_out" || true
	passed=$(tail -n 1 "$conformance_out" | sed -n 's/^\([0-9]*\) passed, [0-9]* failed$/\1/p')
	rm -f "$conformance_out"
	if [ -z "$passed" ] || [ "$passed" -lt "${LOOM_CONFORMANCE_MIN:-22}" ]; then
		echo "test.sh: ADK conformance: ${passed:-no} cases passed, ${LOOM_CONFORMANCE_MIN:-22} required" >&2
		exit 1
	fi
else
	echo "test.sh: ../shared/adk-conformance not found: the ADK conformance suite is not run" >&2
fi

# Every benchmark of bench/ once, on short rounds, so that none stops
# working unseen: each checks that it did its scenario's whole work.
LOOM_BENCH_S5_DURATION=300ms LOOM_BENCH_S5_WARMUP=100ms LOOM_SOAK=2s \
	LOOM_BENCH_S7_REQUESTS=1000 LOOM_BENCH_S7_IDLE=200 LOOM_BENCH_S8_REQUESTS=300 LOOM_BENCH_S4FLOOR_ROUNDS=1 \
	go test -run '^$' -bench . -benchtime 1x ./bench/

# Short fuzzing runs, each about 10 s here. The budgets are counts of
# inputs, not durations: a duration's deadline can fail a run that found
# nothing, when a worker is busy as it expires (a race in Go 1.26's fuzzing
# coordinator). A fuzz run takes one package at a time.
# The state fuzz target, on the memory and SQLite stores:
go test -run '^$' -fuzz FuzzAppendStateDelta -fuzztime 10000x ./session/memsession/
go test -run '^$' -fuzz FuzzAppendStateDelta -fuzztime 2000x ./session/sqlsession/
# The run request body: whatever the server accepts must leave a readable
# session.
go test -run '^$' -fuzz FuzzRunRequest -fuzztime 15000x ./server/
