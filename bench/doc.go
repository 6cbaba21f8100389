// Package bench holds Loom's fixed benchmark scenarios S1 to S6 as Go
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
// startup.sh times the loom command from start to its first served request.
// See the README for each scenario's command line.
package bench
