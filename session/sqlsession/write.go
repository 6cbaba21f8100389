package sqlsession

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/internal/sqldb"
	"github.com/loomkit/loom/session"
)

// Write statements, the index into Store.w and pinned.stmts.
const (
	wInsertSession = iota
	wInsertEvent
	wExistsSession
	wDeleteSession
	wPutState                   // + scope
	wDelState   = wPutState + 3 // + scope
	wLeaseTake  = wDelState + 3 // SQLite only, as are the next two
	wLeaseRenew = wLeaseTake + 1
	wLeaseDrop  = wLeaseRenew + 1
	numWrite    = wLeaseDrop + 1
)

// writeQueries returns the write statements for a dialect.
func writeQueries(d sqldb.Dialect) [numWrite]string {
	// PostgreSQL needs the types of the values an INSERT ... SELECT takes
	// from parameters; SQLite must not be told (a JSON type name would give
	// the value numeric affinity).
	cast := func(param, typ string) string {
		if d == sqldb.Postgres {
			return "CAST(" + param + " AS " + typ + ")"
		}
		return param
	}
	var q [numWrite]string
	q[wInsertSession] = `INSERT INTO sessions (app_name, user_id, session_id, seq, create_time, update_time)
		VALUES (?, ?, ?, 0, ?, ?) ON CONFLICT DO NOTHING`
	// The append: the event goes in only if the session exists and its
	// last sequence number is still the one the writer loaded. The check
	// reads the last entry of the session's range of the primary key, the
	// page the insert writes anyway. Numbered parameters pass the session's
	// key once (insertEventArgs).
	key := "app_name = $1 AND user_id = $2 AND session_id = $3"
	q[wInsertEvent] = `INSERT INTO events (app_name, user_id, session_id, seq, id, event_time, invocation_id, author, event)
		SELECT ` + cast("$1", "TEXT") + `, ` + cast("$2", "TEXT") + `, ` + cast("$3", "TEXT") + `, ` + cast("$4", "BIGINT") + `, ` +
		cast("$5", "TEXT") + `, ` + cast("$6", "BIGINT") + `, ` + cast("$7", "TEXT") + `, ` + cast("$8", "TEXT") + `, ` + cast("$9", "JSON") + `
		WHERE EXISTS (SELECT 1 FROM sessions WHERE ` + key + ` AND create_time = $10)
		AND coalesce((SELECT max(seq) FROM events WHERE ` + key + `), 0) = $11
		AND NOT EXISTS (SELECT 1 FROM events WHERE ` + key + ` AND id = $5)`
	// Why an append inserted nothing: the session's incarnation and last
	// sequence number.
	q[wExistsSession] = `SELECT s.create_time, coalesce((SELECT max(seq) FROM events e WHERE e.app_name = s.app_name
		AND e.user_id = s.user_id AND e.session_id = s.session_id), 0) FROM sessions s WHERE ` + sessionKey
	q[wDeleteSession] = `DELETE FROM sessions WHERE ` + sessionKey
	q[wPutState+scopeSession] = `INSERT INTO session_state (app_name, user_id, session_id, name, value) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (app_name, user_id, session_id, name) DO UPDATE SET value = excluded.value`
	q[wDelState+scopeSession] = `DELETE FROM session_state WHERE ` + sessionKey + ` AND name = ?`
	q[wPutState+scopeUser] = `INSERT INTO user_state (app_name, user_id, name, value) VALUES (?, ?, ?, ?)
		ON CONFLICT (app_name, user_id, name) DO UPDATE SET value = excluded.value`
	q[wDelState+scopeUser] = `DELETE FROM user_state WHERE app_name = ? AND user_id = ? AND name = ?`
	q[wPutState+scopeApp] = `INSERT INTO app_state (app_name, name, value) VALUES (?, ?, ?)
		ON CONFLICT (app_name, name) DO UPDATE SET value = excluded.value`
	q[wDelState+scopeApp] = `DELETE FROM app_state WHERE app_name = ? AND name = ?`
	if d == sqldb.SQLite {
		// A lease is taken if free or expired (the row changed), renewed
		// and dropped only by its owner. PostgreSQL leases are advisory
		// locks instead (lease.go).
		q[wLeaseTake] = `INSERT INTO session_leases (app_name, user_id, session_id, owner, expires) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (app_name, user_id, session_id) DO UPDATE SET owner = excluded.owner, expires = excluded.expires
			WHERE session_leases.expires <= ?`
		q[wLeaseRenew] = `UPDATE session_leases SET expires = ? WHERE ` + sessionKey + ` AND owner = ?`
		q[wLeaseDrop] = `DELETE FROM session_leases WHERE ` + sessionKey + ` AND owner = ?`
	}
	return q
}

