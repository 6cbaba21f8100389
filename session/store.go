package session

import (
	"context"
	"time"

	"github.com/loomkit/loom/event"
)

// Store is the storage driver behind a [Service]. It stores records and
// applies already-decided changes atomically; every rule about what to store
// (partial events, temp: keys, scope splitting, ids, timestamps) lives in
// Service, so a new backend only needs to implement these operations and pass
// the sessiontest conformance suite.
//
// Implementations must be safe for concurrent use. They must not retain
// memory passed to them, nor return memory they retain: a caller may mutate
// what it passed or received without affecting the store.
type Store interface {
	// CreateSession stores a new session with its initial session-scoped
	// state and applies d's app and user deltas, atomically. It returns an
	// error wrapping ErrAlreadyExists if the key is taken.
	CreateSession(ctx context.Context, rec *Record, d Delta) error
	// GetSession returns the session with its session, user and app state
	// and the events that w selects, in sequence order. It returns an error
	// wrapping ErrNotFound if there is no such session.
	GetSession(ctx context.Context, key Key, w Window) (*Record, error)
	// ListSessions returns up to limit sessions of the app (of one user, or
	// of every user when user is ""), without events, ordered by (UserID,
	// SessionID) and starting strictly after the given key (zero: from the
	// start). State, AppState and UserState are filled in.
	ListSessions(ctx context.Context, app, user string, after Key, limit int) ([]*Record, error)
	// DeleteSession removes a session and its events. Deleting a missing
	// session is not an error.
	DeleteSession(ctx context.Context, key Key) error
	// AppendEvent appends ev as sequence number seq+1 of the session and
	// applies d, atomically, provided the session is still the one created
	// at created (its CreateTime, which tells a session from one deleted
	// and created again with the same key) and its last sequence number is
	// still seq; otherwise it returns an error wrapping ErrStale (or
	// ErrNotFound if there is no such session) and changes nothing. Event
	// ids are unique within a session: if the session already holds an
	// event with ev's id, it returns an error wrapping ErrAlreadyExists and
	// changes nothing. The event's timestamp becomes the session's last
	// update time.
	AppendEvent(ctx context.Context, key Key, created time.Time, seq int64, ev *event.Event, d Delta) error
	// Close releases the store's resources.
	Close() error
}

// Key identifies a session. Sessions are scoped by app and user: the same
// session id under two users names two different sessions.
type Key struct {
	AppName   string
	UserID    string
	SessionID string
}

// Record is a session as a Store holds it.
type Record struct {
	Key
	// State holds the session-scoped keys.
	State map[string]any
	// AppState and UserState hold the app and user scopes, keys without
	// their prefix.
	AppState  map[string]any
	UserState map[string]any
	// Events are the selected events, oldest first.
	Events []*event.Event
	// Raw, which a store may set instead of Events when the window asks
	// for Encoded events, holds the selected events in their JSON encoding
	// (the stored form event.Event.MarshalStored writes), oldest first. The service
	// keeps them so and decodes an event when it is read; the bytes must
	// never change.
	Raw [][]byte
	// RawShared tells that Raw's bytes are the store's own, which it keeps
	// in memory and shares with the sessions loaded from it: a session
	// then does not count them in its Size.
	RawShared bool
	// Seq is the sequence number of the session's last event (0: none).
	Seq int64
	// CreateTime is the time the session was created.
	CreateTime time.Time
	// UpdateTime is the time of the last change: creation or last append.
	UpdateTime time.Time
}

// Delta is a state change split by scope. Keys carry no prefix; a nil value
// removes the key.
type Delta struct {
	App     map[string]any
	User    map[string]any
	Session map[string]any
}

// Empty reports whether the delta changes nothing.
func (d Delta) Empty() bool { return len(d.App) == 0 && len(d.User) == 0 && len(d.Session) == 0 }

// Window selects which events GetSession returns.
type Window struct {
	// None selects no events, whatever the other fields say.
	None bool
	// Recent, when positive, keeps only the most recent events.
	Recent int
	// After, when set, keeps only events at or after this time.
	After time.Time
	// AfterSeq, when positive, keeps only events whose sequence number is
	// greater (used to load what was appended since a known point).
	AfterSeq int64
	// Encoded lets the store return the events encoded, in Record.Raw,
	// without decoding them.
	Encoded bool
}

// EncodedAppender is an optional interface of a Store that keeps its events
// encoded in memory (see Record.Raw). The service encodes each event once,
// as event.Event.MarshalStored does, and AppendEncoded stores data as the
// event, which it does as AppendEvent would; the bytes are then shared with
// the session that appended them, and the store must never change them.
type EncodedAppender interface {
	AppendEncoded(ctx context.Context, key Key, created time.Time, seq int64, ev *event.Event, data []byte, d Delta) error
}

// Leaser is an optional interface of a Store whose sessions several
// processes may write: server replicas sharing one database. A lease makes
// a holder the session's only writer until it releases it, so that an
// invocation on one replica never races an invocation on another (which
// would otherwise fail with ErrStale half-way through a turn).
//
// Lease waits while another holder, in this process or another, has the
// lease of key, until ctx is done (then it returns an error wrapping
// ctx.Err() and holds nothing). The key need not name an existing session.
// On success it returns the function that releases the lease: it may be
// called more than once and from any goroutine, and it works even when ctx
// has been cancelled since. Each call of Lease is a holder of its own:
// leases are not reentrant, a second Lease of a key held by the same caller
// waits for the first to be released.
//
// A lease of a process that dies, or loses its connection to the database,
// while holding it, is recovered by the store (when the database session
// ends, or when the lease expires without being renewed), so a crash
// blocks the session for a bounded time only. The sequence check of
// AppendEvent stays the guard of consistency: a holder that lost its lease
// that way gets ErrStale rather than overwriting anything.
type Leaser interface {
	Lease(ctx context.Context, key Key) (release func(), err error)
}

// Canceller is an optional interface of a Store whose sessions several
// processes share: it carries a request to cancel a session's running
// invocations from the process that receives it to the one that runs them.
//
// RequestCancel records a request to cancel the invocations of key that
// are running now, in any process. WatchCancel starts watching key: the
// returned channel is closed when a cancel of key is requested after
// WatchCancel was called (in this process or another), within a delay the
// store documents; stop ends the watch and may be called more than once.
type Canceller interface {
	RequestCancel(ctx context.Context, key Key) error
	WatchCancel(ctx context.Context, key Key) (cancelled <-chan struct{}, stop func(), err error)
}
