package sqlsession

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/loomkit/loom/internal/sqldb"
	"github.com/loomkit/loom/session"
)

// Session leases (session.Leaser): an invocation holds its session
// exclusively across the processes sharing the database.
//
// Within a process, a lease is a per-session semaphore, so that waiters
// wake as soon as the holder releases. Across processes:
//
//   - on PostgreSQL, a session-level advisory lock keyed by a 64-bit hash of
//     (schema, app, user, session), taken with pg_try_advisory_lock on one
//     connection the store keeps for its leases and polled with backoff
//     while another process holds it. A lock lives as long as the database
//     session that took it, so a process that dies releases its leases at
//     once, and holding one costs no connection per invocation;
//   - on SQLite, a row of session_leases with an owner token and an
//     expiry, renewed by the holder every third of the lease's duration and
//     deleted on release; another process takes it over once it has
//     expired, or at once when the token names a process of its machine
//     that no longer runs (owner.go): a process killed while it held a
//     session, or before its release was written, does not hold the
//     session up for the lease's duration.

// defaultLeaseTTL is how long a SQLite lease lasts without renewal.
const defaultLeaseTTL = 10 * time.Second

// Waiting for a lease held by another process polls, from pollMin doubling
// to pollMax, with jitter.
const (
	pollMin = time.Millisecond
	pollMax = 50 * time.Millisecond
)

// leaseStmtTimeout bounds a lease statement that runs without the caller's
// context (a release, a renewal, a try that must not be cut short).
const leaseStmtTimeout = 10 * time.Second

// leases holds a store's lease machinery.
type leases struct {
	db  *sqldb.DB
	ttl time.Duration

	mu     sync.Mutex
	local  map[session.Key]*localLease
	closed bool

	// PostgreSQL: the connection holding the advisory locks, opened on
	// first use; gen counts its replacements, so that a release does not
	// unlock, on a new connection, a lock that died with the old one.
	pg struct {
		sync.Mutex
		conn   *sql.Conn
		gen    int
		schema string
	}
	// renewals are the goroutines that renew (SQLite) and drop leases,
	// waited for on close (renewals stop on done).
	renewals sync.WaitGroup
	done     chan struct{}
}

// localLease is the in-process semaphore of one session's lease.
type localLease struct {
	sem  chan struct{}
	refs int
}

func (l *leases) init(ctx context.Context, db *sqldb.DB, ttl time.Duration) error {
	l.db, l.ttl, l.local, l.done = db, ttl, map[session.Key]*localLease{}, make(chan struct{})
	if l.ttl <= 0 {
		l.ttl = defaultLeaseTTL
	}
	if db.Dialect == sqldb.Postgres {
		// Advisory locks are per database, tables per schema: stores on
		// two schemas of one database must not share locks.
		if err := db.W.QueryRowContext(ctx, "SELECT current_schema()").Scan(&l.pg.schema); err != nil {
			return fmt.Errorf("read schema: %w", err)
		}
	}
	return nil
}

// close drops the lease connection: the advisory locks still held go with
// it. Later leases fail.
func (l *leases) close() {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.done)
	}
	l.mu.Unlock()
	l.renewals.Wait() // leases being dropped still have the database
	l.pg.Lock()
	if l.pg.conn != nil {
		l.pg.conn.Close()
		l.pg.conn = nil
		l.pg.gen++
	}
	l.pg.Unlock()
	l.renewals.Wait()
}

// lockLocal takes the in-process semaphore of key.
func (l *leases) lockLocal(ctx context.Context, key session.Key) (*localLease, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, errClosed
	}
	ll := l.local[key]
	if ll == nil {
		ll = &localLease{sem: make(chan struct{}, 1)}
		l.local[key] = ll
	}
	ll.refs++
	l.mu.Unlock()
	select {
	case ll.sem <- struct{}{}:
		return ll, nil
	case <-ctx.Done():
		l.unrefLocal(key, ll)
		return nil, ctx.Err()
	}
}

func (l *leases) unlockLocal(key session.Key, ll *localLease) {
	<-ll.sem
	l.unrefLocal(key, ll)
}

func (l *leases) unrefLocal(key session.Key, ll *localLease) {
	l.mu.Lock()
	if ll.refs--; ll.refs == 0 {
		delete(l.local, key)
	}
	l.mu.Unlock()
}

// Lease implements session.Leaser: see the comment at the top of this file
// for how a lease is held on each database.
func (s *Store) Lease(ctx context.Context, key session.Key) (release func(), err error) {
	l := &s.leases
	ll, err := l.lockLocal(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("sqlsession: lease: %w", err)
	}
	var drop func()
	if s.db.Dialect == sqldb.Postgres {
		drop, err = l.takePostgres(ctx, key)
	} else {
		drop, err = s.takeSQLite(ctx, key)
	}
	if err != nil {
		l.unlockLocal(key, ll)
		return nil, fmt.Errorf("sqlsession: lease: %w", err)
	}
	done := func() {
		drop()
		l.unlockLocal(key, ll)
	}
	var once sync.Once
	// A lease is dropped off the caller's path: the unlock or the write
	// transaction is not part of the invocation's latency. Until it is
	// done, a waiter in this process still waits (the in-process
	// semaphore goes last) and one in another process still polls.
	return func() {
		once.Do(func() {
			l.mu.Lock()
			closed := l.closed
			if !closed {
				l.renewals.Add(1)
			}
			l.mu.Unlock()
			if closed {
				done()
				return
			}
			go func() {
				defer l.renewals.Done()
				done()
			}()
		})
	}, nil
}

