// Package bench holds Loom's fixed benchmark scenarios S1 to S5 as Go
// benchmarks (in its test files), using only the public API:
//
//	go test ./bench -run '^$' -bench 'S1$' -benchtime 2000x -count 6
//
// See the README for each scenario's command line.
package bench
