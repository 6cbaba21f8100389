// Package session keeps conversations: sessions, their scoped state and
// their append-only event logs.
//
// [Service] is the type users and the runtime call. It owns every rule about
// what is stored: partial events are skipped, temp: keys are visible only in
// the live session, app: and user: keys are shared across sessions, a nil
// value deletes a key, events get ids, timestamps and sequence numbers, and a
// write through a stale copy of a session fails with [ErrStale] without
// changing anything. Backends implement the narrow [Store] interface and only
// store records; memsession and sqlsession are two of them.
//
// # State scopes
//
//	prefix  scope                                  stored
//	(none)  this session                           with the session
//	user:   every session of this user in this app per (app, user)
//	app:    every session of every user of the app per app
//	temp:   this invocation only                   never
//
// A session's State is the merged view: its own keys plus the user: and app:
// keys, with their prefixes.
package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"time"

	"github.com/loomkit/loom/event"
)

// Errors returned by the service and by stores.
var (
	// ErrNotFound reports that a session does not exist.
	ErrNotFound = errors.New("session not found")
	// ErrAlreadyExists reports that a session id is taken.
	ErrAlreadyExists = errors.New("session already exists")
	// ErrStale reports an append through a copy of a session that another
	// writer has changed since it was loaded.
	ErrStale = errors.New("session is stale: it was modified since it was loaded")
	// ErrInvalid reports a malformed request, such as an empty app name.
	ErrInvalid = errors.New("invalid session request")
)

// Session is a conversation: its identity, merged state and events. A
// Session value returned by the service is the caller's own copy; it is safe
// for concurrent use, and appending through [Service.AppendEvent] updates it
// in place.
type Session struct {
	key Key

	appendMu sync.Mutex // serializes appends through this copy

	mu      sync.RWMutex
	state   map[string]any
	events  []*event.Event
	seq     int64
	updated time.Time
	created time.Time
}

func newSession(r *Record) *Session {
	return &Session{key: r.Key, state: mergeState(r), events: r.Events, seq: r.Seq, updated: r.UpdateTime, created: r.CreateTime}
}

// ID returns the session id.
func (s *Session) ID() string { return s.key.SessionID }

// AppName returns the app the session belongs to.
func (s *Session) AppName() string { return s.key.AppName }

// UserID returns the user the session belongs to.
func (s *Session) UserID() string { return s.key.UserID }

// Key returns the session's key.
func (s *Session) Key() Key { return s.key }

// Get returns a copy of the value of a state key (with its prefix, e.g.
// "user:name") in the merged view.
func (s *Session) Get(key string) (any, bool) {
	s.mu.RLock()
	v, ok := s.state[key]
	s.mu.RUnlock()
	return event.CloneValue(v), ok
}

// SetLocal records an uncommitted state value in this copy of the session
// only (a nil value hides the key). Nothing is stored: the runtime uses it so
// that code later in an invocation reads a value a tool or callback has
// staged but not yet committed. The next Refresh discards it.
func (s *Session) SetLocal(key string, value any) {
	s.mu.Lock()
	if value == nil {
		delete(s.state, key)
	} else {
		s.state[key] = event.CloneValue(value)
	}
	s.mu.Unlock()
}

// State returns a copy of the merged state.
func (s *Session) State() map[string]any {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return event.CloneMap(s.state)
}

// Len returns the number of events in the session.
func (s *Session) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.events)
}

// At returns the i-th event (0 is the oldest), or nil if out of range.
func (s *Session) At(i int) *event.Event {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if i < 0 || i >= len(s.events) {
		return nil
	}
	return s.events[i]
}

// Events returns the session's events, oldest first. The slice is the
// caller's; the events are shared and must not be modified.
func (s *Session) Events() []*event.Event { return s.EventsFrom(0) }

// EventsFrom returns the events from index i on (i may equal Len). It costs
// time proportional to the number of events returned.
func (s *Session) EventsFrom(i int) []*event.Event {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if i < 0 || i > len(s.events) {
		return nil
	}
	return append([]*event.Event(nil), s.events[i:]...)
}

