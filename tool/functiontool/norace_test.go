//go:build !race

package functiontool

// raceEnabled reports whether the race detector, which changes what
// escapes to the heap, is on.
const raceEnabled = false
