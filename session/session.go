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
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"iter"
	"slices"
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
	events  []*event.Event // nil where raw holds the event (see Trim)
	raw     [][]byte       // the encoded form of events, by index, where known
	trimmed int            // events before it were looked at by Trim
	seq     int64
	updated time.Time
	created time.Time

	evBytes    int64 // estimated memory of events (see Size)
	stateBytes int64 // estimated memory of state when loaded or refreshed
	charged    int64 // memory held on the session's behalf (see Charge)
}

func newSession(r *Record) *Session {
	st := mergeState(r)
	s := &Session{key: r.Key, state: st, events: r.Events, seq: r.Seq, updated: r.UpdateTime, created: r.CreateTime,
		evBytes: eventsSize(r.Events), stateBytes: stateSize(st)}
	if r.Events == nil && len(r.Raw) > 0 {
		// The events stay encoded, as Trim leaves them, but for the
		// first, which tells this copy from a reloaded one. Bytes the
		// store shares are not this copy's: it holds references to them.
		s.raw, s.trimmed = slices.Clip(r.Raw), len(r.Raw)
		s.events = make([]*event.Event, len(r.Raw))
		s.events[0] = decodeTrimmed(new(event.Decoder), r.Raw[0])
		s.evBytes = eventSize(s.events[0]) + int64(len(r.Raw))*(8+rawSliceSize)
		if !r.RawShared {
			for _, b := range r.Raw[1:] {
				s.evBytes += int64(len(b))
			}
		}
	}
	return s
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

// Seq returns the sequence number of the session's last event when it was
// loaded or last appended to or refreshed (0: none): the length of its log,
// however few of its events this copy holds (see GetOptions).
func (s *Session) Seq() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.seq
}

// At returns the i-th event (0 is the oldest), or nil if out of range. An
// event the session keeps encoded (see Trim) is decoded anew at each call.
func (s *Session) At(i int) *event.Event {
	s.mu.RLock()
	if i < 0 || i >= len(s.events) {
		s.mu.RUnlock()
		return nil
	}
	ev := s.events[i]
	var raw []byte
	if ev == nil {
		raw = s.raw[i]
	}
	s.mu.RUnlock()
	if ev != nil {
		return ev
	}
	return decodeTrimmed(new(event.Decoder), raw)
}

// Events returns the session's events, oldest first. The slice is the
// caller's; the events are shared and must not be modified.
func (s *Session) Events() []*event.Event { return s.EventsFrom(0) }

// EventsFrom returns the events from index i on (i may equal Len). It costs
// time proportional to the number of events returned, and a decode for each
// one the session keeps encoded (see Trim).
func (s *Session) EventsFrom(i int) []*event.Event {
	s.mu.RLock()
	if i < 0 || i > len(s.events) {
		s.mu.RUnlock()
		return nil
	}
	out := append([]*event.Event(nil), s.events[i:]...)
	var raw [][]byte
	if i < len(s.raw) {
		raw = s.raw[i:]
	}
	s.mu.RUnlock()
	var d event.Decoder // one for the batch
	for j, b := range raw {
		if out[j] == nil {
			out[j] = decodeTrimmed(&d, b)
		}
	}
	return out
}

// InvocationEvents yields the events of one invocation with their indexes,
// oldest first. An event the session keeps encoded (see Trim) is decoded
// only if its encoding holds the invocation id, so finding the events of
// an invocation in a long, trimmed session costs a scan of bytes, not a
// decode of every event.
func (s *Session) InvocationEvents(invocationID string) iter.Seq2[int, *event.Event] {
	return func(yield func(int, *event.Event) bool) {
		for i, ev := range s.candidates(false, []string{invocationID}) {
			if ev.InvocationID == invocationID && !yield(i, ev) {
				return
			}
		}
	}
}

// EventsMentioning yields with their indexes, newest first, the events
// that may mention one of strs, such as function call ids: every event the
// session holds decoded, and those it keeps encoded (see Trim) whose
// encoding holds one of strs as a JSON string, decoded. Callers check the
// events they get. Finding a call among the events of a long, trimmed
// session costs a scan of bytes, not a decode of every event.
func (s *Session) EventsMentioning(strs ...string) iter.Seq2[int, *event.Event] {
	return s.candidates(true, strs)
}