// pinned is the write connection of a SQLite file, held for the life of
// the store, with the write statements prepared on it.
//
// SQLite has one writer at a time, and the database's write pool has a
// single connection already; holding it lets a write transaction run as
// plain statements on it: database/sql's Tx would start a goroutine to
// watch the context of each transaction, and the driver would parse its
// BEGIN anew each time.
type pinned struct {
	db *sqldb.DB
	// sem holds the connection: a writer takes it (or gives up when its
	// context ends) and returns it when its transaction ends.
	sem                     chan struct{}
	conn                    *sql.Conn // nil after a failure, until the next writer replaces it
	stmts                   [numWrite]*sql.Stmt
	begin, commit, rollback *sql.Stmt
	closed                  bool
}

func newPinned(db *sqldb.DB) *pinned {
	return &pinned{db: db, sem: make(chan struct{}, 1)}
}

// lock takes the connection, opening it if needed.
func (p *pinned) lock(ctx context.Context) error {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	if p.closed {
		<-p.sem
		return errClosed
	}
	if p.conn != nil {
		return nil
	}
	if err := p.open(ctx); err != nil {
		p.release(true)
		<-p.sem
		return err
	}
	return nil
}

func (p *pinned) unlock() { <-p.sem }

func (p *pinned) open(ctx context.Context) error {
	conn, err := p.db.W.Conn(ctx)
	if err != nil {
		return err
	}
	p.conn = conn
	queries := writeQueries(p.db.Dialect)
	prep := func(q string) (*sql.Stmt, error) { return conn.PrepareContext(ctx, q) }
	for i, q := range queries {
		if q == "" {
			continue
		}
		if p.stmts[i], err = prep(q); err != nil {
			return fmt.Errorf("prepare %q: %w", q, err)
		}
	}
	if p.begin, err = prep("BEGIN IMMEDIATE"); err != nil {
		return err
	}
	if p.commit, err = prep("COMMIT"); err != nil {
		return err
	}
	p.rollback, err = prep("ROLLBACK")
	return err
}

// release closes the statements and returns the connection to the pool,
// or, if bad, has it closed: after a failure that may have left it in a
// transaction, the next writer opens a new one.
func (p *pinned) release(bad bool) {
	if p.conn == nil {
		return
	}
	for _, st := range append(p.stmts[:], p.begin, p.commit, p.rollback) {
		if st != nil {
			st.Close()
		}
	}
	if bad {
		// ErrBadConn makes database/sql close the connection rather than
		// return it to the pool.
		p.conn.Raw(func(any) error { return driver.ErrBadConn }) //nolint:errcheck // the point
	}
	p.conn.Close()
	p.conn, p.stmts, p.begin, p.commit, p.rollback = nil, [numWrite]*sql.Stmt{}, nil, nil, nil
}

// close returns the connection to the pool, after the writer in progress
// if any; later writes fail.
func (p *pinned) close() {
	p.sem <- struct{}{}
	p.release(false)
	p.closed = true
	<-p.sem
}

// wtx is a write transaction: a database/sql transaction, or on a SQLite
// file a transaction run by hand on the pinned connection.
type wtx struct {
	ctx  context.Context
	tx   *sql.Tx
	stmt *[numWrite]*sql.Stmt // of the pool (tx != nil) or of the pinned connection
	pin  *pinned
	done bool
}