// LastUpdateTime returns the time of the last change to the session.
func (s *Session) LastUpdateTime() time.Time {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.updated
}

// MarshalJSON encodes the session in ADK's wire format:
// {"id","appName","userId","state","events","lastUpdateTime"}.
func (s *Session) MarshalJSON() ([]byte, error) {
	s.mu.RLock()
	w := struct {
		ID             string         `json:"id"`
		AppName        string         `json:"appName"`
		UserID         string         `json:"userId"`
		State          map[string]any `json:"state"`
		Events         []*event.Event `json:"events"`
		LastUpdateTime event.Seconds  `json:"lastUpdateTime"`
	}{s.key.SessionID, s.key.AppName, s.key.UserID, s.state, s.events, event.Seconds(s.updated)}
	if w.Events == nil {
		w.Events = []*event.Event{}
	}
	defer s.mu.RUnlock()
	return json.Marshal(&w)
}

// Options configures a Service. The zero value is ready to use.
type Options struct {
	// Now returns the current time (default: event.Now).
	Now func() time.Time
	// NewID generates session and event ids (default: event.NewID).
	NewID func() string
}

// Service manages sessions over a Store. It is safe for concurrent use.
type Service struct {
	store Store
	now   func() time.Time
	newID func() string
	gate  gate // contended appends and refreshes (gate.go)
}

// NewService returns a service over store. opts may be nil.
func NewService(store Store, opts *Options) *Service {
	s := &Service{store: store, now: event.Now, newID: event.NewID}
	s.gate.seed = maphash.MakeSeed()
	if opts != nil {
		if opts.Now != nil {
			s.now = opts.Now
		}
		if opts.NewID != nil {
			s.newID = opts.NewID
		}
	}
	return s
}

// Store returns the service's storage driver.
func (s *Service) Store() Store { return s.store }

// Close closes the store.
func (s *Service) Close() error { return s.store.Close() }

// Lease makes the caller the only writer of a session across processes, for
// stores that several processes share (see [Leaser]): it waits, until ctx is
// done, while another holder has the session, and returns the function that
// releases it. For a store without leases (a single-process store such as
// memsession) it returns at once and release does nothing.
//
// The runner leases a session for each invocation, before it stores the
// user message; a caller appending on its own may do the same around a
// read-modify-append to avoid ErrStale from other processes.
func (s *Service) Lease(ctx context.Context, key Key) (release func(), err error) {
	if err := validate(key.AppName, key.UserID); err != nil {
		return nil, err
	}
	if key.SessionID == "" {
		return nil, fmt.Errorf("%w: session id is required", ErrInvalid)
	}
	l, ok := s.store.(Leaser)
	if !ok {
		return noRelease, nil
	}
	release, err = l.Lease(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("session: lease %s: %w", key.SessionID, err)
	}
	return release, nil
}

// Leases reports whether the service's store has cross-process leases.
func (s *Service) Leases() bool {
	_, ok := s.store.(Leaser)
	return ok
}

func noRelease() {}

func validate(app, user string) error {
	if strings.TrimSpace(app) == "" {
		return fmt.Errorf("%w: app name is required", ErrInvalid)
	}
	if strings.TrimSpace(user) == "" {
		return fmt.Errorf("%w: user id is required", ErrInvalid)
	}
	return nil
}

// Create creates a session. If key.SessionID is empty an id is generated.
// The initial state is split by scope: app: and user: keys update those
// scopes, temp: keys are dropped. Creating a session whose id exists fails
// with an error wrapping ErrAlreadyExists.
func (s *Service) Create(ctx context.Context, key Key, state map[string]any) (*Session, error) {
	if err := validate(key.AppName, key.UserID); err != nil {
		return nil, err
	}
	if key.SessionID == "" {
		key.SessionID = s.newID()
	}
	d, _ := splitDelta(state)
	for k, v := range d.Session {
		if v == nil {
			delete(d.Session, k)
		}
	}
	now := s.now()
	rec := &Record{Key: key, State: d.Session, CreateTime: now, UpdateTime: now}
	if err := s.store.CreateSession(ctx, rec, Delta{App: d.App, User: d.User}); err != nil {
		return nil, fmt.Errorf("session: create %s: %w", key.SessionID, err)
	}
	// Read back so the merged view includes existing app and user state.
	return s.Get(ctx, key, nil)
}