// candidates yields the events of the session with their indexes, oldest
// or (reverse) newest first, but for the events kept encoded whose
// encoding holds none of strs as a JSON string. When JSON would escape a
// byte of one of strs, every event is yielded.
func (s *Session) candidates(reverse bool, strs []string) iter.Seq2[int, *event.Event] {
	return func(yield func(int, *event.Event) bool) {
		quoted := make([][]byte, 0, len(strs)) // each of strs as JSON writes it
		for _, str := range strs {
			if !plainID(str) {
				quoted = nil
				break
			}
			quoted = append(quoted, append(append(append(make([]byte, 0, len(str)+2), '"'), str...), '"'))
		}
		var d event.Decoder
		i, step := 0, 1 // oldest first, to events appended meanwhile
		if reverse {
			s.mu.RLock()
			i, step = len(s.events)-1, -1
			s.mu.RUnlock()
		}
		for ; i >= 0; i += step {
			s.mu.RLock()
			if i >= len(s.events) { // the end, or a reload shortened the log
				s.mu.RUnlock()
				if reverse {
					continue
				}
				return
			}
			ev := s.events[i]
			var raw []byte
			if ev == nil {
				raw = s.raw[i]
			}
			s.mu.RUnlock()
			if ev == nil {
				if quoted != nil && !containsAny(raw, quoted) {
					continue
				}
				ev = decodeTrimmed(&d, raw)
			}
			if !yield(i, ev) {
				return
			}
		}
	}
}

// containsAny reports whether b holds one of subs.
func containsAny(b []byte, subs [][]byte) bool {
	for _, sub := range subs {
		if bytes.Contains(b, sub) {
			return true
		}
	}
	return false
}

// plainID reports whether JSON writes id as it is, between quotes.
func plainID(id string) bool {
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return id != ""
}

// LastUpdateTime returns the time of the last change to the session.
func (s *Session) LastUpdateTime() time.Time {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.updated
}

// CreateTime returns the time the session was created. It also tells a
// session from one deleted and created again with the same key.
func (s *Session) CreateTime() time.Time {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.created
}

// MarshalJSON encodes the session in ADK's wire format:
// {"id","appName","userId","state","events","lastUpdateTime"}, each event
// in the wire form (event.Event.MarshalJSON). An event the session keeps
// encoded, in the stored form, is written as its wire form
// (event.AppendStoredAsWire) once checked to be JSON; one that is not (a
// damaged store) is written as the event decoding it gives, which says it
// is unreadable.
func (s *Session) MarshalJSON() ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	head, err := json.Marshal(struct {
		ID      string         `json:"id"`
		AppName string         `json:"appName"`
		UserID  string         `json:"userId"`
		State   map[string]any `json:"state"`
	}{s.key.SessionID, s.key.AppName, s.key.UserID, s.state})
	if err != nil {
		return nil, err
	}
	size := len(head) + 64
	for _, b := range s.raw {
		size += len(b) + 1
	}
	buf := make([]byte, 0, size)
	buf = append(append(buf, head[:len(head)-1]...), `,"events":[`...) // head without its '}'
	// The decoder is made for the first damaged event, if any.
	var d *event.Decoder
	for i, ev := range s.events {
		if i > 0 {
			buf = append(buf, ',')
		}
		if ev == nil {
			if raw := s.raw[i]; json.Valid(raw) {
				if buf, err = event.AppendStoredAsWire(buf, raw); err == nil {
					continue
				}
			}
			if d == nil {
				d = new(event.Decoder)
			}
			ev = decodeTrimmed(d, s.raw[i])
		}
		if buf, err = ev.AppendJSON(buf); err != nil {
			return nil, err
		}
	}
	buf = append(buf, `],"lastUpdateTime":`...)
	ts, err := json.Marshal(event.Seconds(s.updated))
	if err != nil {
		return nil, err
	}
	return append(append(buf, ts...), '}'), nil
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
	if err := checkKey(key, false); err != nil {
		return nil, err
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

// ErrCancelRequested is the cause of a context from WatchCancel that a
// request to cancel the session (Service.Cancel) ended.
var ErrCancelRequested = errors.New("session: cancel requested")

// Cancel asks every process sharing the service's store to cancel the
// invocations running in the session (those watching it, see WatchCancel).
// It reports false, doing nothing, for a store that carries no cancels
// between processes (see [Canceller]): there the process running an
// invocation is the one to cancel it.
func (s *Service) Cancel(ctx context.Context, key Key) (bool, error) {
	if err := checkKey(key, false); err != nil {
		return false, err
	}
	c, ok := s.store.(Canceller)
	if !ok {
		return false, nil
	}
	if err := c.RequestCancel(ctx, key); err != nil {
		return false, fmt.Errorf("session: cancel %s: %w", key.SessionID, err)
	}
	return true, nil
}

// WatchCancel returns a context derived from ctx that ends, with cause
// ErrCancelRequested, when Cancel is called for the session from any
// process after WatchCancel returns, and the function that stops watching
// (it cancels the returned context too). For a store that carries no
// cancels between processes it returns a context that ends with ctx only.
func (s *Service) WatchCancel(ctx context.Context, key Key) (context.Context, func(), error) {
	c, ok := s.store.(Canceller)
	if !ok {
		return ctx, noRelease, nil
	}
	ch, stopWatch, err := c.WatchCancel(ctx, key)
	if err != nil {
		return nil, nil, fmt.Errorf("session: watch cancels of %s: %w", key.SessionID, err)
	}
	wctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
			cancel(ErrCancelRequested)
		case <-done:
		case <-wctx.Done():
		}
	}()
	var once sync.Once
	return wctx, func() {
		once.Do(func() {
			close(done)
			stopWatch()
			cancel(context.Canceled)
		})
	}, nil
}

