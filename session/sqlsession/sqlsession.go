// Package sqlsession is a durable session store on SQLite or PostgreSQL.
//
// One implementation serves both databases through database/sql: SQLite
// (pure Go, modernc.org/sqlite; a file in WAL mode, or in memory) is the
// embedded default, PostgreSQL (pgx) lets many server replicas share one
// database. Open takes a URL:
//
//	sqlite:///var/lib/loom/sessions.db   a file, absolute path
//	sqlite://sessions.db                 a file, relative path
//	sqlite::memory:                      a private in-memory database
//	postgres://user:pass@host/db         a PostgreSQL database
//
// The schema is created and upgraded automatically when a store is opened,
// safely when several processes open the same database at once.
//
// # Layout
//
// Each session is a row; its events are rows keyed by (app, user, session,
// seq), so a read of one session, or of its most recent events, touches only
// that session's rows, whatever the length of the log. A session's sequence
// number and last update time are those of its last event, found at the end
// of its range of that key, so an append does not rewrite the session row
// (the row's own seq and update_time columns keep their values from the
// session's creation). State is stored one row per key, in three tables
// (session, user and app scope): writers of different keys never contend on
// one row, an update of an app: or user: key from one session merges with
// updates of other keys from any other session, and an append costs the
// same whatever the size of the state.
//
// # Consistency
//
// An append is one transaction: it inserts the event only if the session is
// still the one the writer loaded (the same creation time: a session
// deleted and created again is another one) and its last sequence number is
// still the one the writer loaded (otherwise session.ErrStale), and its id
// is new in the session (otherwise session.ErrAlreadyExists), and applies
// the state delta. Either all of it is stored or none of it. Once the
// statement that commits has been sent, the store waits for its outcome
// even past the caller's deadline, so that an error means nothing was
// stored.
//
// # Durability and group commit
//
// A SQLite file runs in WAL mode with synchronous=NORMAL: an acknowledged
// append survives a crash of the process; a power loss may lose the last
// transactions, never corrupts the database. Its writes go through one
// connection, and appends that arrive while another's transaction runs
// share the next one (at most 64 a transaction; see batch.go), each with
// its own outcome, so that many sessions appending at once pay for few
// commits. PostgreSQL commits each append on its own.
//
// # Leases
//
// Store implements session.Leaser, so that processes sharing the database
// take turns on a session instead of failing with ErrStale: a
// session-level advisory lock on PostgreSQL, an expiring, renewed lease row
// on SQLite (see lease.go and Options.LeaseTTL).
package sqlsession

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/internal/sqldb"
	"github.com/loomkit/loom/session"
)

//go:embed migrations
var migrations embed.FS

// Options configures a Store. The zero value is the default.
type Options struct {
	// MaxOpenConns bounds the number of connections used for reads (for
	// PostgreSQL, for reads and writes). Zero means a default suited to the
	// database.
	MaxOpenConns int
	// LeaseTTL is how long a SQLite session lease (see Store.Lease) lasts
	// without being renewed: the time after which the lease of a process
	// that died holding it is taken over. The holder renews it every
	// third of it. Zero means 10 seconds. PostgreSQL leases end with the
	// holder's database session instead, and ignore it.
	LeaseTTL time.Duration
}

// Store is a session.Store on a SQL database. It is safe for concurrent use,
// also by several processes sharing the database.
type Store struct {
	db *sqldb.DB
	// w are the write statements on the write pool, for PostgreSQL and an
	// in-memory SQLite database; a SQLite file writes through pin instead.
	w       [numWrite]*sql.Stmt
	pin     *pinned
	cancels cancels // cancel.go
	stmts   statements
	// pgAppend caches the texts of PostgreSQL's append, by shape.
	pgAppend [1 << 6]atomic.Pointer[string]
	// leases are the session leases (lease.go).
	leases leases
	// appends are the appends waiting to share a transaction on pin
	// (batch.go).
	appends appendQueue
}

