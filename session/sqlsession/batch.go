package sqlsession

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
)

// Group commit. On a SQLite file most of an append's time is its COMMIT
// (writing the WAL frames), so appends that arrive together share one: the
// caller that finds no append in progress takes the turn and leads; those
// that arrive meanwhile queue, and the next leader runs them all (up to
// maxBatch) in its transaction, after its own. Each append keeps its own
// outcome: one refused (ErrNotFound, ErrStale, ErrAlreadyExists) wrote
// nothing and leaves the others be; after any other error the batch is
// rolled back and each of its appends runs again alone, so that no append
// fails for another's error; a failed COMMIT fails them all, and stores
// none of them. A lone append runs the statements it would run alone.

// maxBatch bounds the appends of one transaction.
const maxBatch = 64

// appendArgs are the arguments of one append, encoded.
type appendArgs struct {
	key     session.Key
	created time.Time
	seq     int64
	ev      *event.Event
	data    []byte
	changes []change
}

// queued is an append waiting for its turn or for the outcome of the batch
// that took it.
type queued struct {
	ctx context.Context
	a   appendArgs
	err error // its outcome, once woken
	// lead, once woken, says that it was not taken into a batch but given
	// the turn.
	lead bool
	wake chan struct{} // one send: the outcome is in, or the turn is given
}

var queuedPool = sync.Pool{New: func() any { return &queued{wake: make(chan struct{}, 1)} }}

// appendQueue holds the turn of the appends on the pinned connection and
// the appends waiting for it.
type appendQueue struct {
	mu      sync.Mutex
	busy    bool // an append holds the turn
	waiting []*queued
	// batch holds the appends the turn's holder took, until it has given
	// them their outcomes (reused: the turn passes on only after that).
	batch []*queued
	// commits counts the COMMITs of append transactions.
	commits atomic.Int64
}

// errInterrupted is the outcome of a queued append whose batch ended
// without one (a panic in its leader).
var errInterrupted = errors.New("sqlsession: append interrupted")

// appendBatched is AppendEvent on the pinned connection: it waits for the
// turn, unless its append is taken into another's batch meanwhile, and
// then leads a batch.
func (s *Store) appendBatched(ctx context.Context, a *appendArgs) error {
	q := &s.appends
	q.mu.Lock()
	if q.busy {
		w := queuedPool.Get().(*queued)
		w.ctx, w.a = ctx, *a
		q.waiting = append(q.waiting, w)
		q.mu.Unlock()
		if done, err := q.wait(w); done {
			return err
		}
	} else {
		q.busy = true
		q.mu.Unlock()
	}
	defer q.pass()
	return s.appendTx(ctx, a, true)
}

// wait waits until w is given the turn (done false: the caller leads) or
// its outcome is in (done true), and recycles w. A caller whose context
// ends while w is still waiting withdraws it.
func (q *appendQueue) wait(w *queued) (done bool, err error) {
	select {
	case <-w.wake:
	case <-w.ctx.Done():
		q.mu.Lock()
		if i := slices.Index(q.waiting, w); i >= 0 {
			q.waiting = slices.Delete(q.waiting, i, i+1)
			q.mu.Unlock()
			err = fmt.Errorf("sqlsession: append: %w", w.ctx.Err())
			w.recycle()
			return true, err
		}
		q.mu.Unlock()
		<-w.wake // taken or given the turn meanwhile
	}
	err, lead, ctx := w.err, w.lead, w.ctx
	w.recycle()
	if !lead {
		return true, err
	}
	if err := ctx.Err(); err != nil {
		q.pass()
		return true, fmt.Errorf("sqlsession: append: %w", err)
	}
	return false, nil
}

// recycle clears w and returns it to the pool.
func (w *queued) recycle() {
	w.ctx, w.a, w.err, w.lead = nil, appendArgs{}, nil, false
	queuedPool.Put(w)
}

// take removes up to maxBatch-1 waiting appends from the queue, which the
// caller, holding the turn, runs in its transaction.
func (q *appendQueue) take() []*queued {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(len(q.waiting), maxBatch-1)
	q.batch = append(q.batch[:0], q.waiting[:n]...)
	rest := copy(q.waiting, q.waiting[n:])
	clear(q.waiting[rest:])
	q.waiting = q.waiting[:rest]
	for _, w := range q.batch {
		w.err = errInterrupted
	}
	return q.batch
}

// finish gives the taken appends their outcomes.
func (q *appendQueue) finish(batch []*queued) {
	for i, w := range batch {
		batch[i] = nil
		w.wake <- struct{}{}
	}
}

// pass gives the turn to the first waiting append, if any.
func (q *appendQueue) pass() {
	q.mu.Lock()
	if len(q.waiting) == 0 {
		q.busy = false
		q.mu.Unlock()
		return
	}
	w := q.waiting[0]
	n := copy(q.waiting, q.waiting[1:])
	q.waiting[n] = nil
	q.waiting = q.waiting[:n]
	q.mu.Unlock()
	w.lead = true
	w.wake <- struct{}{}
}

// appendTx runs append a in one write transaction, with, if batch is set,
// the appends waiting once the transaction has begun (the caller holds the
// turn).
func (s *Store) appendTx(ctx context.Context, a *appendArgs, batch bool) error {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return err
	}
	var others []*queued
	if batch {
		others = s.appends.take()
		defer s.appends.finish(others)
	}
	defer tx.end()
	refused, err := appendIn(&tx, a)
	inserted := refused == nil
	for i := 0; err == nil && i < len(others); i++ {
		others[i].err, err = appendIn(&tx, &others[i].a)
		inserted = inserted || others[i].err == nil
	}
	switch {
	case err != nil && len(others) > 0:
		// Whose error it is is not known for sure: each runs alone.
		tx.end()
		for _, w := range others {
			w.err = s.appendTx(w.ctx, &w.a, false)
		}
		return s.appendTx(ctx, a, false)
	case err != nil:
		return err
	case !inserted:
		return refused
	}
	s.appends.commits.Add(1)
	if err := tx.commit(); err != nil {
		err = fmt.Errorf("sqlsession: commit: %w", err)
		for _, w := range others {
			w.err = err
		}
		return err
	}
	return refused
}

// appendIn runs the statements of append a in tx. refused says why the
// event was not inserted (session.ErrNotFound, ErrStale or
// ErrAlreadyExists), in which case a wrote nothing; err is any other
// failure, after which the transaction must be rolled back.
func appendIn(tx *wtx, a *appendArgs) (refused, err error) {
	k := a.key
	res, err := tx.exec(wInsertEvent, insertEventArgs(k, a.created, a.seq, a.ev, a.data)...)
	if err != nil {
		return nil, fmt.Errorf("sqlsession: insert event: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, fmt.Errorf("sqlsession: insert event: %w", err)
	}
	if n == 0 {
		err := whyNotAppended(tx.queryRow(wExistsSession, k.AppName, k.UserID, k.SessionID), a.created, a.seq)
		if errors.Is(err, session.ErrNotFound) || errors.Is(err, session.ErrStale) || errors.Is(err, session.ErrAlreadyExists) {
			return err, nil
		}
		return nil, err
	}
	return nil, applyChanges(tx, k, a.changes)
}
