// Package memsession is an in-memory session store. It keeps everything in
// process memory and loses it on exit; use it for tests, examples and
// short-lived programs.
//
// Events are kept encoded, in the JSON the SQL stores write: one
// pointer-free byte slice per event, a fraction of the size of the decoded
// event, which the garbage collector does not scan. A read decodes the
// events it returns, so what a reader gets back is what a SQL store would
// give it (numbers in the state deltas of events read back are float64).
//
// Besides its events a session holds little: its state (no map while it
// is empty) and, per event, its timestamp and a hash of its id, all in
// one pointer-free slice.
package memsession

import (
	"cmp"
	"context"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/btree"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
)

// Store is an in-memory session.Store. It is safe for concurrent use.
type Store struct {
	mu     sync.RWMutex
	closed bool
	// apps holds each app's sessions sorted by (UserID, SessionID), so
	// that finding, creating or deleting a session costs a logarithm of
	// their number and a page of a listing a search and its own size. It
	// is the only index of sessions: a session costs one entry, its user
	// and session ids and a pointer to its record.
	apps map[string]*btree.BTreeG[entry]
	app  map[string]map[string]any
	user map[[2]string]map[string]any
	seed maphash.Seed // of the hashes of event ids
}

type record struct {
	state  map[string]any // nil while empty
	events [][]byte       // the encoded events, in order
	meta   []eventMeta    // by event
	// idSet holds the id hashes of meta once the session has more than
	// linearIDs events; shorter sessions scan meta.
	idSet   map[uint64]struct{}
	created time.Time
	updated time.Time
}

// entry is a session of an app, in the app's B-tree.
type entry struct {
	user, id string
	r        *record
}

// eventMeta is what a session keeps of an event besides its encoding.
type eventMeta struct {
	time int64  // the timestamp (Unix nanoseconds), for time windows
	id   uint64 // the hash of the id, for the duplicate check
}

// linearIDs is the number of events up to which the duplicate check of an
// append scans the session's id hashes rather than a set of them.
const linearIDs = 32

// New returns an empty store.
func New() *Store {
	return &Store{
		apps: map[string]*btree.BTreeG[entry]{},
		app:  map[string]map[string]any{},
		user: map[[2]string]map[string]any{},
		seed: maphash.MakeSeed(),
	}
}

// NewService returns a session service over a new in-memory store.
func NewService() *session.Service { return session.NewService(New(), nil) }

var errClosed = fmt.Errorf("memsession: store is closed")

func (s *Store) check(ctx context.Context) error {
	if s.closed {
		return errClosed
	}
	return ctx.Err()
}

// CreateSession implements session.Store.
func (s *Store) CreateSession(ctx context.Context, rec *session.Record, d session.Delta) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	if s.lookup(rec.Key) != nil {
		return session.ErrAlreadyExists
	}
	r := &record{created: rec.CreateTime, updated: rec.UpdateTime}
	r.applyState(rec.State)
	// The store keeps its own copy of every key string it holds: one the
	// caller passed may be a piece of a larger string (a request's path, a
	// batch of generated ids) that it would keep alive with the session.
	sessions := s.apps[rec.Key.AppName]
	if sessions == nil {
		sessions = btree.NewG(orderDegree, lessEntry)
		s.apps[strings.Clone(rec.Key.AppName)] = sessions
	}
	// The user's sessions are adjacent in the order: the new one shares
	// the user id of the first of them.
	user := rec.Key.UserID
	shared := false
	sessions.AscendGreaterOrEqual(entry{user: user}, func(e entry) bool {
		if e.user == user {
			user, shared = e.user, true
		}
		return false
	})
	if !shared {
		user = strings.Clone(user)
	}
	sessions.ReplaceOrInsert(entry{user: user, id: strings.Clone(rec.Key.SessionID), r: r})
	s.applyShared(rec.Key, d)
	return nil
}

