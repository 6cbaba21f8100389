package sessiontest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/loomkit/loom/session"
)

// testS4ConcurrentCreate: of many concurrent creations of one id exactly one
// succeeds; the others fail with ErrAlreadyExists (S4).
func testS4ConcurrentCreate(t *testing.T, h *harness) {
	const n = 8
	var ok, exists atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			_, err := h.svc.Create(t.Context(), h.key("u1", "race"), map[string]any{"winner": i, "user:w": i})
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, session.ErrAlreadyExists):
				exists.Add(1)
			default:
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent Create: %v", err)
	}
	if ok.Load() != 1 || exists.Load() != n-1 {
		t.Errorf("%d creations succeeded and %d failed with ErrAlreadyExists, want 1 and %d", ok.Load(), exists.Load(), n-1)
	}
	s := h.get(t, h.key("u1", "race"))
	w, _ := s.Get("winner")
	// The user scope holds the winner's value: a losing creation changed nothing.
	wantValue(t, s, "user:w", w)
}

// testOddKeys: ids with quotes, slashes, SQL wildcards and non-ASCII text
// are stored and matched exactly.
func testOddKeys(t *testing.T, h *harness) {
	users := []string{"x%", "x_", "xy", "o'brien", `back\slash`, "ünï/cødé 🙂"}
	ids := []string{"a'b", "c%d", "e_f", "g/h", " spaced ", "ünï 🙂"}
	for i, u := range users {
		s := h.create(t, u, ids[i], map[string]any{"owner": u})
		h.appendEv(t, s, textEvent("ev-"+fmt.Sprint(i), u, map[string]any{"user:" + u: ids[i]}))
	}
	for i, u := range users {
		res, err := h.svc.List(t.Context(), h.app, u, nil)
		if err != nil {
			t.Fatalf("List(%q): %v", u, err)
		}
		if got := sessionIDs(res.Sessions); !slices.Equal(got, []string{u + "/" + ids[i]}) {
			t.Errorf("List(%q) = %q", u, got)
		}
		s := h.get(t, h.key(u, ids[i]))
		wantState(t, "session of "+u, s.State(), map[string]any{"owner": u, "user:" + u: ids[i]})
		wantIDs(t, "session of "+u, s.Events(), "ev-"+fmt.Sprint(i))
	}
	if _, err := h.svc.Get(t.Context(), h.key("x%", "c%d"), nil); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Get with a wildcard id = %v, want ErrNotFound", err)
	}
	all, _ := listAll(t, h, "", 4)
	if len(all) != len(users) {
		t.Errorf("listed %d sessions, want %d", len(all), len(users))
	}
}

// testStateValues: state values of every JSON type survive storage.
func testStateValues(t *testing.T, h *harness) {
	values := map[string]any{
		"string":   "héllo \"wörld\"\n\t\u2028",
		"empty":    "",
		"int":      42,
		"neg":      -7,
		"float":    3.25,
		"big":      1e15,
		"bool":     true,
		"false":    false,
		"list":     []any{1, "two", nil, []any{}, map[string]any{}},
		"map":      map[string]any{"nested": map[string]any{"deep": []any{true}}, "snake_key": 1},
		"emptyMap": map[string]any{},
		"app:a":    []any{"x"},
		"user:u":   map[string]any{"k": "v"},
	}
	s := h.create(t, "u1", "s1", values)
	wantState(t, "created", s.State(), values)
	wantState(t, "fresh", h.get(t, s.Key()).State(), values)

	delta := map[string]any{}
	for k, v := range values {
		delta[k+"2"] = v
	}
	h.appendEv(t, s, textEvent("ev-1", "x", delta))
	got := h.get(t, s.Key())
	want := map[string]any{}
	for k, v := range values {
		want[k], want[k+"2"] = v, v
	}
	wantState(t, "after append", got.State(), want)
	if evs := got.Events(); len(evs) != 1 || !sameJSON(evs[0].Actions.StateDelta, delta) {
		t.Errorf("stored delta = %s, want %s", canon(evs[0].Actions.StateDelta), canon(delta))
	}
}