// beginWrite starts a write transaction. Once it has the write lock, the
// statements of a transaction on the pinned connection no longer watch the
// context: they wait on nothing, and a commit cut short would only waste
// the work done; the wait for the lock itself (BEGIN IMMEDIATE on another
// process's transaction) ends with the context.
func (s *Store) beginWrite(ctx context.Context) (wtx, error) {
	if s.pin == nil {
		tx, err := s.db.BeginWrite(ctx)
		if err != nil {
			return wtx{}, fmt.Errorf("sqlsession: begin: %w", err)
		}
		return wtx{ctx: ctx, tx: tx, stmt: &s.w}, nil
	}
	p := s.pin
	if err := p.lock(ctx); err != nil {
		return wtx{}, fmt.Errorf("sqlsession: begin: %w", err)
	}
	if _, err := p.begin.ExecContext(ctx); err != nil {
		// A BEGIN that failed, for example on another process's lock,
		// opened no transaction; should one be open all the same, it
		// goes.
		p.abort(context.WithoutCancel(ctx))
		p.unlock()
		return wtx{}, fmt.Errorf("sqlsession: begin: %w", err)
	}
	return wtx{ctx: context.WithoutCancel(ctx), stmt: &p.stmts, pin: p}, nil
}

func (t *wtx) st(id int) *sql.Stmt {
	if t.tx != nil {
		return t.tx.StmtContext(t.ctx, t.stmt[id])
	}
	return t.stmt[id]
}

func (t *wtx) exec(id int, args ...any) (sql.Result, error) {
	return t.st(id).ExecContext(t.ctx, args...)
}

func (t *wtx) queryRow(id int, args ...any) *sql.Row {
	return t.st(id).QueryRowContext(t.ctx, args...)
}

// commit commits the transaction and releases the connection.
func (t *wtx) commit() error {
	t.done = true
	if t.tx != nil {
		return t.tx.Commit()
	}
	_, err := t.pin.commit.ExecContext(t.ctx)
	if err != nil {
		// SQLite may or may not have rolled back: make sure.
		t.pin.abort(t.ctx)
	}
	t.pin.unlock()
	return err
}

// end rolls the transaction back unless it was committed.
func (t *wtx) end() {
	if t.done {
		return
	}
	t.done = true
	if t.tx != nil {
		t.tx.Rollback() //nolint:errcheck // nothing more to do
		return
	}
	t.pin.abort(t.ctx)
	t.pin.unlock()
}

// abort rolls back the open transaction, if any; if that fails the
// connection is dropped.
func (p *pinned) abort(ctx context.Context) {
	if p.conn == nil {
		return
	}
	_, err := p.rollback.ExecContext(ctx)
	if err == nil || p.autocommit(ctx) {
		return
	}
	p.release(true)
}

// autocommit reports whether the connection has no transaction open (an
// error such as SQLITE_FULL rolls back on its own, and ROLLBACK then fails).
func (p *pinned) autocommit(ctx context.Context) bool {
	// BEGIN succeeds only outside a transaction; undo it at once.
	if _, err := p.conn.ExecContext(ctx, "BEGIN DEFERRED"); err != nil {
		return false
	}
	_, err := p.conn.ExecContext(ctx, "ROLLBACK")
	return err == nil
}

// errClosed reports a write to a closed store.
var errClosed = errors.New("store is closed")

// appendPostgres is AppendEvent on PostgreSQL: one statement, so one round
// trip and the commit of its implicit transaction. Data-modifying WITH
// clauses apply the state changes, each only if the event went in.
func (s *Store) appendPostgres(ctx context.Context, k session.Key, created time.Time, seq int64, ev *event.Event, data []byte, changes []change) error {
	// The changes of each scope, in key order: puts and deletes.
	var (
		names  [3][2][]string // by scope, then put/delete
		values [3][]string
		shape  int // a bit per non-empty names list
	)
	for _, c := range changes {
		if c.value == nil {
			names[c.scope][1] = append(names[c.scope][1], c.name)
			shape |= 1 << (2*c.scope + 1)
			continue
		}
		names[c.scope][0] = append(names[c.scope][0], c.name)
		values[c.scope] = append(values[c.scope], string(c.value))
		shape |= 1 << (2 * c.scope)
	}
	args := make([]any, 0, 16+3*4)
	args = append(args, insertEventArgs(k, created, seq, ev, data)...)
	keyArgs := [3][]any{{k.AppName, k.UserID, k.SessionID}, {k.AppName, k.UserID}, {k.AppName}}
	for scope := range 3 {
		if put := names[scope][0]; len(put) > 0 {
			args = append(args, keyArgs[scope]...)
			args = append(args, put, values[scope])
		}
		if del := names[scope][1]; len(del) > 0 {
			args = append(args, keyArgs[scope]...)
			args = append(args, del)
		}
	}
	// The caller's context bounds the wait for a connection; once the
	// statement is sent, the store waits for its outcome (up to
	// commitGrace), so that an error means nothing was committed: a
	// statement cut short by the caller's deadline may commit all the same
	// after the caller has been told it failed.
	conn, err := s.db.W.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlsession: append: %w", err)
	}
	defer conn.Close()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlsession: append: %w", err)
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitGrace)
	defer cancel()
	var n int
	if err := conn.QueryRowContext(wctx, s.appendSQL(shape), args...).Scan(&n); err != nil {
		if e := conflict(err); e != nil {
			return e
		}
		return fmt.Errorf("sqlsession: append: %w", err)
	}
	if n > 0 {
		return nil
	}
	return whyNotAppended(conn.QueryRowContext(wctx, s.db.Rebind(writeQueries(sqldb.Postgres)[wExistsSession]), k.AppName, k.UserID, k.SessionID), created, seq)
}

