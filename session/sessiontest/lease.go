package sessiontest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/loomkit/loom/session"
)

// leaseWait is how long a lease case waits to conclude that a Lease call
// is blocked (and, ten times over, to conclude that it never returned).
const leaseWait = 150 * time.Millisecond

// testLeaseOneService: through one service, Service.Lease is exclusive per
// session for a store that implements session.Leaser (a second holder
// waits, bounded by its context, and gets the lease once it is released,
// even if the first holder's context has ended meanwhile), and a no-op for
// a store that does not.
func testLeaseOneService(t *testing.T, h *harness) {
	ctx := t.Context()
	key := h.key("u1", "leased") // no such session: leases do not need one
	if _, ok := h.store.(session.Leaser); !ok {
		if h.svc.Leases() {
			t.Error("Leases() = true for a store without session.Leaser")
		}
		r1, err := h.svc.Lease(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := h.svc.Lease(ctx, key)
		if err != nil {
			t.Fatalf("Lease without a Leaser store must not wait: %v", err)
		}
		r1()
		r2()
		r1()
		return
	}
	if !h.svc.Leases() {
		t.Error("Leases() = false for a store with session.Leaser")
	}
	if _, err := h.svc.Lease(ctx, session.Key{AppName: h.app, UserID: "u1"}); !errors.Is(err, session.ErrInvalid) {
		t.Errorf("Lease without a session id: %v, want ErrInvalid", err)
	}
	holderCtx, cancelHolder := context.WithCancel(ctx)
	release, err := h.svc.Lease(holderCtx, key)
	if err != nil {
		t.Fatal(err)
	}
	wantBlocked(t, h.svc, key)
	// Another session's lease is independent.
	other, err := h.svc.Lease(ctx, h.key("u1", "other"))
	if err != nil {
		t.Fatalf("lease of another session: %v", err)
	}
	other()
	// The holder's context ending does not end the lease: only release does.
	cancelHolder()
	wantBlocked(t, h.svc, key)
	got := leaseAsync(ctx, h.svc, key)
	select {
	case r := <-got:
		t.Fatalf("second holder got the lease while it was held (err %v)", r.err)
	case <-time.After(leaseWait):
	}
	release()
	release() // twice is harmless
	r := waitLease(t, got)
	r.release()
	// After release, a new holder gets it at once.
	again, err := h.svc.Lease(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	again()
}

type leaseResult struct {
	release func()
	err     error
}

// leaseAsync calls Lease in a goroutine and delivers its result.
func leaseAsync(ctx context.Context, svc *session.Service, key session.Key) <-chan leaseResult {
	ch := make(chan leaseResult, 1)
	go func() {
		r, err := svc.Lease(ctx, key)
		ch <- leaseResult{r, err}
	}()
	return ch
}

func waitLease(t *testing.T, ch <-chan leaseResult) leaseResult {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("waiting holder: %v", r.err)
		}
		return r
	case <-time.After(100 * leaseWait):
		t.Fatal("the waiting holder did not get the lease after it was released")
	}
	return leaseResult{}
}

// wantBlocked checks that a Lease of key through svc waits until its
// context ends, with an error wrapping the context's.
func wantBlocked(t *testing.T, svc *session.Service, key session.Key) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), leaseWait)
	defer cancel()
	start := time.Now()
	r, err := svc.Lease(ctx, key)
	if err == nil {
		r()
		t.Fatal("Lease of a held session succeeded")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Lease of a held session: %v, want an error wrapping context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d < leaseWait/2 || d > 20*leaseWait {
		t.Errorf("Lease gave up after %v, want about %v (its context)", d, leaseWait)
	}
}

// RunLease runs the lease cases for a backend whose stores implement
// session.Leaser and can be shared by several processes. newStores returns
// two stores over one database, opened independently as two server
// replicas would open them; the backend registers their cleanup.
func RunLease(t *testing.T, newStores func(t *testing.T) (a, b session.Store)) {
	t.Helper()
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, a, b *harness)
	}{
		{"LeaseExclusiveAcrossStores", testLeaseExclusive},
		{"LeaseTurnsSerialize", testLeaseTurns},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sa, sb := newStores(t)
			for _, st := range []session.Store{sa, sb} {
				if _, ok := st.(session.Leaser); !ok {
					t.Fatalf("store %T does not implement session.Leaser", st)
				}
			}
			a, b := newHarness(t, sa), newHarness(t, sb)
			b.app = a.app
			tc.fn(t, a, b)
		})
	}
}

