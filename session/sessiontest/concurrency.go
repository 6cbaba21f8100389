package sessiontest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
)

// commit records where a writer's append landed.
type commit struct {
	pos int
	id  string
}

// appendRetrying appends ev through s, refreshing s and retrying while the
// append fails with ErrStale. It returns the event's position in the log,
// which is known because s holds every event when it succeeds.
func appendRetrying(h *harness, t *testing.T, s *session.Session, ev *event.Event) (int, error) {
	for attempt := 0; ; attempt++ {
		err := h.svc.AppendEvent(t.Context(), s, ev)
		if err == nil {
			return s.Len() - 1, nil
		}
		if !errors.Is(err, session.ErrStale) || attempt > 10000 {
			return 0, err
		}
		if err := h.svc.Refresh(t.Context(), s); err != nil {
			return 0, err
		}
	}
}

// testS7ConcurrentCopies: writers with their own copies of one session race;
// each retries on ErrStale. Nothing is lost or duplicated, the log order is
// the commit order, and the state is the fold of the committed deltas (S7).
func testS7ConcurrentCopies(t *testing.T, h *harness) {
	const writers, perWriter = 4, 15
	initial := map[string]any{"init": true}
	h.create(t, "u1", "s1", initial)

	var (
		mu      sync.Mutex
		commits []commit
		wg      sync.WaitGroup
		errs    = make(chan error, writers)
	)
	for w := range writers {
		wg.Go(func() {
			s, err := h.svc.Get(t.Context(), h.key("u1", "s1"), nil)
			if err != nil {
				errs <- err
				return
			}
			for i := range perWriter {
				id := fmt.Sprintf("w%d-%03d", w, i)
				ev := textEvent(id, id, map[string]any{
					"last":                       id,
					fmt.Sprintf("w%d", w):        i,
					fmt.Sprintf("user:w%d", w):   i,
					"app:last":                   id,
					fmt.Sprintf("temp:w%d", w):   i,
					fmt.Sprintf("gone%d", i%3):   nil,
					fmt.Sprintf("gone%d", i%3+1): i,
				})
				pos, err := appendRetrying(h, t, s, ev)
				if err != nil {
					errs <- fmt.Errorf("writer %d event %d: %w", w, i, err)
					return
				}
				mu.Lock()
				commits = append(commits, commit{pos, id})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	stored := h.get(t, h.key("u1", "s1"))
	evs := stored.Events()
	if len(evs) != writers*perWriter {
		t.Fatalf("stored %d events, want %d", len(evs), writers*perWriter)
	}
	seen := map[string]bool{}
	for _, e := range evs {
		if seen[e.ID] {
			t.Errorf("event %s stored twice", e.ID)
		}
		seen[e.ID] = true
	}
	for _, c := range commits {
		if evs[c.pos].ID != c.id {
			t.Errorf("event %s committed at position %d, stored there: %s", c.id, c.pos, evs[c.pos].ID)
		}
	}
	// Each writer's events keep their order.
	next := make([]int, writers)
	for _, e := range evs {
		var w, i int
		if _, err := fmt.Sscanf(e.ID, "w%d-%d", &w, &i); err != nil || w >= writers {
			t.Fatalf("unexpected event id %q", e.ID)
		}
		if i != next[w] {
			t.Errorf("writer %d: event %d stored where %d was expected", w, i, next[w])
		}
		next[w] = i + 1
	}
	// The state is the fold of the stored deltas over the initial state.
	fold := maps.Clone(initial)
	for _, e := range evs {
		for k := range e.Actions.StateDelta {
			if len(k) >= 5 && k[:5] == session.PrefixTemp {
				t.Errorf("event %s stored temp key %q", e.ID, k)
			}
		}
		session.ApplyDelta(fold, e.Actions.StateDelta)
	}
	wantState(t, "final state", stored.State(), fold)
	if got, _ := stored.Get("last"); got != evs[len(evs)-1].ID {
		t.Errorf("last = %v, want the last stored event %s", got, evs[len(evs)-1].ID)
	}
}

// testS7SharedCopy: goroutines appending through one shared copy are
// serialized by it and never see ErrStale (S7).
func testS7SharedCopy(t *testing.T, h *harness) {
	const writers, perWriter = 4, 10
	s := h.create(t, "u1", "s1", nil)
	var wg sync.WaitGroup
	errs := make(chan error, writers*perWriter)
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				ev := textEvent(fmt.Sprintf("w%d-%d", w, i), "x", map[string]any{fmt.Sprintf("w%d", w): i})
				if err := h.svc.AppendEvent(t.Context(), s, ev); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("append through shared copy: %v", err)
	}
	stored := h.get(t, s.Key())
	if got, want := eventIDs(stored.Events()), eventIDs(s.Events()); !slices.Equal(got, want) || len(got) != writers*perWriter {
		t.Errorf("stored %d events %v; shared copy holds %d %v", len(got), got, len(want), want)
	}
	want := map[string]any{}
	for w := range writers {
		want[fmt.Sprintf("w%d", w)] = perWriter - 1
	}
	wantState(t, "stored", stored.State(), want)
	wantState(t, "shared copy", s.State(), want)
}

// testS7ManySessions: writers on many sessions of several users append
// concurrently, each also writing app: and user: keys. Every session ends
// with exactly its events in order, and no shared-scope write is lost (S7).
func testS7ManySessions(t *testing.T, h *harness) {
	const users, perUser, events = 3, 2, 20
	type sk struct{ user, id string }
	var keys []sk
	for u := range users {
		for i := range perUser {
			k := sk{fmt.Sprintf("u%d", u), fmt.Sprintf("s%d", i)}
			h.create(t, k.user, k.id, nil)
			keys = append(keys, k)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(keys))
	for _, k := range keys {
		wg.Go(func() {
			s, err := h.svc.Get(t.Context(), h.key(k.user, k.id), nil)
			if err != nil {
				errs <- err
				return
			}
			tag := k.user + "_" + k.id
			for i := range events {
				ev := textEvent(fmt.Sprintf("%s-%03d", tag, i), "x", map[string]any{
					"n":              i,
					"user:" + k.id:   i,
					"app:" + tag:     i,
					"app:shared_any": tag,
				})
				if _, err := appendRetrying(h, t, s, ev); err != nil {
					errs <- fmt.Errorf("%s event %d: %w", tag, i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	tags := map[string]bool{}
	for _, k := range keys {
		tag := k.user + "_" + k.id
		tags[tag] = true
		s := h.get(t, h.key(k.user, k.id))
		var want []string
		for i := range events {
			want = append(want, fmt.Sprintf("%s-%03d", tag, i))
		}
		wantIDs(t, tag, s.Events(), want...)
		wantValue(t, s, "n", events-1)
		for i := range perUser {
			wantValue(t, s, fmt.Sprintf("user:s%d", i), events-1)
		}
		for _, k2 := range keys {
			wantValue(t, s, "app:"+k2.user+"_"+k2.id, events-1)
		}
		if v, ok := s.Get("app:shared_any"); !ok || !tags[fmt.Sprint(v)] && !slices.ContainsFunc(keys, func(k sk) bool { return k.user+"_"+k.id == v }) {
			t.Errorf("app:shared_any = %v, want one writer's tag", v)
		}
	}
}
