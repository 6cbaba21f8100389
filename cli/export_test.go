package cli

import "time"

// SetConnTimeouts sets the HTTP server's connection limits for a test and
// returns a function that restores them.
func SetConnTimeouts(header, idle time.Duration) (restore func()) {
	h, i := readHeaderTimeout, idleTimeout
	readHeaderTimeout, idleTimeout = header, idle
	return func() { readHeaderTimeout, idleTimeout = h, i }
}