// testLeaseExclusive: a lease held through one store blocks the other
// store (its Lease waits until its context ends), the other gets it once
// released, and a holder's context ending does not end the lease.
func testLeaseExclusive(t *testing.T, a, b *harness) {
	ctx := t.Context()
	key := a.key("u1", "s1")
	hctx, cancel := context.WithCancel(ctx)
	release, err := a.svc.Lease(hctx, key)
	if err != nil {
		t.Fatal(err)
	}
	wantBlocked(t, b.svc, key)
	cancel()
	got := leaseAsync(ctx, b.svc, key)
	select {
	case r := <-got:
		t.Fatalf("the other store got a held lease (err %v)", r.err)
	case <-time.After(leaseWait):
	}
	release()
	r := waitLease(t, got)
	wantBlocked(t, a.svc, key)
	r.release()
	r2, err := a.svc.Lease(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	r2()
}

// testLeaseTurns: writers on two stores run turns on one session, each turn
// leased: lease, refresh the writer's copy, append two events, release.
// No append is ever stale, each turn's events are adjacent in the log, and
// turns that give up waiting for the lease (their context ends) store
// nothing.
func testLeaseTurns(t *testing.T, a, b *harness) {
	ctx := t.Context()
	a.create(t, "u1", "s1", nil)
	key := a.key("u1", "s1")
	const writersPerStore, turns = 2, 8
	var (
		wg   sync.WaitGroup
		errs = make(chan error, 3*writersPerStore)
	)
	turn := func(ctx context.Context, h *harness, s *session.Session, id string) error {
		release, err := h.svc.Lease(ctx, key)
		if err != nil {
			if ctx.Err() != nil {
				return nil // gave up: nothing stored
			}
			return err
		}
		defer release()
		if err := h.svc.Refresh(t.Context(), s); err != nil {
			return err
		}
		for part := range 2 {
			ev := textEvent(fmt.Sprintf("%s.%d", id, part), id, map[string]any{"last": id})
			if err := h.svc.AppendEvent(t.Context(), s, ev); err != nil {
				return fmt.Errorf("turn %s: append under the lease: %w", id, err)
			}
		}
		return nil
	}
	for si, h := range []*harness{a, b} {
		for w := range writersPerStore {
			wg.Go(func() {
				s, err := h.svc.Get(ctx, key, nil)
				if err != nil {
					errs <- err
					return
				}
				for i := range turns {
					if err := turn(ctx, h, s, fmt.Sprintf("s%dw%d-%d", si, w, i)); err != nil {
						errs <- err
						return
					}
				}
			})
			// An impatient writer: each of its turns gives up almost
			// at once, usually before it gets the lease.
			wg.Go(func() {
				s, err := h.svc.Get(ctx, key, nil)
				if err != nil {
					errs <- err
					return
				}
				for i := range turns {
					c, cancel := context.WithTimeout(ctx, time.Millisecond)
					err := turn(c, h, s, fmt.Sprintf("s%dx%d-%d", si, w, i))
					cancel()
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	evs := a.get(t, key).Events()
	if len(evs) < 2*2*writersPerStore*turns || len(evs)%2 != 0 {
		t.Fatalf("%d events stored, want at least %d, and whole turns", len(evs), 2*2*writersPerStore*turns)
	}
	seen := map[string]bool{}
	for i := 0; i < len(evs); i += 2 {
		first, second := evs[i].ID, evs[i+1].ID
		if len(first) < 2 || first[len(first)-2:] != ".0" || second != first[:len(first)-2]+".1" {
			t.Fatalf("events %d and %d are %s and %s: a turn was interleaved with another", i, i+1, first, second)
		}
		if seen[first] {
			t.Fatalf("turn %s stored twice", first)
		}
		seen[first] = true
	}
}