// GetOptions selects the events a Get returns. The zero value returns all.
type GetOptions struct {
	// NoEvents returns the session without events.
	NoEvents bool
	// NumRecentEvents, when positive, returns only the most recent events.
	NumRecentEvents int
	// After, when set, returns only events at or after this time.
	After time.Time
}

// Get loads a session. It fails with an error wrapping ErrNotFound if the
// session does not exist. opts may be nil.
func (s *Service) Get(ctx context.Context, key Key, opts *GetOptions) (*Session, error) {
	if err := validate(key.AppName, key.UserID); err != nil {
		return nil, err
	}
	if key.SessionID == "" {
		return nil, fmt.Errorf("%w: session id is required", ErrInvalid)
	}
	var w Window
	if opts != nil {
		w = Window{None: opts.NoEvents, Recent: opts.NumRecentEvents, After: opts.After}
	}
	rec, err := s.store.GetSession(ctx, key, w)
	if err != nil {
		return nil, fmt.Errorf("session: get %s: %w", key.SessionID, err)
	}
	return newSession(rec), nil
}

// ListOptions pages through sessions. The zero value returns the first page
// of the default size.
type ListOptions struct {
	// PageSize is the maximum number of sessions returned (default 100,
	// maximum 1000).
	PageSize int
	// PageToken continues a previous listing.
	PageToken string
}

// ListResult is one page of sessions.
type ListResult struct {
	// Sessions carry their merged state but no events.
	Sessions []*Session
	// NextPageToken continues the listing; empty on the last page.
	NextPageToken string
}

// List returns the sessions of a user in an app (of every user when user is
// ""), without events, one page at a time.
func (s *Service) List(ctx context.Context, app, user string, opts *ListOptions) (*ListResult, error) {
	if strings.TrimSpace(app) == "" {
		return nil, fmt.Errorf("%w: app name is required", ErrInvalid)
	}
	size := 100
	var after Key
	if opts != nil {
		if opts.PageSize > 0 {
			size = min(opts.PageSize, 1000)
		}
		if opts.PageToken != "" {
			u, id, ok := strings.Cut(opts.PageToken, "\x00")
			if !ok {
				return nil, fmt.Errorf("%w: bad page token", ErrInvalid)
			}
			after = Key{AppName: app, UserID: u, SessionID: id}
		}
	}
	recs, err := s.store.ListSessions(ctx, app, user, after, size+1)
	if err != nil {
		return nil, fmt.Errorf("session: list: %w", err)
	}
	res := &ListResult{}
	if len(recs) > size {
		recs = recs[:size]
		last := recs[size-1].Key
		res.NextPageToken = last.UserID + "\x00" + last.SessionID
	}
	res.Sessions = make([]*Session, len(recs))
	for i, r := range recs {
		r.Events = nil
		res.Sessions[i] = newSession(r)
	}
	return res, nil
}

// Delete removes a session and its events. Deleting a missing session is
// not an error.
func (s *Service) Delete(ctx context.Context, key Key) error {
	if err := validate(key.AppName, key.UserID); err != nil {
		return err
	}
	if err := s.store.DeleteSession(ctx, key); err != nil {
		return fmt.Errorf("session: delete %s: %w", key.SessionID, err)
	}
	s.gate.forget(key)
	return nil
}

