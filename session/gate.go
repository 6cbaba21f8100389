package session

import (
	"context"
	"errors"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/loomkit/loom/event"
)

// gate makes contended appends to one session cheap: writers appending to
// the same session through one Service go to the store one at a time, and
// a writer whose copy is behind what this Service has already committed to
// the session fails with ErrStale at once, without a round trip to the
// store.
//
// Without it, under many writers of one session, each commit made every
// other writer's copy stale, and each of them still took the store's write
// path to learn it: on SQLite they queued, one write transaction each, for
// the single write lock ahead of the writers that had already refreshed;
// on PostgreSQL they passed the sequence check together and then waited
// on the winner's insert to fail on the primary key, holding pool
// connections and leaving dead rows. A stale attempt now costs a map
// lookup, and the store only sees appends that can succeed, except
// against other processes.
//
// An entry lives while some append of its session is under way, so the
// table stays as small as the number of sessions being written.
type gate struct {
	seed   maphash.Seed
	shards [gateShards]gateShard
}

const gateShards = 64

type gateShard struct {
	mu sync.Mutex
	m  map[Key]*gateEntry
}

// gateEntry is one session's turnstile. seq and created (Unix nanoseconds
// of the session's creation, which tells a recreated session apart) are
// the last commit through this Service; seq 0 means unknown.
type gateEntry struct {
	turn    chan struct{} // held during a store append
	refs    int           // guarded by the shard's mu
	seq     atomic.Int64
	created atomic.Int64

	// Refreshes (readAfter): the batch waiting for the read slot.
	fmu     sync.Mutex
	pending *flight
	slot    chan struct{}
}

var entryPool = sync.Pool{New: func() any {
	return &gateEntry{turn: make(chan struct{}, 1), slot: make(chan struct{}, 1)}
}}

func (g *gate) shard(k Key) *gateShard {
	var h maphash.Hash
	h.SetSeed(g.seed)
	h.WriteString(k.AppName)
	h.WriteByte(0)
	h.WriteString(k.UserID)
	h.WriteByte(0)
	h.WriteString(k.SessionID)
	return &g.shards[h.Sum64()%gateShards]
}

// enter returns the entry of k, holding a reference to it.
func (g *gate) enter(k Key) *gateEntry {
	sh := g.shard(k)
	sh.mu.Lock()
	e := sh.m[k]
	if e == nil {
		if sh.m == nil {
			sh.m = map[Key]*gateEntry{}
		}
		e = entryPool.Get().(*gateEntry)
		sh.m[k] = e
	}
	e.refs++
	sh.mu.Unlock()
	return e
}

// leave drops a reference taken by enter.
func (g *gate) leave(k Key, e *gateEntry) {
	sh := g.shard(k)
	sh.mu.Lock()
	e.refs--
	if e.refs == 0 {
		delete(sh.m, k)
		e.seq.Store(0)
		e.created.Store(0)
		e.pending = nil // a batch whose members all gave up
		entryPool.Put(e)
	}
	sh.mu.Unlock()
}

// behind reports whether a copy of the session at seq, created at created,
// is known to be stale: this Service has committed past it.
func (e *gateEntry) behind(seq, created int64) bool {
	known := e.seq.Load()
	return known > seq && e.created.Load() == created
}

// committed records a commit of seq through this Service.
func (e *gateEntry) committed(seq, created int64) {
	e.created.Store(created)
	e.seq.Store(seq)
}

// observed forgets what this Service committed if the store shows less for
// the same session: the session was deleted and created again elsewhere
// (with the same creation time), and the record would wrongly make every
// copy stale.
func (g *gate) observed(k Key, seq, created int64) {
	sh := g.shard(k)
	sh.mu.Lock()
	if e := sh.m[k]; e != nil && e.seq.Load() > seq && e.created.Load() == created {
		e.seq.Store(0)
	}
	sh.mu.Unlock()
}

// forget forgets what this Service committed to k (it deleted k).
func (g *gate) forget(k Key) {
	sh := g.shard(k)
	sh.mu.Lock()
	if e := sh.m[k]; e != nil {
		e.seq.Store(0)
	}
	sh.mu.Unlock()
}

// Refreshes of one session through one Service share their reads: a
// refresh joins the batch of refreshes waiting for the session's read slot,
// and one of them, holding the slot, reads once, from the lowest sequence
// number of the batch, for all. A read starts only after every refresh of
// its batch was called, so each sees every commit that preceded its call.
// Under many writers of one session, the writers a commit made stale then
// cost one read between them instead of one each.

// flight is one batch of refreshes and its read.
type flight struct {
	after int64 // the lowest sequence number of the batch
	done  chan struct{}
	rec   *Record
	err   error
}

// readAfter returns the session's record with the events after seq (and
// those events, which are the caller's own slice; the record's maps and
// events are shared with the rest of the batch and must not be modified).
func (s *Service) readAfter(ctx context.Context, k Key, seq int64) (*Record, []*event.Event, error) {
	e := s.gate.enter(k)
	defer s.gate.leave(k, e)
	e.fmu.Lock()
	f := e.pending
	if f == nil {
		// No batch is waiting: with the slot free, this refresh reads
		// alone, and what it reads is all its own.
		select {
		case e.slot <- struct{}{}:
			e.fmu.Unlock()
			rec, err := s.store.GetSession(ctx, k, Window{AfterSeq: seq})
			<-e.slot
			if err != nil {
				return nil, nil, err
			}
			return rec, rec.Events, nil
		default:
		}
		f = &flight{after: seq, done: make(chan struct{})}
		e.pending = f
	}
	f.after = min(f.after, seq)
	e.fmu.Unlock()

	select {
	case e.slot <- struct{}{}:
		select {
		case <-f.done: // read by another member while this one waited
		default:
			// This refresh reads for its batch; later ones form the next.
			e.fmu.Lock()
			if e.pending == f {
				e.pending = nil
			}
			e.fmu.Unlock()
			f.rec, f.err = s.store.GetSession(ctx, k, Window{AfterSeq: f.after})
			close(f.done)
		}
		<-e.slot
	case <-f.done:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	rec, err := f.rec, f.err
	if err != nil && ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		// The member that read gave up; this one has not.
		rec, err = s.store.GetSession(ctx, k, Window{AfterSeq: seq})
		if err != nil {
			return nil, nil, err
		}
		return rec, rec.Events, nil
	}
	if err != nil {
		return nil, nil, err
	}
	if rec.Seq < seq || int64(len(rec.Events)) != rec.Seq-f.after {
		// Not the contiguous run expected (the session was recreated,
		// say): this refresh reads on its own.
		rec, err = s.store.GetSession(ctx, k, Window{AfterSeq: seq})
		if err != nil {
			return nil, nil, err
		}
		return rec, rec.Events, nil
	}
	return rec, append([]*event.Event(nil), rec.Events[seq-f.after:]...), nil
}