// commitGrace bounds how long an append waits for the outcome of a
// statement it has sent, past the caller's deadline.
const commitGrace = 10 * time.Second

// insertEventArgs are the arguments of wInsertEvent.
func insertEventArgs(k session.Key, created time.Time, seq int64, ev *event.Event, data []byte) []any {
	return []any{k.AppName, k.UserID, k.SessionID, seq + 1, ev.ID, nanos(ev.Timestamp), ev.InvocationID, ev.Author, data,
		nanos(created), seq}
}

// whyNotAppended reads the row of wExistsSession to tell why an append
// inserted nothing: no session, another incarnation of it or a later
// sequence number (a stale writer), or else an event id already used.
func whyNotAppended(row *sql.Row, created time.Time, seq int64) error {
	var ct, last int64
	err := row.Scan(&ct, &last)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return session.ErrNotFound
	case err != nil:
		return fmt.Errorf("sqlsession: read session: %w", err)
	case ct != nanos(created) || last != seq:
		return session.ErrStale
	}
	return fmt.Errorf("%w: the session already has an event with this id", session.ErrAlreadyExists)
}

// appendSQL returns the text of PostgreSQL's append for a shape of state
// changes (bit 2*scope: puts, bit 2*scope+1: deletes), built once per shape.
func (s *Store) appendSQL(shape int) string {
	if q := s.pgAppend[shape].Load(); q != nil {
		return *q
	}
	var b strings.Builder
	b.WriteString("WITH ev AS (")
	b.WriteString(writeQueries(sqldb.Postgres)[wInsertEvent])
	b.WriteString(" RETURNING 1)")
	tables := [3]string{"session_state", "user_state", "app_state"}
	keyCols := [3]string{"app_name, user_id, session_id", "app_name, user_id", "app_name"}
	keyParams := [3]string{"?, ?, ?", "?, ?", "?"}
	for scope := range 3 {
		if shape&(1<<(2*scope)) != 0 {
			fmt.Fprintf(&b, `, p%d AS (INSERT INTO %s (%s, name, value) SELECT %s, u.n, CAST(u.v AS JSONB)
				FROM unnest(CAST(? AS TEXT[]), CAST(? AS TEXT[])) AS u(n, v) WHERE EXISTS (SELECT 1 FROM ev)
				ON CONFLICT (%[3]s, name) DO UPDATE SET value = excluded.value)`,
				scope, tables[scope], keyCols[scope], strings.ReplaceAll(keyParams[scope], "?", "CAST(? AS TEXT)"))
		}
		if shape&(1<<(2*scope+1)) != 0 {
			fmt.Fprintf(&b, `, d%d AS (DELETE FROM %s WHERE (%s) = (%s) AND name = ANY(CAST(? AS TEXT[])) AND EXISTS (SELECT 1 FROM ev))`,
				scope, tables[scope], keyCols[scope], keyParams[scope])
		}
	}
	b.WriteString(" SELECT count(*) FROM ev")
	q := s.db.Rebind(b.String())
	s.pgAppend[shape].Store(&q)
	return q
}
