// Package bench holds Loom's fixed benchmark scenarios S1 to S11 as Go
// benchmarks (in its test files), using only the public API, and
// BenchmarkS1Floor, a hand-written loop of S1's essential work with no
// framework, against which S1 is reported as a ratio:
//
//	go test ./bench -run '^$' -bench 'S1$' -benchtime 2000x -count 6
//
// S6 is a 10-node graph workflow (package agent/graph) with a fan-out of
// four, against a one-node workflow for the per-node overhead:
//
//	go test ./bench -run '^$' -bench 'S6' -benchtime 2000x -count 6
//
// Floors run in the same process and run as their scenario, and each
// benchmark reports its ratio: S4's appends against a bare SQLite append
// loop, S5's server CPU per request against in-process S1 and a bare
// net/http SSE handler, telemetry against plain S1:
//
//	go test ./bench -run '^$' -bench 'S4Floor|S5SSEFloor|S1TelemetryCost' -benchtime 1x
//
// S7 (memory at equal work, from /proc/PID/smaps_rollup), S8 (latency to
// the first SSE byte and the final event), S9 (recovery after SIGKILL on
// SQLite) and S10 (bytes written per 100 turns on SQLite):
//
//	go test ./bench -run '^$' -bench 'S7|S8|S9|S10' -benchtime 1x
//
// TestLeakGuard builds the loom command and bounds the resident memory of
// "loom api" over 10,000 requests.
//
// startup.sh times the loom command from start to its first served request.
// See the README for each scenario's command line.
package bench
