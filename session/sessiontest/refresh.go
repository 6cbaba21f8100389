package sessiontest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/loomkit/loom/session"
)

// testRefreshIncremental: Refresh brings an outdated copy up to date with
// the events and state another copy committed, and drops local-only values.
func testRefreshIncremental(t *testing.T, h *harness) {
	h.create(t, "u1", "s1", map[string]any{"k": 0})
	a := h.get(t, h.key("u1", "s1"))
	b := h.get(t, h.key("u1", "s1"))
	h.appendEv(t, a, textEvent("ev-0", "a", map[string]any{"temp:t": 1}))
	a.SetLocal("staged", "x")
	if err := h.svc.Refresh(t.Context(), b); err != nil {
		t.Fatalf("Refresh b: %v", err)
	}
	wantIDs(t, "b after first refresh", b.Events(), "ev-0")

	var want []string
	want = append(want, "ev-0")
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("ev-%d", i)
		h.appendEv(t, b, textEvent(id, "b", map[string]any{"k": i, "user:u": i, "app:a": i}))
		want = append(want, id)
	}
	// Nothing new for b: Refresh is a no-op.
	bBefore := snap(b)
	if err := h.svc.Refresh(t.Context(), b); err != nil {
		t.Fatalf("Refresh b: %v", err)
	}
	wantUnchanged(t, "b refreshed without news", b, bBefore)

	if err := h.svc.Refresh(t.Context(), a); err != nil {
		t.Fatalf("Refresh a: %v", err)
	}
	wantIDs(t, "a after refresh", a.Events(), want...)
	wantState(t, "a after refresh", a.State(), map[string]any{"k": 3, "user:u": 3, "app:a": 3})
	wantAbsent(t, a, "temp:t")
	wantAbsent(t, a, "staged")
	if !a.LastUpdateTime().Equal(b.LastUpdateTime()) {
		t.Errorf("a LastUpdateTime = %v, want %v", a.LastUpdateTime(), b.LastUpdateTime())
	}

	// The refreshed copy can write again, and shared-scope changes made by
	// another session show up on Refresh even without new events here.
	h.appendEv(t, a, textEvent("ev-4", "a", nil))
	other := h.create(t, "u1", "s2", nil)
	h.appendEv(t, other, textEvent("ev-x", "o", map[string]any{"user:u": "other"}))
	if err := h.svc.Refresh(t.Context(), a); err != nil {
		t.Fatalf("Refresh a: %v", err)
	}
	wantValue(t, a, "user:u", "other")
	wantIDs(t, "a after own append", a.Events(), append(want, "ev-4")...)

	// A windowed copy refreshes by appending only what is new.
	w, err := h.svc.Get(t.Context(), a.Key(), &session.GetOptions{NumRecentEvents: 2})
	if err != nil {
		t.Fatal(err)
	}
	h.appendEv(t, a, textEvent("ev-5", "a", nil))
	if err := h.svc.Refresh(t.Context(), w); err != nil {
		t.Fatalf("Refresh windowed: %v", err)
	}
	wantIDs(t, "windowed copy after refresh", w.Events(), "ev-3", "ev-4", "ev-5")
}

// testRefreshDeleted: refreshing a deleted session fails with ErrNotFound.
func testRefreshDeleted(t *testing.T, h *harness) {
	s := h.create(t, "u1", "s1", nil)
	h.appendEv(t, s, textEvent("ev-1", "x", nil))
	if err := h.svc.Delete(t.Context(), s.Key()); err != nil {
		t.Fatal(err)
	}
	if err := h.svc.Refresh(t.Context(), s); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Refresh of deleted session = %v, want ErrNotFound", err)
	}
}

// testRefreshRecreated: a session deleted and created again under the same
// id is reloaded in full, whether it now has fewer or more events.
func testRefreshRecreated(t *testing.T, h *harness) {
	for _, n := range []int{1, 5} {
		t.Run(fmt.Sprintf("%d-events", n), func(t *testing.T) {
			id := fmt.Sprintf("s%d", n)
			s := h.create(t, "u1", id, map[string]any{"old": true})
			for i := range 3 {
				h.appendEv(t, s, textEvent(fmt.Sprintf("old-%d", i), "x", nil))
			}
			if err := h.svc.Delete(t.Context(), s.Key()); err != nil {
				t.Fatal(err)
			}
			again := h.create(t, "u1", id, map[string]any{"new": true})
			var want []string
			for i := range n {
				eid := fmt.Sprintf("new-%d", i)
				h.appendEv(t, again, textEvent(eid, "y", nil))
				want = append(want, eid)
			}
			if err := h.svc.Refresh(t.Context(), s); err != nil {
				t.Fatalf("Refresh: %v", err)
			}
			wantIDs(t, "refreshed copy", s.Events(), want...)
			wantState(t, "refreshed copy", s.State(), map[string]any{"new": true})
			h.appendEv(t, s, textEvent("after", "z", nil))
			wantIDs(t, "storage", h.get(t, s.Key()).Events(), append(want, "after")...)
		})
	}
}
