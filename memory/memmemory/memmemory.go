// Package memmemory is an in-memory memory store with word-based matching.
// It keeps everything in process memory and loses it on exit; use it for
// tests, examples and short-lived programs.
//
// # Matching
//
// Texts and queries are split into words by [memory.Words] (runs of Unicode
// letters and digits, lower-cased). An entry matches when it contains at least one
// query word; its score is the number of distinct query words it contains.
// Results are ordered by score, then newest first, then by id. A search
// scans every memory of the (app, user), so its cost grows with the number
// of memories of that user; use a database-backed store for large volumes.
package memmemory

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/memory"
)

// Store is an in-memory memory.Store. It is safe for concurrent use.
type Store struct {
	mu     sync.RWMutex
	closed bool
	// users maps (app, user) to that user's memories by session id, then
	// by entry id.
	users map[[2]string]map[string]map[string]*stored
}

type stored struct {
	entry memory.Entry // a private copy, never handed out
	words map[string]struct{}
}

// New returns an empty store.
func New() *Store { return &Store{users: map[[2]string]map[string]map[string]*stored{}} }

// NewService returns a memory service over a new in-memory store.
func NewService() *memory.Service { return memory.NewService(New()) }

var errClosed = errors.New("memmemory: store is closed")

func (s *Store) check(ctx context.Context) error {
	if s.closed {
		return errClosed
	}
	return ctx.Err()
}

func cloneEntry(e memory.Entry) memory.Entry {
	e.Content = event.CloneContent(e.Content)
	return e
}

// records copies and tokenizes entries, one record per id.
func records(entries []memory.Entry) map[string]*stored {
	recs := make(map[string]*stored, len(entries))
	for _, e := range entries {
		c := cloneEntry(e)
		words := map[string]struct{}{}
		for _, w := range memory.Words(c.Text()) {
			words[w] = struct{}{}
		}
		recs[c.ID] = &stored{entry: c, words: words}
	}
	return recs
}

// Replace implements memory.Store.
func (s *Store) Replace(ctx context.Context, app, user, sessionID string, entries []memory.Entry) error {
	recs := records(entries) // outside the lock
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	k := [2]string{app, user}
	sessions := s.users[k]
	if len(recs) == 0 {
		delete(sessions, sessionID)
		if len(sessions) == 0 {
			delete(s.users, k)
		}
		return nil
	}
	s.sessionsOf(k)[sessionID] = recs
	return nil
}

// sessionsOf returns the memories of the user k by session, making the
// map if the user has none. The caller holds the lock.
func (s *Store) sessionsOf(k [2]string) map[string]map[string]*stored {
	sessions := s.users[k]
	if sessions == nil {
		sessions = map[string]map[string]*stored{}
		s.users[k] = sessions
	}
	return sessions
}

// Upsert implements memory.Store.
func (s *Store) Upsert(ctx context.Context, app, user, sessionID string, entries []memory.Entry) error {
	recs := records(entries) // outside the lock
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	if len(recs) == 0 {
		return nil
	}
	sessions := s.sessionsOf([2]string{app, user})
	have := sessions[sessionID]
	if have == nil {
		sessions[sessionID] = recs
		return nil
	}
	for id, r := range recs {
		have[id] = r
	}
	return nil
}

// Search implements memory.Store.
func (s *Store) Search(ctx context.Context, app, user, query string, limit int) ([]memory.Entry, error) {
	q := map[string]struct{}{}
	for _, w := range memory.Words(query) {
		q[w] = struct{}{}
	}
	if len(q) == 0 || limit <= 0 {
		return nil, nil
	}
	type hit struct {
		score int
		rec   *stored
	}
	var hits []hit
	s.mu.RLock()
	if err := s.check(ctx); err != nil {
		s.mu.RUnlock()
		return nil, err
	}
	for _, recs := range s.users[[2]string{app, user}] {
		for _, r := range recs {
			score := 0
			for w := range q {
				if _, ok := r.words[w]; ok {
					score++
				}
			}
			if score > 0 {
				hits = append(hits, hit{score, r})
			}
		}
	}
	s.mu.RUnlock()
	// Stored records are never modified once stored (Upsert replaces them
	// whole), so they can be read and copied outside the lock.
	slices.SortFunc(hits, func(a, b hit) int {
		return cmp.Or(
			cmp.Compare(b.score, a.score),
			b.rec.entry.Timestamp.Compare(a.rec.entry.Timestamp),
			cmp.Compare(a.rec.entry.SessionID, b.rec.entry.SessionID),
			cmp.Compare(a.rec.entry.ID, b.rec.entry.ID),
		)
	})
	hits = hits[:min(limit, len(hits))]
	out := make([]memory.Entry, len(hits))
	for i, h := range hits {
		out[i] = cloneEntry(h.rec.entry)
	}
	return out, nil
}

// Close implements memory.Store. Later calls fail.
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.users = map[[2]string]map[string]map[string]*stored{}
	s.mu.Unlock()
	return nil
}