// AppendEvent commits ev to the session: it assigns an id and timestamp if
// missing, stores the event with its state delta split by scope (temp: keys
// stripped from what is stored), and then updates sess in place: the event is
// appended and the whole delta, temp: keys included, is applied to its state.
// On success ev itself holds the committed form (id, timestamp, delta without
// temp: keys).
//
// A partial event is not stored and changes nothing. If another writer has
// appended to the session since sess was loaded, AppendEvent fails with an
// error wrapping ErrStale. On any error, storage, sess and ev are unchanged.
func (s *Service) AppendEvent(ctx context.Context, sess *Session, ev *event.Event) error {
	if ev == nil {
		return fmt.Errorf("%w: nil event", ErrInvalid)
	}
	if ev.Partial {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("session: append event: %w", err)
	}
	// Fill in the committed form in place (no copy of the event on this
	// hot path) and put the caller's values back if the store fails.
	origID, origTime, fullDelta := ev.ID, ev.Timestamp, ev.Actions.StateDelta
	if ev.ID == "" {
		ev.ID = s.newID()
	}
	if ev.Timestamp.IsZero() {
		ev.Timestamp = s.now()
	}
	d, stored := splitDelta(fullDelta)
	ev.Actions.StateDelta = stored

	sess.appendMu.Lock()
	defer sess.appendMu.Unlock()
	sess.mu.RLock()
	seq, created := sess.seq, unixNanos(sess.created)
	sess.mu.RUnlock()
	// One append of the session at a time from this service, and none
	// through a copy known to be stale (gate.go).
	e := s.gate.enter(sess.key)
	var err error
	select {
	case e.turn <- struct{}{}:
		if e.behind(seq, created) {
			err = ErrStale
		} else if err = s.store.AppendEvent(ctx, sess.key, seq, ev, d); err == nil {
			e.committed(seq+1, created)
		}
		<-e.turn
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.gate.leave(sess.key, e)
	if err != nil {
		id := ev.ID
		ev.ID, ev.Timestamp, ev.Actions.StateDelta = origID, origTime, fullDelta
		return fmt.Errorf("session: append event %s: %w", id, err)
	}
	sess.mu.Lock()
	sess.events = append(sess.events, ev)
	ApplyDelta(sess.state, fullDelta)
	sess.seq = seq + 1
	sess.updated = ev.Timestamp
	sess.mu.Unlock()
	return nil
}

// Refresh brings sess up to date with storage: it loads the events other
// writers appended since sess was loaded (or last refreshed) and replaces its
// state with the stored merged state, which also discards temp: keys. Its
// cost is proportional to the number of new events, not to the length of the
// session, which lets a long-lived copy of a session be reused across
// invocations. If the session was deleted, Refresh fails with an error
// wrapping ErrNotFound; if it was recreated, sess is reloaded in full.
func (s *Service) Refresh(ctx context.Context, sess *Session) error {
	sess.appendMu.Lock()
	defer sess.appendMu.Unlock()
	sess.mu.RLock()
	seq, created := sess.seq, sess.created
	sess.mu.RUnlock()
	rec, evs, err := s.readAfter(ctx, sess.key, seq)
	if err != nil {
		return fmt.Errorf("session: refresh %s: %w", sess.key.SessionID, err)
	}
	if rec.Seq < seq || !rec.CreateTime.Equal(created) {
		if rec, err = s.store.GetSession(ctx, sess.key, Window{}); err != nil {
			return fmt.Errorf("session: refresh %s: %w", sess.key.SessionID, err)
		}
		fresh := newSession(rec)
		sess.mu.Lock()
		sess.state, sess.events, sess.seq, sess.updated, sess.created = fresh.state, fresh.events, fresh.seq, fresh.updated, fresh.created
		sess.mu.Unlock()
		s.gate.observed(sess.key, rec.Seq, unixNanos(rec.CreateTime))
		return nil
	}
	s.gate.observed(sess.key, rec.Seq, unixNanos(rec.CreateTime))
	sess.mu.Lock()
	sess.state = mergeState(rec)
	sess.events = append(sess.events, evs...)
	sess.seq = rec.Seq
	sess.updated = rec.UpdateTime
	sess.mu.Unlock()
	return nil
}

// unixNanos is t in Unix nanoseconds, 0 for the zero time.
func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