// Create creates a session. If key.SessionID is empty an id is generated.
// The initial state is split by scope: app: and user: keys update those
// scopes, temp: keys are dropped. Its values are stored in their JSON form
// (see [CheckValue]). Creating a session whose id exists fails with an
// error wrapping ErrAlreadyExists.
func (s *Service) Create(ctx context.Context, key Key, state map[string]any) (*Session, error) {
	if err := checkKey(key, true); err != nil {
		return nil, err
	}
	state, err := checkState(state)
	if err != nil {
		return nil, fmt.Errorf("session: create: %w", err)
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
	// After, when set, returns only events at or after this time: the
	// events after the last one, in log order, stamped before it. The
	// session's own events are in time order, so for them this is every
	// event of that time or later; an imported history keeps the times it
	// was given, in whatever order (see AppendEvent).
	After time.Time
	// AfterSeq, when positive, returns only the events after the first
	// AfterSeq of the log (an event's sequence number is its position in
	// the log, counting from 1): what was appended since the log had
	// AfterSeq events.
	AfterSeq int64
}

// Get loads a session. It fails with an error wrapping ErrNotFound if the
// session does not exist. opts may be nil.
func (s *Service) Get(ctx context.Context, key Key, opts *GetOptions) (*Session, error) {
	if err := checkKey(key, false); err != nil {
		return nil, err
	}
	w := Window{Encoded: true}
	if opts != nil {
		w = Window{None: opts.NoEvents, Recent: opts.NumRecentEvents, After: opts.After, AfterSeq: opts.AfterSeq, Encoded: true}
		// Stores compare times as int64 nanoseconds, which do not reach
		// past the range of event timestamps: a bound beyond it selects
		// no event, one before it every event.
		switch {
		case w.After.IsZero():
		case w.After.After(maxEventTime):
			w.None = true
		case !w.After.After(minEventTime):
			w.After = time.Time{}
		}
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
	if err := CheckID("app name", app); err != nil {
		return nil, err
	}
	if user != "" {
		if err := CheckID("user id", user); err != nil {
			return nil, err
		}
	}
	size := 100
	var after Key
	if opts != nil {
		if opts.PageSize > 0 {
			size = min(opts.PageSize, 1000)
		}
		if opts.PageToken != "" {
			var err error
			if after, err = decodePageToken(app, opts.PageToken); err != nil {
				return nil, err
			}
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
		res.NextPageToken = encodePageToken(last)
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
	if err := checkKey(key, false); err != nil {
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
// temp: keys). The delta's values are taken in their JSON form (see
// [CheckValue]): that is what is stored, what the committed delta holds
// and what is applied to sess.
//
// Timestamps are kept to the microsecond, the precision of the wire
// format, and the session's own events never go back in time: an event
// whose timestamp is before that of the session's last event gets the last
// event's timestamp, so that a window of events after a time holds exactly
// the events of that time or later. An imported event
// (event.Event.Imported) keeps its timestamp as given: it is history
// another runtime recorded, and rewriting it would change that record. A timestamp must lie within the range of int64
// nanoseconds since 1970 (from 1677-09-21 to 2262-04-11), which is what
// stores keep; one outside it fails with an error wrapping ErrInvalid.
//
// A partial event is not stored and changes nothing. The event and its state
// delta must hold only values state accepts (see [CheckValue]), its id must
// be a valid id (see [MaxIDLen]) not yet used in the session, or AppendEvent
// fails with an error wrapping ErrInvalid (ErrAlreadyExists for a used id).
// If another writer has appended to the session since sess was loaded, or it
// was deleted and created again, AppendEvent fails with an error wrapping
// ErrStale. On any error, storage, sess and ev are unchanged: when a store
// fails without telling whether it committed (a deadline during the commit),
// AppendEvent looks the event up before it answers.
func (s *Service) AppendEvent(ctx context.Context, sess *Session, ev *event.Event) error {
	if sess == nil {
		return fmt.Errorf("%w: nil session", ErrInvalid)
	}
	if ev == nil {
		return fmt.Errorf("%w: nil event", ErrInvalid)
	}
	if ev.Partial {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("session: append event: %w", err)
	}
	// Validate before anything is copied or written. The delta is taken
	// in its JSON form, which the store, the stored event and the live
	// session all hold.
	delta, err := checkState(ev.Actions.StateDelta)
	if err != nil {
		return fmt.Errorf("session: append event %s: %w", ev.ID, err)
	}
	foreign, err := checkEvent(ev)
	if err != nil {
		return fmt.Errorf("session: append event: %w", err)
	}
	// Fill in the committed form in place (no copy of the event on this
	// hot path) and put the caller's values back if the store fails.
	u := callerValues{ev: ev, id: ev.ID, timestamp: ev.Timestamp, delta: ev.Actions.StateDelta}
	if foreign {
		u.orig = new(event.Event)
		*u.orig = *ev
		if err := eventJSONForm(ev); err != nil {
			u.restore()
			return fmt.Errorf("session: append event %s: %w: %w", ev.ID, ErrInvalid, err)
		}
	}
	if ev.ID == "" {
		ev.ID = s.newID()
	}
	d, stored := splitDelta(delta)
	ev.Actions.StateDelta = stored

	sess.appendMu.Lock()
	defer sess.appendMu.Unlock()
	sess.mu.RLock()
	seq, created, last := sess.seq, sess.created, sess.updated
	sess.mu.RUnlock()
	s.stamp(ev, seq, last)
	// A store that keeps events encoded in memory gets them encoded here,
	// and the session keeps the same bytes for when it trims the event.
	var data []byte
	enc, _ := s.store.(EncodedAppender)
	if enc != nil {
		var err error
		if data, err = ev.MarshalStored(); err != nil {
			u.restore()
			return fmt.Errorf("session: append event: %w: encode event: %w", ErrInvalid, err)
		}
	}
	if err := s.commit(ctx, sess.key, created, seq, ev, data, d); err != nil {
		id := ev.ID
		u.restore()
		return fmt.Errorf("session: append event %s: %w", id, err)
	}
	sess.appended(ev, data, delta, seq)
	return nil
}

// callerValues are the values of an event AppendEvent fills in, as the
// caller gave them, to put back when the append fails.
type callerValues struct {
	ev        *event.Event
	id        string
	timestamp time.Time
	delta     map[string]any
	orig      *event.Event // the whole event, when its free-form values change
}

// restore puts the caller's values back into the event.
func (u callerValues) restore() {
	u.ev.ID, u.ev.Timestamp, u.ev.Actions.StateDelta = u.id, u.timestamp, u.delta
	if u.orig != nil {
		*u.ev = *u.orig
	}
}

// stamp sets the time of ev, the seq-th event of a session whose last
// event has the time last: now if it has none, in microseconds, which are
// what the wire format and the stores keep.
func (s *Service) stamp(ev *event.Event, seq int64, last time.Time) {
	if ev.Timestamp.IsZero() {
		ev.Timestamp = s.now()
	}
	ev.Timestamp = ev.Timestamp.Truncate(time.Microsecond)
	// The session's own events are in time order: one stamped before the
	// last event (a clock step back, or an event stamped before a
	// concurrent one was committed) takes the last event's time. An
	// imported event is history as another runtime recorded it, and keeps
	// its time.
	if seq > 0 && ev.Timestamp.Before(last) && !ev.Imported() {
		ev.Timestamp = last
	}
}

// commit stores ev, the seq-th event of the session key created at
// created, with the split delta d, and data, its encoded form for a store
// that keeps events encoded (nil for any other). One append of the
// session at a time goes through this service, and none through a copy
// known to be stale (gate.go). A store that fails without telling whether
// it committed is asked whether the event is there.
func (s *Service) commit(ctx context.Context, key Key, created time.Time, seq int64, ev *event.Event, data []byte, d Delta) error {
	var err error
	e := s.gate.enter(key)
	select {
	case e.turn <- struct{}{}:
		if e.behind(seq, unixNanos(created)) {
			err = ErrStale
		} else {
			if enc, ok := s.store.(EncodedAppender); ok {
				err = enc.AppendEncoded(ctx, key, created, seq, ev, data, d)
			} else {
				err = s.store.AppendEvent(ctx, key, created, seq, ev, d)
			}
			if err != nil && s.committed(ctx, err, key, created, seq, ev.ID) {
				err = nil // the commit's outcome was unknown, and it happened
			}
			if err == nil {
				e.committed(seq+1, unixNanos(created))
			}
		}
		<-e.turn
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.gate.leave(key, e)
	return err
}

// appended adds ev, committed as the seq-th event with the state delta
// delta, to the session, with data, its encoded form, when the store keeps
// events encoded.
func (sess *Session) appended(ev *event.Event, data []byte, delta map[string]any, seq int64) {
	size := eventSize(ev)
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if data != nil {
		// The store's bytes, for Trim; they are not counted (Record.Raw).
		if pad := len(sess.events) - len(sess.raw); pad > 0 {
			sess.raw = append(sess.raw, make([][]byte, pad)...)
		}
		sess.raw = append(growOne(sess.raw), data)
		size += rawSliceSize
	}
	sess.events = append(growOne(sess.events), ev)
	sess.evBytes += size
	ApplyDelta(sess.state, delta)
	sess.seq = seq + 1
	sess.updated = ev.Timestamp
}

// growOne returns s with room for one more element: a full slice grows
// by half its length, at least 8, fewer steps than append's doubling from
// one for the few events of a new session.
func growOne[T any](s []T) []T {
	if len(s) < cap(s) {
		return s
	}
	return slices.Grow(s, max(8, len(s)/2))
}

// lookupTimeout bounds the read that settles an append of unknown outcome.
const lookupTimeout = 5 * time.Second

// committed settles an append that failed with err: unless err says the
// store refused the event (ErrStale, ErrNotFound, ErrInvalid,
// ErrAlreadyExists), the commit may have happened all the same (a deadline
// or a broken connection during the commit), so it reads the session after
// seq, with a fresh context, and reports whether the event with id is the
// next one of the same session.
func (s *Service) committed(ctx context.Context, err error, key Key, created time.Time, seq int64, id string) bool {
	for _, e := range [...]error{ErrStale, ErrNotFound, ErrInvalid, ErrAlreadyExists} {
		if errors.Is(err, e) {
			return false
		}
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lookupTimeout)
	defer cancel()
	rec, gerr := s.store.GetSession(lctx, key, Window{AfterSeq: seq})
	if gerr != nil || !rec.CreateTime.Equal(created) || rec.Seq <= seq || len(rec.Events) == 0 {
		return false
	}
	return rec.Events[0].ID == id
}

// encodePageToken returns the opaque token of a listing that continues
// after key: the base64 of the JSON array [user id, session id].
func encodePageToken(key Key) string {
	b, _ := json.Marshal([2]string{key.UserID, key.SessionID}) // cannot fail: strings
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodePageToken reads a token of encodePageToken.
func decodePageToken(app, token string) (Key, error) {
	var ids [2]string
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err == nil {
		err = json.Unmarshal(b, &ids)
	}
	if err != nil || ids[1] == "" {
		return Key{}, fmt.Errorf("%w: bad page token", ErrInvalid)
	}
	return Key{AppName: app, UserID: ids[0], SessionID: ids[1]}, nil
}

// Refresh brings sess up to date with storage: it loads the events other
// writers appended since sess was loaded (or last refreshed) and replaces its
// state with the stored merged state, which also discards temp: keys. Its
// cost is proportional to the number of new events, not to the length of the
// session, which lets a long-lived copy of a session be reused across
// invocations. If the session was deleted, Refresh fails with an error
// wrapping ErrNotFound; if it was recreated, sess is reloaded in full.
func (s *Service) Refresh(ctx context.Context, sess *Session) error {
	if sess == nil {
		return fmt.Errorf("%w: nil session", ErrInvalid)
	}
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
		sess.state, sess.events, sess.raw, sess.trimmed = fresh.state, fresh.events, fresh.raw, fresh.trimmed
		sess.seq, sess.updated, sess.created = fresh.seq, fresh.updated, fresh.created
		sess.evBytes, sess.stateBytes, sess.charged = fresh.evBytes, fresh.stateBytes, 0
		sess.mu.Unlock()
		s.gate.observed(sess.key, rec.Seq, unixNanos(rec.CreateTime))
		return nil
	}
	s.gate.observed(sess.key, rec.Seq, unixNanos(rec.CreateTime))
	state, added := mergeState(rec), eventsSize(evs)
	stateBytes := stateSize(state)
	sess.mu.Lock()
	sess.state = state
	sess.stateBytes = stateBytes
	sess.evBytes += added
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
