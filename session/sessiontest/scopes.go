package sessiontest

import (
	"testing"

	"github.com/loomkit/loom/session"
)

// testS1TempKeys: temp: keys live only in the live session; the stored event
// and fresh reads never see them (S1).
func testS1TempKeys(t *testing.T, h *harness) {
	s := h.create(t, "u1", "s1", nil)
	ev := textEvent("ev-1", "hi", map[string]any{"temp:k": 1, "k": 2})
	h.appendEv(t, s, ev)

	wantValue(t, s, "temp:k", 1)
	wantValue(t, s, "k", 2)
	if !sameJSON(ev.Actions.StateDelta, map[string]any{"k": 2}) {
		t.Errorf("committed event delta = %s, want {\"k\":2}", canon(ev.Actions.StateDelta))
	}

	fresh := h.get(t, s.Key())
	wantAbsent(t, fresh, "temp:k")
	wantValue(t, fresh, "k", 2)
	evs := fresh.Events()
	wantIDs(t, "fresh read", evs, "ev-1")
	if len(evs) == 1 && !sameJSON(evs[0].Actions.StateDelta, map[string]any{"k": 2}) {
		t.Errorf("stored event delta = %s, want {\"k\":2}", canon(evs[0].Actions.StateDelta))
	}

	// A delta of only temp: keys is stored as an event with no state change.
	h.appendEv(t, s, textEvent("ev-2", "again", map[string]any{"temp:only": true}))
	wantValue(t, s, "temp:only", true)
	fresh = h.get(t, s.Key())
	wantAbsent(t, fresh, "temp:only")
	wantState(t, "after temp-only delta", fresh.State(), map[string]any{"k": 2})
	if evs := fresh.Events(); len(evs) == 2 && len(evs[1].Actions.StateDelta) != 0 {
		t.Errorf("stored temp-only delta = %s, want empty", canon(evs[1].Actions.StateDelta))
	}
}

// testS2Scopes: app: keys are shared across the app, user: keys across one
// user's sessions, plain keys stay in their session (S2).
func testS2Scopes(t *testing.T, h *harness) {
	ctx := t.Context()
	early := h.create(t, "u1", "early", nil) // exists before the write
	s1 := h.create(t, "u1", "s1", nil)
	h.appendEv(t, s1, textEvent("ev-1", "x", map[string]any{"app:k": "A", "user:k": "U", "k": "S"}))

	u1other := h.create(t, "u1", "s2", nil)
	wantValue(t, u1other, "app:k", "A")
	wantValue(t, u1other, "user:k", "U")
	wantAbsent(t, u1other, "k")

	earlyNow := h.get(t, early.Key())
	wantValue(t, earlyNow, "app:k", "A")
	wantValue(t, earlyNow, "user:k", "U")
	wantAbsent(t, earlyNow, "k")

	u2 := h.create(t, "u2", "s1", nil)
	wantValue(t, u2, "app:k", "A")
	wantAbsent(t, u2, "user:k")
	wantAbsent(t, u2, "k")

	other, err := h.svc.Create(ctx, session.Key{AppName: h.app + "_other", UserID: "u1", SessionID: "s1"}, nil)
	if err != nil {
		t.Fatalf("Create in other app: %v", err)
	}
	wantState(t, "session in another app", other.State(), map[string]any{})

	// Updates through one session reach the others' fresh reads.
	h.appendEv(t, u2, textEvent("ev-2", "y", map[string]any{"app:k": "A2", "user:k": "U2"}))
	got := h.get(t, s1.Key())
	wantState(t, "u1/s1 after u2 wrote", got.State(), map[string]any{"app:k": "A2", "user:k": "U", "k": "S"})
	got = h.get(t, u2.Key())
	wantState(t, "u2/s1", got.State(), map[string]any{"app:k": "A2", "user:k": "U2"})
}

// testS3CreateState: initial state is split by scope at creation (S3).
func testS3CreateState(t *testing.T, h *harness) {
	s := h.create(t, "u1", "s1", map[string]any{"app:a": 1, "user:b": 2, "c": 3, "temp:d": 4})
	wantState(t, "created session", s.State(), map[string]any{"app:a": 1, "user:b": 2, "c": 3})
	wantState(t, "fresh read", h.get(t, s.Key()).State(), map[string]any{"app:a": 1, "user:b": 2, "c": 3})
	if s.Len() != 0 {
		t.Errorf("new session has %d events, want 0", s.Len())
	}

	same := h.create(t, "u1", "s2", nil)
	wantState(t, "same user's new session", same.State(), map[string]any{"app:a": 1, "user:b": 2})
	other := h.create(t, "u2", "s3", nil)
	wantState(t, "other user's new session", other.State(), map[string]any{"app:a": 1})
}

// testS9NilDeletes: a nil value in a delta removes the key, in every scope;
// the stored event still records the deletion (S9).
func testS9NilDeletes(t *testing.T, h *harness) {
	s := h.create(t, "u1", "s1", map[string]any{"k": 1, "keep": 1, "app:a": 1, "user:u": 1, "gone": nil})
	wantState(t, "created", s.State(), map[string]any{"k": 1, "keep": 1, "app:a": 1, "user:u": 1})

	h.appendEv(t, s, textEvent("ev-1", "del", map[string]any{"k": nil, "app:a": nil, "user:u": nil, "never": nil}))
	want := map[string]any{"keep": 1}
	wantState(t, "live session", s.State(), want)
	fresh := h.get(t, s.Key())
	wantState(t, "fresh read", fresh.State(), want)
	wantState(t, "other session of the user", h.create(t, "u1", "s2", nil).State(), map[string]any{})

	evs := fresh.Events()
	if len(evs) != 1 {
		t.Fatalf("stored %d events, want 1", len(evs))
	}
	for _, k := range []string{"k", "app:a", "user:u"} {
		if v, ok := evs[0].Actions.StateDelta[k]; !ok || v != nil {
			t.Errorf("stored delta[%q] = %v (present %v), want nil", k, v, ok)
		}
	}
}
