package sqlsession

import (
	"context"
	"strconv"
	"strings"
)

// AppendCommits returns how many append transactions s has committed (or
// tried to) on its pinned connection.
func AppendCommits(s *Store) int64 { return s.appends.commits.Load() }

// QueuedAppends returns how many appends wait for their turn on s.
func QueuedAppends(s *Store) int {
	s.appends.mu.Lock()
	defer s.appends.mu.Unlock()
	return len(s.appends.waiting)
}

// HoldWrites takes the write connection of s (a SQLite file) until the
// returned function is called; with closing set, that function first shuts
// the connection as Close does, so that the writers waiting meet a closed
// store.
func HoldWrites(s *Store) func(closing bool) {
	if err := s.pin.lock(context.Background()); err != nil {
		panic(err)
	}
	return func(closing bool) {
		if closing {
			s.pin.release(false)
			s.pin.closed = true
		}
		s.pin.unlock()
	}
}

// ExecWrite runs a statement on the write connection of s (a SQLite file).
func ExecWrite(s *Store, query string) error {
	ctx := context.Background()
	if err := s.pin.lock(ctx); err != nil {
		return err
	}
	defer s.pin.unlock()
	_, err := s.pin.conn.ExecContext(ctx, query)
	return err
}

// AppendBusy reports whether an append holds the turn on s.
func AppendBusy(s *Store) bool {
	s.appends.mu.Lock()
	defer s.appends.mu.Unlock()
	return s.appends.busy
}

// OwnerToken returns a SQLite lease owner token naming process pid of this
// machine started at start, or of another machine if elsewhere is set.
func OwnerToken(pid int, start string, elsewhere bool) string {
	host := ownerSuffix()[1:]
	host = host[:strings.IndexByte(host, '/')]
	if elsewhere {
		host = "0000000000000000"
	}
	return "feedface@" + host + "/" + strconv.Itoa(pid) + "/" + start
}

// ProcessStart returns the start time of process pid as lease owners name it.
func ProcessStart(pid int) string { return processStart(pid) }