// lookup returns the session of key, nil if there is none.
func (s *Store) lookup(key session.Key) *record {
	sessions := s.apps[key.AppName]
	if sessions == nil {
		return nil
	}
	e, _ := sessions.Get(entry{user: key.UserID, id: key.SessionID})
	return e.r
}

func (s *Store) applyShared(key session.Key, d session.Delta) {
	if len(d.App) > 0 {
		m := s.app[key.AppName]
		if m == nil {
			m = map[string]any{}
			s.app[strings.Clone(key.AppName)] = m
		}
		session.ApplyDelta(m, d.App)
	}
	if len(d.User) > 0 {
		uk := [2]string{key.AppName, key.UserID}
		m := s.user[uk]
		if m == nil {
			m = map[string]any{}
			s.user[[2]string{strings.Clone(key.AppName), strings.Clone(key.UserID)}] = m
		}
		session.ApplyDelta(m, d.User)
	}
}

func (s *Store) fill(key session.Key, r *record) *session.Record {
	return &session.Record{
		Key:        key,
		State:      cloneState(r.state),
		AppState:   cloneState(s.app[key.AppName]),
		UserState:  cloneState(s.user[[2]string{key.AppName, key.UserID}]),
		Seq:        int64(len(r.events)),
		CreateTime: r.created,
		UpdateTime: r.updated,
	}
}

// cloneState copies a state map for a record, nil for an empty one.
func cloneState(m map[string]any) map[string]any {
	if len(m) == 0 {
		return nil
	}
	return event.CloneMap(m)
}

// GetSession implements session.Store. Its cost is proportional to the
// number of events selected, not to the length of the session.
func (s *Store) GetSession(ctx context.Context, key session.Key, w session.Window) (*session.Record, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	r := s.lookup(key)
	if r == nil {
		return nil, session.ErrNotFound
	}
	out := s.fill(key, r)
	if w.None {
		return out, nil
	}
	lo := 0
	if w.AfterSeq > 0 {
		lo = int(min(w.AfterSeq, int64(len(r.events))))
	}
	if w.Recent > 0 {
		lo = max(lo, len(r.events)-w.Recent)
	}
	if !w.After.IsZero() {
		// The service keeps timestamps in commit order; scan back from
		// the end so the cost follows the size of the result.
		after := w.After.UnixNano()
		i := len(r.meta)
		for i > lo && r.meta[i-1].time >= after {
			i--
		}
		lo = i
	}
	if w.Encoded {
		// The stored bytes are never changed, and the clipped slice
		// cannot be appended to in place.
		out.Raw, out.RawShared = slices.Clip(r.events[lo:]), true
		return out, nil
	}
	evs, err := decode(r.events[lo:])
	if err != nil {
		return nil, err
	}
	out.Events = evs
	return out, nil
}

// decode decodes stored events, all in one allocation.
func decode(data [][]byte) ([]*event.Event, error) {
	if len(data) == 0 {
		return []*event.Event{}, nil
	}
	var dec event.Decoder
	store := make([]event.Event, len(data))
	evs := make([]*event.Event, len(data))
	for i, b := range data {
		if err := dec.Decode(b, &store[i]); err != nil {
			return nil, fmt.Errorf("memsession: decode event: %w", err)
		}
		evs[i] = &store[i]
	}
	return evs, nil
}

// ListSessions implements session.Store.
func (s *Store) ListSessions(ctx context.Context, app, user string, after session.Key, limit int) ([]*session.Record, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	sessions := s.apps[app]
	if sessions == nil || limit <= 0 {
		return nil, nil
	}
	start := entry{user: user}
	if after.SessionID != "" && (user == "" || after.UserID >= user) {
		start = entry{user: after.UserID, id: after.SessionID}
	}
	var out []*session.Record
	sessions.AscendGreaterOrEqual(start, func(e entry) bool {
		if e.user == start.user && e.id == start.id {
			return true // the page starts strictly after it
		}
		if user != "" && e.user != user {
			return false // the user's sessions are a contiguous run of the order
		}
		out = append(out, s.fill(session.Key{AppName: app, UserID: e.user, SessionID: e.id}, e.r))
		return len(out) < limit
	})
	return out, nil
}

