package session_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// countingStore counts the store calls a service makes.
type countingStore struct {
	session.Store
	appends, reads atomic.Int64
	readDelay      time.Duration
	// gate, when set, holds appends until closed; entered tells of each.
	gate, entered chan struct{}
}

func (c *countingStore) AppendEvent(ctx context.Context, k session.Key, created time.Time, seq int64, ev *event.Event, d session.Delta) error {
	c.appends.Add(1)
	if c.gate != nil {
		select {
		case c.entered <- struct{}{}:
		default:
		}
		<-c.gate
	}
	return c.Store.AppendEvent(ctx, k, created, seq, ev, d)
}

func (c *countingStore) GetSession(ctx context.Context, k session.Key, w session.Window) (*session.Record, error) {
	c.reads.Add(1)
	time.Sleep(c.readDelay)
	return c.Store.GetSession(ctx, k, w)
}

// TestStaleCopyFailsWithoutStoreCall: writers of one session through one
// service reach the store one at a time, and one whose copy is behind what
// the service has committed meanwhile fails with ErrStale without a store
// call.
func TestStaleCopyFailsWithoutStoreCall(t *testing.T) {
	ctx := t.Context()
	st := &countingStore{Store: memsession.New(), gate: make(chan struct{}), entered: make(chan struct{}, 1)}
	svc := session.NewService(st, nil)
	key := session.Key{AppName: "a", UserID: "u", SessionID: "s"}
	if _, err := svc.Create(ctx, key, nil); err != nil {
		t.Fatal(err)
	}
	a, _ := svc.Get(ctx, key, nil)
	b, _ := svc.Get(ctx, key, nil)
	first := make(chan error, 1)
	go func() { first <- svc.AppendEvent(ctx, a, event.NewModelText("i", "x", "one")) }()
	<-st.entered // a is in the store, holding the session's turn
	second := make(chan error, 1)
	go func() { second <- svc.AppendEvent(ctx, b, event.NewModelText("i", "x", "two")) }()
	time.Sleep(50 * time.Millisecond) // b waits for its turn
	if n := st.appends.Load(); n != 1 {
		t.Fatalf("%d appends reached the store at once, want 1", n)
	}
	close(st.gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; !errors.Is(err, session.ErrStale) {
		t.Fatalf("append through a stale copy: %v, want ErrStale", err)
	}
	if n := st.appends.Load(); n != 1 {
		t.Errorf("the stale append reached the store (%d store appends)", n)
	}
	if err := svc.Refresh(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := svc.AppendEvent(ctx, b, event.NewModelText("i", "x", "two")); err != nil || b.Len() != 2 {
		t.Fatalf("append after refresh: %v (%d events)", err, b.Len())
	}
}

// TestConcurrentRefreshesShareReads: many copies of one session made
// stale by one commit refresh with far fewer reads than copies, and each
// ends up with exactly the stored events.
func TestConcurrentRefreshesShareReads(t *testing.T) {
	ctx := t.Context()
	st := &countingStore{Store: memsession.New()}
	svc := session.NewService(st, nil)
	key := session.Key{AppName: "a", UserID: "u", SessionID: "s"}
	if _, err := svc.Create(ctx, key, nil); err != nil {
		t.Fatal(err)
	}
	const copies = 32
	ss := make([]*session.Session, copies)
	for i := range ss {
		ss[i], _ = svc.Get(ctx, key, nil)
	}
	w, _ := svc.Get(ctx, key, nil)
	for i := range 3 {
		ev := event.NewModelText("i", "x", fmt.Sprint(i))
		ev.Actions.StateDelta = map[string]any{"k": i}
		if err := svc.AppendEvent(ctx, w, ev); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// Some copies are one event behind, the others three.
			for _, s := range ss[:copies/2] {
				if err := svc.Refresh(ctx, s); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	st.reads.Store(0)
	st.readDelay = 20 * time.Millisecond
	var wg sync.WaitGroup
	for _, s := range ss {
		wg.Go(func() {
			if err := svc.Refresh(ctx, s); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := st.reads.Load(); n > copies/4 {
		t.Errorf("%d concurrent refreshes made %d reads, want them batched", copies, n)
	}
	for i, s := range ss {
		if s.Len() != 3 || fmt.Sprint(s.At(0).Content.Parts[0].Text, s.At(2).Content.Parts[0].Text) != "02" {
			t.Fatalf("copy %d: %d events after refresh, want 3 in order", i, s.Len())
		}
		if v, _ := s.Get("k"); v != 2.0 {
			t.Fatalf("copy %d: k = %v, want 2", i, v)
		}
	}
}

// TestRecreatedSessionNotStaleForever: a session deleted and created again
// by another service, with the same creation time (a frozen clock), is not
// taken as stale forever by a service that committed past its new length.
func TestRecreatedSessionNotStaleForever(t *testing.T) {
	ctx := t.Context()
	frozen := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	st := memsession.New()
	opts := &session.Options{Now: func() time.Time { return frozen }}
	svc, other := session.NewService(st, opts), session.NewService(st, opts)
	key := session.Key{AppName: "a", UserID: "u", SessionID: "s"}
	s1, err := svc.Create(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A second writer keeps the gate entry of the session alive.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	s2, _ := svc.Get(ctx, key, nil)
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := svc.Refresh(ctx, s2); err != nil && !errors.Is(err, session.ErrNotFound) {
				t.Error(err)
				return
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()
	for range 3 {
		if err := svc.AppendEvent(ctx, s1, event.NewModelText("i", "x", "t")); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.Delete(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Create(ctx, key, nil); err != nil {
		t.Fatal(err)
	}
	fresh, err := svc.Get(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 0; ; attempt++ {
		err := svc.AppendEvent(ctx, fresh, event.NewModelText("i", "x", "again"))
		if err == nil {
			break
		}
		if !errors.Is(err, session.ErrStale) || attempt == 3 {
			t.Fatalf("append to the recreated session, attempt %d: %v", attempt, err)
		}
		if err := svc.Refresh(ctx, fresh); err != nil {
			t.Fatal(err)
		}
	}
}