// statements are the read statements, prepared once per store; database/sql
// keeps them prepared on each connection that runs them.
type statements struct {
	getSession, eventsBefore                                  *sql.Stmt
	listAll, listUser, listState, listUserState, listAppState *sql.Stmt
}

// sessionQuery returns the query that reads a session in one snapshot,
// as rows of (kind, name, value): the session's row (kind sessionRow, name
// "create_time update_time seq", the last two those of its last event),
// those of its state (kind the scope, the key and its JSON value) and
// those of the selected events (kind sessionRow+seq, the event's JSON),
// events last. It takes the arguments sessionArgs
// gives. The events it selects are those after a seq and among the most
// recent N, found by seeking the primary key from the greater of the two
// bounds.
func sessionQuery(d sqldb.Dialect) string {
	text, greatest := func(x string) string { return x }, "max"
	events := `SELECT seq + 3, NULL, %s FROM events WHERE ` + sessionKey + `
		AND seq > %s(?, coalesce((SELECT max(seq) FROM events WHERE ` + sessionKey + `), 0) - ?)`
	if d == sqldb.Postgres {
		// JSON and JSONB values do not mix in a UNION; their text does.
		text = func(x string) string { return "CAST(" + x + " AS TEXT)" }
		greatest = "GREATEST"
		events = "(" + events + " ORDER BY seq)"
	}
	// SQLite returns the rows of a UNION ALL member by member, each in the
	// order its index is read; PostgreSQL does too, given an index scan
	// in order. The reader checks the order all the same, and sorts the
	// events if it has to.
	return `SELECT 3, CAST(s.create_time AS TEXT) || ' ' || CAST(coalesce(e.event_time, s.update_time) AS TEXT) || ' ' || CAST(coalesce(e.seq, 0) AS TEXT), NULL
		FROM sessions s` + lastEvent + ` WHERE s.app_name = ? AND s.user_id = ? AND s.session_id = ?
		UNION ALL SELECT 0, name, ` + text("value") + ` FROM session_state WHERE ` + sessionKey + `
		UNION ALL SELECT 1, name, ` + text("value") + ` FROM user_state WHERE app_name = ? AND user_id = ?
		UNION ALL SELECT 2, name, ` + text("value") + ` FROM app_state WHERE app_name = ?
		UNION ALL ` + fmt.Sprintf(events, text("event"), greatest)
}

// sessionRow is the kind of the session's row in sessionQuery.
const sessionRow = 3

// State scopes, offsets from wPutState and wDelState.
const (
	scopeSession = iota
	scopeUser
	scopeApp
)

const (
	sessionKey = "app_name = ? AND user_id = ? AND session_id = ?"

	// lastEvent joins a session (s) with its last event (e), if any, whose
	// sequence number and time are the session's.
	lastEvent = ` LEFT JOIN events e ON e.app_name = s.app_name AND e.user_id = s.user_id AND e.session_id = s.session_id
		AND e.seq = (SELECT max(seq) FROM events m WHERE m.app_name = s.app_name AND m.user_id = s.user_id AND m.session_id = s.session_id)`

	// queryEventsBefore reads a page of events backwards, for a window with
	// a time bound; sessionQuery reads the others. Each seeks one session's
	// range of the primary key. Sequence numbers are contiguous (1..seq),
	// so the most recent N are those after seq-N.
	queryEventsBefore = `SELECT event, event_time FROM events WHERE ` + sessionKey + ` AND seq > ? AND seq < ? ORDER BY seq DESC LIMIT ?`
)