// orderDegree is the degree of the B-trees of session keys.
const orderDegree = 16

func lessEntry(a, b entry) bool {
	return cmp.Or(cmp.Compare(a.user, b.user), cmp.Compare(a.id, b.id)) < 0
}

// DeleteSession implements session.Store.
func (s *Store) DeleteSession(ctx context.Context, key session.Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	if sessions := s.apps[key.AppName]; sessions != nil {
		sessions.Delete(entry{user: key.UserID, id: key.SessionID})
		if sessions.Len() == 0 {
			delete(s.apps, key.AppName)
		}
	}
	return nil
}

// AppendEvent implements session.Store.
func (s *Store) AppendEvent(ctx context.Context, key session.Key, created time.Time, seq int64, ev *event.Event, d session.Delta) error {
	stored, err := ev.MarshalStored() // outside the lock: it is the costly part
	if err != nil {
		return fmt.Errorf("%w: encode event: %w", session.ErrInvalid, err)
	}
	return s.AppendEncoded(ctx, key, created, seq, ev, stored, d)
}

// AppendEncoded implements session.EncodedAppender: stored, the encoding of
// ev, is kept as the event, shared with the session that appends it.
func (s *Store) AppendEncoded(ctx context.Context, key session.Key, created time.Time, seq int64, ev *event.Event, stored []byte, d session.Delta) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	r := s.lookup(key)
	if r == nil {
		return session.ErrNotFound
	}
	if int64(len(r.events)) != seq || !r.created.Equal(created) {
		return session.ErrStale
	}
	h := maphash.String(s.seed, ev.ID)
	dup, err := r.holds(ev.ID, h)
	if err != nil {
		return err
	}
	if dup {
		return fmt.Errorf("%w: event %s", session.ErrAlreadyExists, ev.ID)
	}
	if r.events == nil {
		// An invocation appends a few events (the user's message, a call,
		// its response, a reply): a new session starts with room for them.
		r.events, r.meta = make([][]byte, 0, 4), make([]eventMeta, 0, 4)
	}
	r.events = append(r.events, stored)
	r.meta = append(r.meta, eventMeta{time: ev.Timestamp.UnixNano(), id: h})
	switch {
	case r.idSet != nil:
		r.idSet[h] = struct{}{}
	case len(r.meta) > linearIDs:
		r.idSet = make(map[uint64]struct{}, 2*len(r.meta))
		for _, m := range r.meta {
			r.idSet[m.id] = struct{}{}
		}
	}
	r.applyState(d.Session)
	s.applyShared(key, d)
	r.updated = ev.Timestamp
	return nil
}

// applyState applies a session-scoped delta, making the state map when
// it sets a first key and dropping it when it removes the last one.
func (r *record) applyState(delta map[string]any) {
	if r.state == nil {
		sets := 0
		for _, v := range delta {
			if v != nil {
				sets++
			}
		}
		if sets == 0 {
			return
		}
		r.state = make(map[string]any, sets)
	}
	session.ApplyDelta(r.state, delta)
	if len(r.state) == 0 {
		r.state = nil
	}
}

// holds reports whether the session holds an event with the given id,
// whose hash is h. Only a hash found in the session costs more than a
// lookup: the events with that hash are decoded to compare their ids.
func (r *record) holds(id string, h uint64) (bool, error) {
	if r.idSet != nil {
		if _, ok := r.idSet[h]; !ok {
			return false, nil
		}
	}
	var dec *event.Decoder // only for a hash that matches
	for i, m := range r.meta {
		if m.id != h {
			continue
		}
		if dec == nil {
			dec = new(event.Decoder)
		}
		var ev event.Event
		if err := dec.Decode(r.events[i], &ev); err != nil {
			return false, fmt.Errorf("memsession: decode event: %w", err)
		}
		if ev.ID == id {
			return true, nil
		}
	}
	return false, nil
}

// Close implements session.Store. Later calls fail.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}
