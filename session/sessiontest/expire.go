package sessiontest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/loomkit/loom/session"
)

// testS14Expiry: Expired yields the app's sessions, of every user, last
// updated before the cutoff (an event counts, creation too), in key order;
// DeleteIfIdle deletes such a session (its events and session state; app
// and user state stay), keeps one updated since, and keeps the session
// when the caller's own deletion fails.
func testS14Expiry(t *testing.T, h *harness) {
	ctx := t.Context()
	old := h.create(t, "u1", "old", map[string]any{"k": "v", "user:name": "Ann", "app:plan": "pro"})
	h.appendEv(t, old, textEvent("o1", "hi", nil))
	h.create(t, "u2", "old", nil)
	revived := h.create(t, "u2", "revived", nil)
	h.create(t, "u3", "kept", nil) // its deletion will fail
	if _, err := h.svc.Create(ctx, session.Key{AppName: h.app + "_other", UserID: "u1", SessionID: "old"}, nil); err != nil {
		t.Fatal(err)
	}
	h.ticks.Add(int64(time.Hour / time.Millisecond))
	cutoff := base.Add(30 * time.Minute)
	h.appendEv(t, revived, textEvent("r1", "back", nil))
	h.create(t, "u1", "fresh", nil)

	var got []session.Key
	for k, err := range h.svc.Expired(ctx, h.app, cutoff) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, k)
	}
	want := []session.Key{h.key("u1", "old"), h.key("u2", "old"), h.key("u3", "kept")}
	if !slices.Equal(got, want) {
		t.Fatalf("Expired = %v, want %v", got, want)
	}

	calls := 0
	count := func(context.Context) error { calls++; return nil }
	for _, k := range want[:2] {
		deleted, err := h.svc.DeleteIfIdle(ctx, k, cutoff, count)
		if err != nil || !deleted {
			t.Fatalf("DeleteIfIdle(%v) = %v, %v", k, deleted, err)
		}
		if _, err := h.svc.Get(ctx, k, nil); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("Get(%v) after expiry: %v, want ErrNotFound", k, err)
		}
	}
	if calls != 2 {
		t.Errorf("also ran %d times, want 2", calls)
	}
	boom := errors.New("boom")
	if deleted, err := h.svc.DeleteIfIdle(ctx, h.key("u3", "kept"), cutoff, func(context.Context) error { return boom }); deleted || !errors.Is(err, boom) {
		t.Errorf("DeleteIfIdle with a failing also = %v, %v", deleted, err)
	}
	h.get(t, h.key("u3", "kept"))
	for _, k := range []session.Key{h.key("u2", "revived"), h.key("u1", "fresh"), h.key("u9", "missing")} {
		deleted, err := h.svc.DeleteIfIdle(ctx, k, cutoff, func(context.Context) error { t.Errorf("also ran for %v", k); return nil })
		if deleted || err != nil {
			t.Errorf("DeleteIfIdle(%v) = %v, %v; want kept", k, deleted, err)
		}
	}
	h.get(t, h.key("u2", "revived"))
	// A new session under the expired key starts without the old session
	// state; the user's and the app's state are theirs and stay.
	again := h.create(t, "u1", "old", nil)
	wantState(t, "recreated", again.State(), map[string]any{"user:name": "Ann", "app:plan": "pro"})
	if again.Len() != 0 {
		t.Errorf("recreated session has %d events", again.Len())
	}
}