// Open opens (and creates or upgrades if needed) the session store at dsn.
// opts may be nil.
func Open(ctx context.Context, dsn string, opts *Options) (*Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	s := &Store{}
	_, err := sqldb.OpenMigrated(ctx, dsn, &sqldb.Options{MaxOpenConns: opts.MaxOpenConns}, "session", migrations, func(db *sqldb.DB) error {
		s.db = db
		if err := s.leases.init(ctx, db, opts.LeaseTTL); err != nil {
			return err
		}
		return s.prepare(ctx)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlsession: %w", err)
	}
	return s, nil
}

// NewService opens the store at dsn and returns a session service over it.
func NewService(ctx context.Context, dsn string, opts *Options) (*session.Service, error) {
	s, err := Open(ctx, dsn, opts)
	if err != nil {
		return nil, err
	}
	return session.NewService(s, nil), nil
}

func (s *Store) prepare(ctx context.Context) error {
	w, r := s.db.W, s.db.R
	var err error
	if s.db.Dialect == sqldb.SQLite && w != r {
		s.pin = newPinned(s.db)
	}
	p := func(pool *sql.DB, q string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = s.db.Prepare(ctx, pool, q)
		return st
	}
	if s.pin == nil {
		for i, q := range writeQueries(s.db.Dialect) {
			if q != "" {
				s.w[i] = p(w, q)
			}
		}
	}
	st := &s.stmts
	st.getSession = p(r, sessionQuery(s.db.Dialect))
	st.eventsBefore = p(r, queryEventsBefore)
	const listCols = `SELECT s.user_id, s.session_id, coalesce(e.seq, 0), s.create_time, coalesce(e.event_time, s.update_time) FROM sessions s` + lastEvent
	st.listAll = p(r, listCols+` WHERE s.app_name = ? AND (s.user_id > ? OR (s.user_id = ? AND s.session_id > ?))
		ORDER BY s.user_id, s.session_id LIMIT ?`)
	st.listUser = p(r, listCols+` WHERE s.app_name = ? AND s.user_id = ? AND s.session_id > ? ORDER BY s.session_id LIMIT ?`)
	// The rows of the sessions of one page: a page is a contiguous range
	// of (user_id, session_id), so a range query finds them all at once.
	st.listState = p(r, `SELECT user_id, session_id, name, value FROM session_state
		WHERE app_name = ? AND (user_id > ? OR (user_id = ? AND session_id >= ?))
		AND (user_id < ? OR (user_id = ? AND session_id <= ?))`)
	st.listUserState = p(r, `SELECT user_id, name, value FROM user_state WHERE app_name = ? AND user_id >= ? AND user_id <= ?`)
	st.listAppState = p(r, `SELECT name, value FROM app_state WHERE app_name = ?`)
	return err
}

// Close implements session.Store.
func (s *Store) Close() error {
	s.leases.close()
	if s.pin != nil {
		s.pin.close()
	}
	return s.db.Close()
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// change is one encoded state change: value nil deletes the key.
type change struct {
	scope int
	name  string
	value []byte
}

// encodeDelta encodes a delta before any transaction starts. Keys are
// sorted so that concurrent transactions lock rows in the same order and
// cannot deadlock.
func encodeDelta(d session.Delta) ([]change, error) {
	n := len(d.Session) + len(d.User) + len(d.App)
	if n == 0 {
		return nil, nil
	}
	out := make([]change, 0, n)
	for scope, m := range [3]map[string]any{d.Session, d.User, d.App} {
		start := len(out)
		for k, v := range m {
			c := change{scope: scope, name: k}
			if v != nil {
				b, err := json.Marshal(v)
				if err != nil {
					return nil, fmt.Errorf("%w: state key %q: %w", session.ErrInvalid, k, err)
				}
				c.value = b
			}
			out = append(out, c)
		}
		slices.SortFunc(out[start:], func(a, b change) int {
			switch {
			case a.name < b.name:
				return -1
			case a.name > b.name:
				return 1
			}
			return 0
		})
	}
	return out, nil
}

func applyChanges(tx *wtx, key session.Key, changes []change) error {
	for _, c := range changes {
		var args []any
		switch c.scope {
		case scopeSession:
			args = []any{key.AppName, key.UserID, key.SessionID, c.name}
		case scopeUser:
			args = []any{key.AppName, key.UserID, c.name}
		default:
			args = []any{key.AppName, c.name}
		}
		st := wDelState + c.scope
		if c.value != nil {
			st = wPutState + c.scope
			args = append(args, c.value)
		}
		if _, err := tx.exec(st, args...); err != nil {
			return fmt.Errorf("sqlsession: write state %q: %w", c.name, err)
		}
	}
	return nil
}

// CreateSession implements session.Store.
func (s *Store) CreateSession(ctx context.Context, rec *session.Record, d session.Delta) error {
	changes, err := encodeDelta(session.Delta{Session: rec.State, User: d.User, App: d.App})
	if err != nil {
		return err
	}
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return err
	}
	defer tx.end()
	k := rec.Key
	res, err := tx.exec(wInsertSession, k.AppName, k.UserID, k.SessionID, nanos(rec.CreateTime), nanos(rec.UpdateTime))
	if err != nil {
		return fmt.Errorf("sqlsession: insert session: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("sqlsession: insert session: %w", err)
	} else if n == 0 {
		return session.ErrAlreadyExists
	}
	if err := applyChanges(&tx, k, changes); err != nil {
		return err
	}
	if err := tx.commit(); err != nil {
		return fmt.Errorf("sqlsession: commit: %w", err)
	}
	return nil
}

// AppendEvent implements session.Store.
//
// The sequence check and the writes share one transaction. The event is
// inserted as seq+1 only if the session exists and its last event is still
// seq (otherwise nothing is written: session.ErrNotFound or ErrStale), then
// the state delta is applied; a crash leaves either the event with its state
// or neither. The session's sequence number and update time are those of
// its last event, so an append writes no session row. On SQLite the write
// transaction holds the database's write lock from its start, so the check
// and the insert cannot be separated by another writer; on PostgreSQL two
// writers from the same seq may both pass the check, and the second then
// collides with the first on the events' primary key (or on the session's
// row, if it was deleted meanwhile), which also reads as ErrStale (or
// ErrNotFound). On a SQLite file, appends that arrive together share a
// transaction, each with its own outcome (batch.go).
//
// Session-scoped state lives one row per key rather than as a JSON document
// on the session row: the seq check would guard a read-modify-write just as
// well, but per-key rows make an append cost the same whatever the size of
// the state.
func (s *Store) AppendEvent(ctx context.Context, key session.Key, created time.Time, seq int64, ev *event.Event, d session.Delta) error {
	data, err := ev.MarshalStored()
	if err != nil {
		return fmt.Errorf("%w: encode event: %w", session.ErrInvalid, err)
	}
	changes, err := encodeDelta(d)
	if err != nil {
		return err
	}
	if s.db.Dialect == sqldb.Postgres {
		return s.appendPostgres(ctx, key, created, seq, ev, data, changes)
	}
	a := appendArgs{key: key, created: created, seq: seq, ev: ev, data: data, changes: changes}
	if s.pin == nil {
		return s.appendTx(ctx, &a, false)
	}
	return s.appendBatched(ctx, &a)
}

// conflict maps the PostgreSQL errors of two racing appends to the
// session's errors: a duplicate sequence number means another writer
// appended first, a missing session that it was deleted. It returns nil for
// other errors.
func conflict(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.TableName != "events" {
		return nil
	}
	switch pe.Code {
	case "23505": // unique_violation
		return session.ErrStale
	case "23503": // foreign_key_violation
		return session.ErrNotFound
	}
	return nil
}

// DeleteSession implements session.Store. The session's events and state
// rows go with it (ON DELETE CASCADE), in the same statement.
func (s *Store) DeleteSession(ctx context.Context, key session.Key) error {
	if s.pin == nil {
		if _, err := s.w[wDeleteSession].ExecContext(ctx, key.AppName, key.UserID, key.SessionID); err != nil {
			return fmt.Errorf("sqlsession: delete session: %w", err)
		}
		return nil
	}
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return err
	}
	defer tx.end()
	if _, err := tx.exec(wDeleteSession, key.AppName, key.UserID, key.SessionID); err != nil {
		return fmt.Errorf("sqlsession: delete session: %w", err)
	}
	if err := tx.commit(); err != nil {
		return fmt.Errorf("sqlsession: commit: %w", err)
	}
	return nil
}

// GetSession implements session.Store. It reads one snapshot of the
// database, so the events, state and sequence number agree: one statement
// reads it all, unless the window has a time bound, whose backward paging
// runs in a read transaction.
func (s *Store) GetSession(ctx context.Context, key session.Key, w session.Window) (*session.Record, error) {
	rec := &session.Record{Key: key}
	if w.None {
		// No events, whatever the other bounds say: the statement reads
		// the session alone.
		w = session.Window{None: true}
	}
	if w.After.IsZero() {
		after, recent := noEvents, noEvents
		if !w.None {
			after = max(w.AfterSeq, 0)
			if w.Recent > 0 {
				recent = int64(w.Recent)
			}
		}
		rows, err := s.stmts.getSession.QueryContext(ctx, sessionArgs(key, after, recent)...)
		if err != nil {
			return nil, fmt.Errorf("sqlsession: read session: %w", err)
		}
		if err := readSession(rows, rec, after, recent, w.Encoded, s.db.FreshBlobs()); err != nil {
			return nil, err
		}
		if !w.None && rec.Events == nil && rec.Raw == nil {
			rec.Events = []*event.Event{}
		}
		return rec, nil
	}
	tx, err := s.db.BeginRead(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlsession: begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	rows, err := tx.StmtContext(ctx, s.stmts.getSession).QueryContext(ctx, sessionArgs(key, noEvents, noEvents)...)
	if err != nil {
		return nil, fmt.Errorf("sqlsession: read session: %w", err)
	}
	if err := readSession(rows, rec, noEvents, noEvents, false, false); err != nil {
		return nil, err
	}
	if rec.Events, err = s.readEvents(ctx, tx, key, rec.Seq, w); err != nil {
		return nil, err
	}
	return rec, nil
}

// noEvents, as both bounds of querySession's events, selects none.
const noEvents int64 = math.MaxInt64

// sessionArgs are the arguments of querySession: the session's events
// after seq after and among the recent most recent are selected.
func sessionArgs(k session.Key, after, recent int64) []any {
	return []any{k.AppName, k.UserID, k.SessionID,
		k.AppName, k.UserID, k.SessionID, k.AppName, k.UserID, k.AppName,
		k.AppName, k.UserID, k.SessionID, after, k.AppName, k.UserID, k.SessionID, recent}
}

// readSession reads the rows of querySession into rec, and closes rows.
// With encoded set, the events are returned encoded (Record.Raw); with
// fresh set too, the driver's bytes of each event are kept as they are
// (see sqldb.DB.FreshBlobs).
func readSession(rows *sql.Rows, rec *session.Record, after, recent int64, encoded, fresh bool) error {
	defer rows.Close()
	rec.State, rec.UserState, rec.AppState = map[string]any{}, map[string]any{}, map[string]any{}
	maps := [3]map[string]any{rec.State, rec.UserState, rec.AppState}
	var (
		kind    int64
		name    sql.RawBytes
		raw     = column{fresh: fresh}
		found   bool
		events  = eventReader{encoded: encoded}
		lastSeq int64
		sorted  = true
	)
	for rows.Next() {
		if err := rows.Scan(&kind, &name, &raw); err != nil {
			return fmt.Errorf("sqlsession: read session: %w", err)
		}
		switch {
		case kind > sessionRow: // an event
			seq := kind - sessionRow
			if seq < lastSeq {
				sorted = false
			}
			lastSeq = seq
			if err := events.add(raw.b, raw.owned, seq); err != nil {
				return err
			}
		case kind == sessionRow:
			found = true
			var created, updated int64
			if _, err := fmt.Sscan(string(name), &created, &updated, &rec.Seq); err != nil {
				return fmt.Errorf("sqlsession: read session: %w", err)
			}
			rec.CreateTime, rec.UpdateTime = fromNanos(created), fromNanos(updated)
			// The number of events selected, for one allocation of them all.
			lo := max(after, rec.Seq-recent)
			if lo < rec.Seq {
				events.size(int(rec.Seq - lo))
			}
		case kind >= 0:
			var v any
			if err := json.Unmarshal(raw.b, &v); err != nil {
				return fmt.Errorf("sqlsession: read state %q: %w", name, err)
			}
			maps[kind][string(name)] = v
		default:
			return fmt.Errorf("sqlsession: read session: bad row kind %d", kind)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlsession: read session: %w", err)
	}
	if !found {
		return session.ErrNotFound
	}
	if encoded {
		rec.Raw = events.rawResult(sorted)
	} else {
		rec.Events = events.result(sorted)
	}
	return nil
}

// column scans a column's bytes without copying them; owned reports
// whether they are the reader's to keep. A driver that hands over fresh
// memory for each value (sqldb.DB.FreshBlobs) gives BLOBs of the reader's
// own; any other bytes are the driver's until the next row, as with
// sql.RawBytes.
type column struct {
	fresh bool
	b     []byte
	owned bool
}

// Scan implements sql.Scanner.
func (c *column) Scan(src any) error {
	switch v := src.(type) {
	case []byte:
		c.b, c.owned = v, c.fresh
	case string:
		c.b, c.owned = []byte(v), true
	case nil:
		c.b, c.owned = nil, false
	default:
		return fmt.Errorf("unexpected %T value", src)
	}
	return nil
}

// eventReader decodes the events of a read into as few allocations as it
// can.
type eventReader struct {
	dec   event.Decoder
	store []event.Event
	evs   []*event.Event
	seqs  []int64

	// With encoded set, the events are kept as read: raw are their
	// bytes, copied into arena, a buffer that doubles up to rawChunk bytes
	// at a time (so that a short session's read stays small).
	encoded bool
	raw     [][]byte
	arena   []byte
}

// rawChunk is the size of the buffers encoded events are copied into.
const rawChunk = 64 << 10

// size announces how many events are coming.
func (r *eventReader) size(n int) {
	if r.encoded {
		r.raw = slices.Grow(r.raw, n)
		r.seqs = slices.Grow(r.seqs, n)
		return
	}
	if cap(r.evs)-len(r.evs) < n {
		r.evs = slices.Grow(r.evs, n)
		r.seqs = slices.Grow(r.seqs, n)
	}
	if cap(r.store)-len(r.store) < n {
		r.store = make([]event.Event, 0, n)
	}
}

// add reads the event data of sequence number seq. Unless owned, data is
// the driver's until the next row.
func (r *eventReader) add(data []byte, owned bool, seq int64) error {
	if r.encoded {
		if owned {
			r.raw = append(r.raw, data[:len(data):len(data)])
			r.seqs = append(r.seqs, seq)
			return nil
		}
		if len(data) > cap(r.arena)-len(r.arena) {
			r.arena = make([]byte, 0, max(min(2*cap(r.arena), rawChunk), 1024, len(data)))
		}
		start := len(r.arena)
		r.arena = append(r.arena, data...)
		r.raw = append(r.raw, r.arena[start:len(r.arena):len(r.arena)])
		r.seqs = append(r.seqs, seq)
		return nil
	}
	if len(r.store) == cap(r.store) {
		r.store = make([]event.Event, 0, max(16, 2*len(r.evs)))
	}
	r.store = r.store[:len(r.store)+1]
	ev := &r.store[len(r.store)-1]
	if err := r.dec.Decode(data, ev); err != nil {
		return fmt.Errorf("sqlsession: read events: %w", err)
	}
	r.evs = append(r.evs, ev)
	r.seqs = append(r.seqs, seq)
	return nil
}

// result returns the events in sequence order.
func (r *eventReader) result(sorted bool) []*event.Event {
	if !sorted {
		return inSeqOrder(r.evs, r.seqs)
	}
	return r.evs
}

// rawResult returns the encoded events in sequence order.
func (r *eventReader) rawResult(sorted bool) [][]byte {
	if !sorted {
		return inSeqOrder(r.raw, r.seqs)
	}
	return r.raw
}

// inSeqOrder returns xs sorted by their sequence numbers seqs.
func inSeqOrder[T any](xs []T, seqs []int64) []T {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(seqs[a], seqs[b]) })
	out := make([]T, len(idx))
	for i, j := range idx {
		out[i] = xs[j]
	}
	return out
}

// backwardPage is how many events a read scanning back from the end of a
// session for a time bound fetches per query.
const backwardPage = 256

// readEvents returns the events a window with a time bound selects, oldest
// first. Its cost follows the number of events returned: it scans back from
// the end through the primary key and stops at the first older event
// (events are stored in commit order, which is timestamp order, as the
// in-memory store assumes too).
func (s *Store) readEvents(ctx context.Context, tx *sql.Tx, key session.Key, last int64, w session.Window) ([]*event.Event, error) {
	lo := max(w.AfterSeq, 0)
	if w.Recent > 0 {
		lo = max(lo, last-int64(w.Recent))
	}
	if lo >= last {
		return []*event.Event{}, nil
	}
	// Scan back from the end in pages until an event older than w.After.
	var out []*event.Event
	hi := last + 1
	for {
		rows, err := tx.StmtContext(ctx, s.stmts.eventsBefore).QueryContext(ctx, key.AppName, key.UserID, key.SessionID, lo, hi, backwardPage)
		if err != nil {
			return nil, fmt.Errorf("sqlsession: read events: %w", err)
		}
		page, done, err := scanEvents(rows, backwardPage, w.After)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		hi -= int64(len(page))
		if done || len(page) < backwardPage || hi <= lo+1 {
			break
		}
	}
	slices.Reverse(out)
	return out, nil
}

// scanEvents decodes rows of (event) or, when after is set, of (event,
// event_time), and closes rows. When after is set it stops at the first
// event older than after and reports that it did.
func scanEvents(rows *sql.Rows, n int, after time.Time) (evs []*event.Event, stopped bool, err error) {
	defer rows.Close()
	// One allocation for all the events of the read.
	store := make([]event.Event, 0, n)
	evs = make([]*event.Event, 0, n)
	bound := nanos(after)
	var (
		dec  event.Decoder
		raw  sql.RawBytes
		ts   int64
		dest = []any{&raw}
	)
	if !after.IsZero() {
		dest = append(dest, &ts)
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, false, fmt.Errorf("sqlsession: read events: %w", err)
		}
		if !after.IsZero() && ts < bound {
			return evs, true, nil
		}
		store = append(store, event.Event{})
		ev := &store[len(store)-1]
		if err := dec.Decode(raw, ev); err != nil {
			return nil, false, fmt.Errorf("sqlsession: read events: %w", err)
		}
		evs = append(evs, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("sqlsession: read events: %w", err)
	}
	return evs, false, nil
}

// ListSessions implements session.Store.
func (s *Store) ListSessions(ctx context.Context, app, user string, after session.Key, limit int) ([]*session.Record, error) {
	if limit <= 0 {
		return nil, nil
	}
	if after.SessionID == "" {
		after = session.Key{}
	}
	tx, err := s.db.BeginRead(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlsession: begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	out, err := s.listRecords(ctx, tx, app, user, after, limit)
	if err != nil || len(out) == 0 {
		return out, err
	}
	if err := s.readStates(ctx, tx, app, out); err != nil {
		return nil, err
	}
	return out, nil
}

// listRecords reads the records, without their states, of the sessions
// ListSessions lists.
func (s *Store) listRecords(ctx context.Context, tx *sql.Tx, app, user string, after session.Key, limit int) ([]*session.Record, error) {
	var rows *sql.Rows
	var err error
	if user != "" {
		afterID := ""
		if after.UserID == user {
			afterID = after.SessionID
		} else if after.UserID > user {
			return nil, nil
		}
		rows, err = tx.StmtContext(ctx, s.stmts.listUser).QueryContext(ctx, app, user, afterID, limit)
	} else {
		rows, err = tx.StmtContext(ctx, s.stmts.listAll).QueryContext(ctx, app, after.UserID, after.UserID, after.SessionID, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlsession: list sessions: %w", err)
	}
	var out []*session.Record
	for rows.Next() {
		r := &session.Record{Key: session.Key{AppName: app}, State: map[string]any{}, UserState: map[string]any{}}
		var created, updated int64
		if err := rows.Scan(&r.UserID, &r.SessionID, &r.Seq, &created, &updated); err != nil {
			rows.Close()
			return nil, fmt.Errorf("sqlsession: list sessions: %w", err)
		}
		r.CreateTime, r.UpdateTime = fromNanos(created), fromNanos(updated)
		out = append(out, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlsession: list sessions: %w", err)
	}
	return out, nil
}

// readStates reads the app, user and session states of out, records of
// the sessions of app in key order, into maps each record owns.
func (s *Store) readStates(ctx context.Context, tx *sql.Tx, app string, out []*session.Record) error {
	index := make(map[[2]string]*session.Record, len(out))
	for _, r := range out {
		index[[2]string{r.UserID, r.SessionID}] = r
	}
	first, last := out[0].Key, out[len(out)-1].Key
	appState := map[string]any{}
	if err := scanStates(ctx, tx, s.stmts.listAppState, []any{app}, func(_, _ string) map[string]any { return appState }); err != nil {
		return err
	}
	users := map[string]map[string]any{}
	for _, r := range out {
		if m, ok := users[r.UserID]; ok {
			r.UserState = m
		} else {
			users[r.UserID] = r.UserState
		}
		r.AppState = appState
	}
	if err := scanStates(ctx, tx, s.stmts.listUserState, []any{app, first.UserID, last.UserID},
		func(u, _ string) map[string]any { return users[u] }); err != nil {
		return err
	}
	if err := scanStates(ctx, tx, s.stmts.listState, []any{app, first.UserID, first.UserID, first.SessionID, last.UserID, last.UserID, last.SessionID},
		func(u, id string) map[string]any {
			if r := index[[2]string{u, id}]; r != nil {
				return r.State
			}
			return nil
		}); err != nil {
		return err
	}
	// Records must not share maps: the caller owns each.
	for i, r := range out {
		if i > 0 {
			r.AppState = event.CloneMap(appState)
		}
		if i > 0 && out[i-1].UserID == r.UserID {
			r.UserState = event.CloneMap(r.UserState)
		}
	}
	return nil
}

// scanStates reads rows of ([user_id, [session_id,]] name, value) and puts
// each value in the map target returns (nil: skip the row).
func scanStates(ctx context.Context, tx *sql.Tx, st *sql.Stmt, args []any, target func(user, id string) map[string]any) error {
	rows, err := tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	if err != nil {
		return fmt.Errorf("sqlsession: list sessions: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return fmt.Errorf("sqlsession: list sessions: %w", err)
	}
	var (
		user, id, name string
		raw            sql.RawBytes
	)
	dest := []any{&name, &raw}
	switch len(cols) {
	case 3:
		dest = []any{&user, &name, &raw}
	case 4:
		dest = []any{&user, &id, &name, &raw}
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("sqlsession: list sessions: %w", err)
		}
		m := target(user, id)
		if m == nil {
			continue
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return fmt.Errorf("sqlsession: read state %q: %w", name, err)
		}
		m[name] = v
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlsession: list sessions: %w", err)
	}
	return nil
}
