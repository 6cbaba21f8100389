//go:build race

package session

// raceEnabled reports whether the race detector, which changes what
// escapes to the heap, is on.
const raceEnabled = true