// poll calls try until it succeeds, fails, or ctx is done, sleeping with
// exponential backoff and jitter in between.
func poll(ctx context.Context, try func() (bool, error)) error {
	delay := pollMin
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		ok, err := try()
		if err != nil || ok {
			return err
		}
		t := time.NewTimer(delay/2 + rand.N(delay))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, pollMax)
	}
}

// lockID is the advisory lock key of a session.
func (l *leases) lockID(key session.Key) int64 {
	h := fnv.New64a()
	for _, s := range [...]string{"loom-session", l.pg.schema, key.AppName, key.UserID, key.SessionID} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return int64(h.Sum64())
}

// onLeaseConn runs fn on the lease connection, opening it if needed. After
// an error other than the end of ctx the connection is dropped (with the
// locks it held: a broken connection has lost them already).
func (l *leases) onLeaseConn(ctx context.Context, fn func(c *sql.Conn, gen int) error) error {
	l.pg.Lock()
	defer l.pg.Unlock()
	if l.pg.conn == nil {
		l.mu.Lock()
		closed := l.closed
		l.mu.Unlock()
		if closed {
			return errClosed
		}
		c, err := l.db.W.Conn(ctx)
		if err != nil {
			return err
		}
		l.pg.conn = c
		l.pg.gen++
	}
	err := fn(l.pg.conn, l.pg.gen)
	if err != nil && ctx.Err() == nil {
		l.pg.conn.Raw(func(any) error { return driver.ErrBadConn }) //nolint:errcheck // closes the connection
		l.pg.conn.Close()
		l.pg.conn = nil
	}
	return err
}

// takePostgres takes the advisory lock of key on the lease connection.
func (l *leases) takePostgres(ctx context.Context, key session.Key) (func(), error) {
	id := l.lockID(key)
	var gen int
	err := poll(ctx, func() (bool, error) {
		// The statement is not cut short by ctx: a lock taken by a
		// statement whose answer was lost would stay held.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), leaseStmtTimeout)
		defer cancel()
		var ok bool
		err := l.onLeaseConn(sctx, func(c *sql.Conn, g int) error {
			gen = g
			return c.QueryRowContext(sctx, "SELECT pg_try_advisory_lock($1)", id).Scan(&ok)
		})
		return ok, err
	})
	if err != nil {
		return nil, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), leaseStmtTimeout)
		defer cancel()
		l.onLeaseConn(ctx, func(c *sql.Conn, g int) error { //nolint:errcheck // a failure drops the connection, and the lock with it
			if g != gen {
				return nil // the lock went with the connection that held it
			}
			_, err := c.ExecContext(ctx, "SELECT pg_advisory_unlock($1)", id)
			return err
		})
	}, nil
}

// takeSQLite takes the lease row of key and starts renewing it.
func (s *Store) takeSQLite(ctx context.Context, key session.Key) (func(), error) {
	l := &s.leases
	var b [16]byte
	crand.Read(b[:]) //nolint:errcheck // never fails
	owner := hex.EncodeToString(b[:]) + ownerSuffix()
	k := key
	err := poll(ctx, func() (bool, error) {
		now := time.Now()
		n, err := s.leaseWrite(ctx, wLeaseTake, k.AppName, k.UserID, k.SessionID, owner, nanos(now.Add(l.ttl)), nanos(now))
		if n == 1 || err != nil {
			return n == 1, err
		}
		if gone, err := s.dropDeadLease(ctx, k); !gone || err != nil {
			return false, err
		}
		n, err = s.leaseWrite(ctx, wLeaseTake, k.AppName, k.UserID, k.SessionID, owner, nanos(now.Add(l.ttl)), nanos(now))
		return n == 1, err
	})
	if err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	l.mu.Lock()
	closed := l.closed
	if !closed {
		l.renewals.Add(1)
	}
	l.mu.Unlock()
	if closed {
		return nil, errClosed
	}
	go func() {
		defer l.renewals.Done()
		t := time.NewTicker(l.ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-l.done:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), l.ttl/3)
				// A failed renewal is tried again at the next tick; a lease
				// lost meanwhile leaves the sequence check as the guard.
				s.leaseWrite(ctx, wLeaseRenew, nanos(time.Now().Add(l.ttl)), k.AppName, k.UserID, k.SessionID, owner) //nolint:errcheck // see above
				cancel()
			}
		}
	}()
	return func() {
		close(stop)
		ctx, cancel := context.WithTimeout(context.Background(), leaseStmtTimeout)
		defer cancel()
		// On failure the row expires on its own.
		s.leaseWrite(ctx, wLeaseDrop, k.AppName, k.UserID, k.SessionID, owner) //nolint:errcheck // see above
	}, nil
}

// dropDeadLease deletes the SQLite lease of k if the process holding it has
// died (see ownerGone) and reports whether it did: a lease left by a
// crashed process does not hold the session until it expires.
func (s *Store) dropDeadLease(ctx context.Context, k session.Key) (bool, error) {
	var owner string
	err := s.db.R.QueryRowContext(ctx, `SELECT owner FROM session_leases WHERE `+sessionKey, k.AppName, k.UserID, k.SessionID).Scan(&owner)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return true, nil // released meanwhile: take it
	case err != nil:
		return false, err
	case !ownerGone(owner):
		return false, nil
	}
	n, err := s.leaseWrite(ctx, wLeaseDrop, k.AppName, k.UserID, k.SessionID, owner)
	return n == 1, err
}

// leaseWrite runs one lease statement in a write transaction and returns
// the number of rows it changed.
func (s *Store) leaseWrite(ctx context.Context, id int, args ...any) (int64, error) {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.end()
	res, err := tx.exec(id, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	if err := tx.commit(); err != nil {
		return 0, err
	}
	return n, nil
}

var _ session.Leaser = (*Store)(nil)
