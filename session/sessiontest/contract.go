package sessiontest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
)

// This file holds the cases of the session contract for hostile and unlucky
// inputs: whatever the input, every backend either stores it so that it
// reads back the same, or refuses it with ErrInvalid and changes nothing.

// nested returns a value nested depth levels deep (a scalar is depth 1).
func nested(depth int) any {
	var v any = "leaf"
	for i := 1; i < depth; i++ {
		if i%2 == 0 {
			v = []any{v}
		} else {
			v = map[string]any{"n": v}
		}
	}
	return v
}

// badValues are state values no backend can store and read back.
func badValues() map[string]any {
	cyclic := map[string]any{"a": 1}
	cyclic["self"] = cyclic
	cyclicList := []any{1}
	cyclicList[0] = cyclicList
	return map[string]any{
		"deep-10001":      nested(10001),
		"deep-limit+1":    nested(session.MaxValueDepth + 1),
		"nan":             math.NaN(),
		"+inf":            math.Inf(1),
		"-inf":            math.Inf(-1),
		"nested-nan":      map[string]any{"x": []any{1, math.NaN()}},
		"float32-inf":     float32(math.Inf(1)),
		"chan":            make(chan int),
		"func":            func() {},
		"complex":         complex(1, 2),
		"nested-chan":     map[string]any{"c": make(chan int)},
		"invalid-utf8":    "a\xffb",
		"invalid-utf8-in": []any{"ok", "\xc3("},
		"invalid-key":     map[string]any{"\xff": 1},
		"nul":             "a\x00b",
		"nul-key":         map[string]any{"a\x00": 1},
		"int64-2^53+1":    int64(1<<53 + 1),
		"int64-max":       int64(math.MaxInt64),
		"uint64-max":      uint64(math.MaxUint64),
		"int-min":         math.MinInt64,
		"number-1e400":    json.Number("1e400"),
		"number-bigint":   json.Number("123456789012345678901"),
		"number-garbage":  json.Number("NaN"),
		"cyclic-map":      cyclic,
		"cyclic-list":     cyclicList,
		"struct-with-nan": struct{ F float64 }{math.NaN()},
		"typed-map-chan":  map[string]chan int{"c": nil},
	}
}

// wantInvalid fails unless err wraps ErrInvalid.
func wantInvalid(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, session.ErrInvalid) {
		t.Errorf("%s: err = %v, want ErrInvalid", what, err)
	}
}

// testV1InvalidValues: a state value that cannot be stored and read back
// exactly (too deep, not finite, not JSON, invalid UTF-8, NUL, an integer
// beyond 2^53, a cycle) is refused with ErrInvalid, in every scope, on
// append and on create, and nothing changes: the session, its app and its
// user stay readable and listable. No input crashes the process.
func testV1InvalidValues(t *testing.T, h *harness) {
	s := h.create(t, "u1", "s1", map[string]any{"k": 0, "app:a": 0, "user:u": 0})
	other := h.create(t, "u2", "s2", nil)
	before := snap(s)
	for name, v := range badValues() {
		for _, prefix := range []string{"", session.PrefixApp, session.PrefixUser, session.PrefixTemp} {
			key := prefix + "bad"
			ev := textEvent("", "x", map[string]any{key: v, "k": 1})
			err := h.svc.AppendEvent(t.Context(), s, ev)
			wantInvalid(t, "append "+name+" as "+key, err)
			if ev.ID != "" {
				t.Errorf("append %s as %s: the refused event was given id %q", name, key, ev.ID)
			}
			wantUnchanged(t, "live session after "+name, s, before)

			id := "c-" + strings.NewReplacer("+", "p", "^", "e").Replace(name) + "-" + strings.TrimSuffix(prefix, ":")
			_, err = h.svc.Create(t.Context(), h.key("u1", id), map[string]any{key: v})
			wantInvalid(t, "create with "+name+" as "+key, err)
			if _, err := h.svc.Get(t.Context(), h.key("u1", id), nil); !errors.Is(err, session.ErrNotFound) {
				t.Errorf("create with %s as %s: Get = %v, want ErrNotFound", name, key, err)
			}
		}
	}
	wantUnchanged(t, "fresh read", h.get(t, s.Key()), before)
	wantState(t, "other session", h.get(t, other.Key()).State(), map[string]any{"app:a": 0})
	all, _ := listAll(t, h, "", 10)
	if len(all) != 2 {
		t.Errorf("listed %d sessions, want 2", len(all))
	}
	if _, err := json.Marshal(h.get(t, s.Key())); err != nil {
		t.Errorf("MarshalJSON of the session: %v", err)
	}
	// The same copy still appends.
	h.appendEv(t, s, textEvent("ev-ok", "ok", map[string]any{"k": 1}))
	wantValue(t, h.get(t, s.Key()), "k", 1)
}

// testV1LimitValues: values at the limits are stored and read back equal.
func testV1LimitValues(t *testing.T, h *harness) {
	values := map[string]any{
		"deep":                                nested(session.MaxValueDepth),
		"int-2^53":                            int64(1 << 53),
		"int-neg-2^53":                        int64(-1 << 53),
		"uint-2^53":                           uint64(1 << 53),
		"float-max":                           math.MaxFloat64,
		"float-small":                         math.SmallestNonzeroFloat64,
		"float-big":                           1e300,
		"number":                              json.Number("12.5"),
		"unicode":                             "ünï 🙂 \u2028 \x01 \x7f",
		"ünï 🙂":                               "key",
		"struct":                              struct{ A int }{7},
		"strings":                             []string{"a", "b"},
		"time":                                time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		strings.Repeat("k", session.MaxIDLen): "long key",
	}
	s := h.create(t, "u1", "s1", values)
	h.appendEv(t, s, textEvent("ev-1", "x", map[string]any{"app:" + strings.Repeat("a", session.MaxIDLen-4): nested(session.MaxValueDepth)}))
	got := h.get(t, s.Key())
	for k, v := range values {
		wantValue(t, got, k, v)
	}
	wantValue(t, got, "app:"+strings.Repeat("a", session.MaxIDLen-4), nested(session.MaxValueDepth))
	if _, err := json.Marshal(got); err != nil {
		t.Errorf("MarshalJSON of the session: %v", err)
	}
	// One byte more is too long.
	_, err := h.svc.Create(t.Context(), h.key("u1", "s2"), map[string]any{strings.Repeat("k", session.MaxIDLen+1): 1})
	wantInvalid(t, "create with a key too long", err)
	err = h.svc.AppendEvent(t.Context(), s, textEvent("", "x", map[string]any{"user:" + strings.Repeat("k", session.MaxIDLen): 1}))
	wantInvalid(t, "append with a key too long", err)
}

// testV2InvalidEvents: an event that would not read back as it was given
// (invalid UTF-8, values that do not encode, bad ids) is refused with
// ErrInvalid; NUL in content text is stored as it is.
func testV2InvalidEvents(t *testing.T, h *harness) {
	s := h.create(t, "u1", "s1", map[string]any{"k": 0})
	before := snap(s)
	bad := map[string]func(e *event.Event){
		"invalid-utf8-text":   func(e *event.Event) { e.Content = genai.NewContentFromText("a\xffb", genai.RoleModel) },
		"nan-custom-metadata": func(e *event.Event) { e.CustomMetadata = map[string]any{"x": math.NaN()} },
		"chan-args": func(e *event.Event) {
			e.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{Name: "f", Args: map[string]any{"c": make(chan int)}}}}}
		},
		"deep-response": func(e *event.Event) {
			e.Content = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{Name: "f", Response: map[string]any{"r": nested(10001)}}}}}
		},
		"inf-logprobs":      func(e *event.Event) { e.AvgLogprobs = math.Inf(1) },
		"id-control":        func(e *event.Event) { e.ID = "a\nb" },
		"id-blank":          func(e *event.Event) { e.ID = " " },
		"id-too-long":       func(e *event.Event) { e.ID = strings.Repeat("x", session.MaxIDLen+1) },
		"id-invalid-utf8":   func(e *event.Event) { e.ID = "\xff" },
		"author-nul":        func(e *event.Event) { e.Author = "a\x00" },
		"invocation-utf8":   func(e *event.Event) { e.InvocationID = "\xfe" },
		"agent-state-cycle": func(e *event.Event) { m := map[string]any{}; m["m"] = m; e.Actions.AgentState = m },
		"metadata-key-utf8": func(e *event.Event) { e.CustomMetadata = map[string]any{"\xff": 1} },
	}
	for name, mutate := range bad {
		ev := textEvent("", "x", map[string]any{"k": 1})
		mutate(ev)
		wantInvalid(t, name, h.svc.AppendEvent(t.Context(), s, ev))
		wantUnchanged(t, name, s, before)
	}
	wantUnchanged(t, "fresh read", h.get(t, s.Key()), before)

	// NUL in content and typed metadata is kept.
	ev := textEvent("ev-nul", "a\x00b", map[string]any{"k": 2})
	ev.CustomMetadata = map[string]any{"n": "x\x00y"}
	h.appendEv(t, s, ev)
	got := h.get(t, s.Key()).Events()
	if len(got) != 1 || got[0].Content == nil || got[0].Content.Parts[0].Text != "a\x00b" || got[0].CustomMetadata["n"] != "x\x00y" {
		t.Errorf("event with NUL read back as %+v", got)
	}
}

// testV3InvalidIDs: app names, user ids and session ids are not blank, at
// most MaxIDLen bytes of valid UTF-8 without control characters; others are
// refused with ErrInvalid by every method, and nothing is created.
func testV3InvalidIDs(t *testing.T, h *harness) {
	bad := []string{" ", "\t", "a\x00b", "a\nb", "a\x7f", "\xff", "a\u0085b", strings.Repeat("x", session.MaxIDLen+1)}
	for _, id := range bad {
		keys := []session.Key{
			{AppName: id, UserID: "u", SessionID: "s"},
			{AppName: h.app, UserID: id, SessionID: "s"},
			{AppName: h.app, UserID: "u", SessionID: id},
		}
		for _, k := range keys {
			_, err := h.svc.Create(t.Context(), k, nil)
			wantInvalid(t, fmt.Sprintf("Create(%q)", k), err)
			_, err = h.svc.Get(t.Context(), k, nil)
			wantInvalid(t, fmt.Sprintf("Get(%q)", k), err)
			wantInvalid(t, fmt.Sprintf("Delete(%q)", k), h.svc.Delete(t.Context(), k))
			_, err = h.svc.Fork(t.Context(), k, "", session.Key{})
			wantInvalid(t, fmt.Sprintf("Fork(%q)", k), err)
		}
		_, err := h.svc.List(t.Context(), id, "", nil)
		wantInvalid(t, fmt.Sprintf("List(app %q)", id), err)
		_, err = h.svc.List(t.Context(), h.app, id, nil)
		wantInvalid(t, fmt.Sprintf("List(user %q)", id), err)
	}
	all, _ := listAll(t, h, "", 10)
	if len(all) != 0 {
		t.Errorf("listed %v, want nothing", sessionIDs(all))
	}
	long := strings.Repeat("é", session.MaxIDLen/2)
	s := h.create(t, long, long, map[string]any{"k": 1})
	h.appendEv(t, s, textEvent(long, "x", nil))
	wantIDs(t, "longest ids", h.get(t, h.key(long, long)).Events(), long)
}

// testV4NilSession: a nil session is ErrInvalid, not a panic.
func testV4NilSession(t *testing.T, h *harness) {
	wantInvalid(t, "AppendEvent(nil session)", h.svc.AppendEvent(t.Context(), nil, textEvent("", "x", nil)))
	wantInvalid(t, "Refresh(nil)", h.svc.Refresh(t.Context(), nil))
	s := h.create(t, "u1", "s1", nil)
	wantInvalid(t, "AppendEvent(nil event)", h.svc.AppendEvent(t.Context(), s, nil))
}

// testV5Recreated: a copy of a session that was deleted and created again
// with the same key is stale: it cannot append into the new session.
func testV5Recreated(t *testing.T, h *harness) {
	old := h.create(t, "u1", "s1", map[string]any{"k": "old"})
	h.appendEv(t, old, textEvent("ev-1", "x", nil))
	if err := h.svc.Delete(t.Context(), old.Key()); err != nil {
		t.Fatal(err)
	}
	h.create(t, "u1", "s1", map[string]any{"k": "new"})
	fresh := h.get(t, old.Key())
	h.appendEv(t, fresh, textEvent("ev-1", "first of the new session", nil))
	before := snap(old)
	err := h.svc.AppendEvent(t.Context(), old, textEvent("ev-2", "through the old copy", map[string]any{"k": "lost", "app:a": 1}))
	if !errors.Is(err, session.ErrStale) {
		t.Errorf("append through a copy of the deleted session = %v, want ErrStale", err)
	}
	wantUnchanged(t, "old copy", old, before)
	got := h.get(t, old.Key())
	wantIDs(t, "new session", got.Events(), "ev-1")
	wantState(t, "new session", got.State(), map[string]any{"k": "new"})

	// Also before the new session has any event (the same sequence number).
	if err := h.svc.Delete(t.Context(), old.Key()); err != nil {
		t.Fatal(err)
	}
	h.create(t, "u1", "s1", nil)
	if err := h.svc.AppendEvent(t.Context(), fresh, textEvent("ev-3", "x", nil)); !errors.Is(err, session.ErrStale) {
		t.Errorf("append through a copy with as many events as the new session = %v, want ErrStale", err)
	}
	empty := h.create(t, "u1", "s2", nil)
	if err := h.svc.Delete(t.Context(), empty.Key()); err != nil {
		t.Fatal(err)
	}
	h.create(t, "u1", "s2", nil)
	if err := h.svc.AppendEvent(t.Context(), empty, textEvent("ev-1", "x", nil)); !errors.Is(err, session.ErrStale) {
		t.Errorf("append through a copy of a deleted empty session = %v, want ErrStale", err)
	}
	wantIDs(t, "recreated empty session", h.get(t, empty.Key()).Events())
}

// wantWindows checks that every After window of the session holds exactly
// the stored events at or after its time, and that stored timestamps never
// go back.
func wantWindows(t *testing.T, h *harness, key session.Key) {
	t.Helper()
	all := h.get(t, key).Events()
	for i := 1; i < len(all); i++ {
		if all[i].Timestamp.Before(all[i-1].Timestamp) {
			t.Errorf("event %d (%s) is older than event %d (%s)", i, all[i].Timestamp, i-1, all[i-1].Timestamp)
		}
	}
	for _, e := range all {
		for _, after := range []time.Time{e.Timestamp, e.Timestamp.Add(-time.Nanosecond), e.Timestamp.Add(time.Nanosecond)} {
			var want []string
			for _, x := range all {
				if !x.Timestamp.Before(after) {
					want = append(want, x.ID)
				}
			}
			got, err := h.svc.Get(t.Context(), key, &session.GetOptions{After: after})
			if err != nil {
				t.Fatal(err)
			}
			wantIDs(t, fmt.Sprintf("After %s", after.Format(time.RFC3339Nano)), got.Events(), want...)
		}
	}
}

// testV6AfterOutOfOrder: events given out-of-order timestamps, or committed
// in another order than they were stamped, still make After windows that
// hold every event of their time or later (S6).
func testV6AfterOutOfOrder(t *testing.T, h *harness) {
	s := h.create(t, "u1", "s1", nil)
	t0 := base.Add(time.Hour)
	for i, d := range []time.Duration{0, 2 * time.Second, time.Second} {
		ev := textEvent(fmt.Sprintf("ev-%d", i), "x", nil)
		ev.Timestamp = t0.Add(d)
		h.appendEv(t, s, ev)
	}
	got, err := h.svc.Get(t.Context(), s.Key(), &session.GetOptions{After: t0.Add(2 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if got.Len() == 0 {
		t.Errorf("After T+2s returned no event")
	}
	wantWindows(t, h, s.Key())

	// Events stamped before they are appended through one shared copy.
	shared := h.create(t, "u1", "s2", nil)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			for j := range 4 {
				ev := textEvent(fmt.Sprintf("c-%d-%d", i, j), "x", nil)
				ev.Timestamp = time.Now()
				if err := h.svc.AppendEvent(t.Context(), shared, ev); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	wantWindows(t, h, shared.Key())
}

// testV7DuplicateEventID: event ids are unique within a session, also
// through a copy loaded without events; the same id in another session is
// fine.
func testV7DuplicateEventID(t *testing.T, h *harness) {
	s := h.create(t, "u1", "s1", map[string]any{"k": 0})
	h.appendEv(t, s, textEvent("X", "x", map[string]any{"k": 1}))
	h.appendEv(t, s, textEvent("Y", "y", map[string]any{"k": 2}))
	for _, opts := range []*session.GetOptions{nil, {NoEvents: true}, {NumRecentEvents: 1}} {
		c, err := h.svc.Get(t.Context(), s.Key(), opts)
		if err != nil {
			t.Fatal(err)
		}
		before := snap(c)
		ev := textEvent("X", "again", map[string]any{"k": 3, "app:a": 1})
		err = h.svc.AppendEvent(t.Context(), c, ev)
		if !errors.Is(err, session.ErrAlreadyExists) && !errors.Is(err, session.ErrInvalid) {
			t.Errorf("duplicate id through a copy loaded with %+v: err = %v, want ErrAlreadyExists", opts, err)
		}
		wantUnchanged(t, "copy", c, before)
	}
	got := h.get(t, s.Key())
	wantIDs(t, "storage", got.Events(), "X", "Y")
	wantState(t, "storage", got.State(), map[string]any{"k": 2})
	h.appendEv(t, s, textEvent("Z", "z", nil))
	h.appendEv(t, h.create(t, "u1", "s2", nil), textEvent("X", "x", nil))
	f, err := h.svc.Fork(t.Context(), s.Key(), "Y", h.key("u1", "fork"))
	if err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "fork", f.Events(), "X", "Y")
}

// testV8PageTokens: page tokens are opaque and unambiguous: a walk one
// session at a time over ids full of separators visits each session once
// and ends; a forged token is ErrInvalid.
func testV8PageTokens(t *testing.T, h *harness) {
	ids := []string{"a", "a b", `a"`, "a,b", "a[", `a\`, "a/b", "ü", "a\u2028", "a%", "a_"}
	want := map[string]bool{}
	for _, u := range ids {
		for _, id := range ids {
			h.create(t, u, id, nil)
			want[u+"/"+id] = true
		}
	}
	for _, size := range []int{2, 7} {
		all, _ := listAll(t, h, "", size)
		got := sessionIDs(all)
		sorted := slices.IsSortedFunc(all, func(a, b *session.Session) int {
			return cmp.Or(strings.Compare(a.UserID(), b.UserID()), strings.Compare(a.ID(), b.ID()))
		})
		if len(got) != len(want) || !sorted {
			t.Errorf("page size %d: listed %d sessions (sorted %v), want %d", size, len(got), sorted, len(want))
		}
		for _, id := range got {
			if !want[id] {
				t.Errorf("page size %d: listed %q", size, id)
			}
		}
		for _, u := range ids {
			mine, _ := listAll(t, h, u, size)
			if len(mine) != len(ids) {
				t.Errorf("page size %d: user %q has %d sessions listed, want %d", size, u, len(mine), len(ids))
			}
		}
	}
	for _, tok := range []string{"garbage", "a\x00b", "W10", "!!!"} {
		_, err := h.svc.List(t.Context(), h.app, "", &session.ListOptions{PageToken: tok})
		wantInvalid(t, fmt.Sprintf("List with token %q", tok), err)
	}
}

// testV10UnknownOutcome: when a store commits an append but reports an
// error that does not say it refused it (a deadline during the commit), the
// service finds the event and reports success; when it did not commit, the
// error stands and nothing changed. Either way an error means "not stored".
func testV10UnknownOutcome(t *testing.T, h *harness) {
	lossy := &lostAck{Store: h.store}
	svc := session.NewService(lossy, nil)
	s, err := svc.Create(t.Context(), h.key("u1", "s1"), map[string]any{"k": 0})
	if err != nil {
		t.Fatal(err)
	}
	lossy.commitThenFail.Store(true)
	ev := textEvent("ev-1", "x", map[string]any{"k": 1})
	if err := svc.AppendEvent(t.Context(), s, ev); err != nil {
		t.Errorf("append committed but reported failed: AppendEvent = %v, want success", err)
	}
	lossy.commitThenFail.Store(false)
	wantValue(t, s, "k", 1)
	wantIDs(t, "copy", s.Events(), "ev-1")
	// The copy is current: it appends again.
	if err := svc.AppendEvent(t.Context(), s, textEvent("ev-2", "y", map[string]any{"k": 2})); err != nil {
		t.Errorf("append after an append of unknown outcome: %v", err)
	}
	lossy.failBefore.Store(true)
	before := snap(s)
	if err := svc.AppendEvent(t.Context(), s, textEvent("ev-3", "z", map[string]any{"k": 3})); err == nil {
		t.Error("append that failed before committing reported success")
	}
	lossy.failBefore.Store(false)
	wantUnchanged(t, "copy after a failed append", s, before)
	got := h.get(t, s.Key())
	wantIDs(t, "storage", got.Events(), "ev-1", "ev-2")
	wantValue(t, got, "k", 2)
}

// lostAck wraps a store to lose the answer of appends.
type lostAck struct {
	session.Store
	commitThenFail, failBefore atomic.Bool
}

func (l *lostAck) AppendEvent(ctx context.Context, key session.Key, created time.Time, seq int64, ev *event.Event, d session.Delta) error {
	if l.failBefore.Load() {
		return fmt.Errorf("lost connection: %w", context.DeadlineExceeded)
	}
	if err := l.Store.AppendEvent(ctx, key, created, seq, ev, d); err != nil {
		return err
	}
	if l.commitThenFail.Load() {
		return fmt.Errorf("commit: %w", context.DeadlineExceeded)
	}
	return nil
}

// testEventTimeRange: an event timestamp that stores cannot keep as
// nanoseconds since 1970 in an int64 (before 1678 or after 2262) is
// refused with ErrInvalid and changes nothing; one inside the range, on
// either side of 1970, reads back exactly and bounds After windows.
func testEventTimeRange(t *testing.T, h *harness) {
	s := h.create(t, "u1", "s1", map[string]any{"k": 0})
	h.appendEv(t, s, textEvent("ev-0", "x", map[string]any{"k": 1}))
	before := snap(s)
	for _, ts := range []time.Time{
		time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Unix(0, math.MaxInt64).Add(time.Microsecond),
		time.Unix(0, math.MinInt64).Add(-time.Microsecond),
		time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC),
		time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC),
	} {
		ev := textEvent("", "x", map[string]any{"k": 2, "app:a": 1, "user:u": 1})
		ev.Timestamp = ts
		err := h.svc.AppendEvent(t.Context(), s, ev)
		wantInvalid(t, fmt.Sprintf("append at %v", ts), err)
		if ev.ID != "" || !ev.Timestamp.Equal(ts) {
			t.Errorf("append at %v: the refused event became id %q at %v", ts, ev.ID, ev.Timestamp)
		}
		wantUnchanged(t, fmt.Sprintf("live session after an append at %v", ts), s, before)
	}
	fresh := h.get(t, s.Key())
	wantUnchanged(t, "fresh read", fresh, before)
	wantState(t, "fresh read", fresh.State(), map[string]any{"k": 1})
	// Time bounds beyond the range select nothing, or everything.
	for _, tc := range []struct {
		after time.Time
		want  []string
	}{
		{time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), nil},
		{time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), []string{"ev-0"}},
	} {
		w, err := h.svc.Get(t.Context(), s.Key(), &session.GetOptions{After: tc.after})
		if err != nil {
			t.Fatal(err)
		}
		wantIDs(t, fmt.Sprintf("After %v", tc.after), w.Events(), tc.want...)
	}

	for i, ts := range []time.Time{
		time.Date(2200, 6, 1, 12, 30, 45, 123456000, time.UTC),
		time.Date(1700, 3, 4, 5, 6, 7, 8000, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC),
		time.Unix(0, math.MaxInt64).Truncate(time.Microsecond),
	} {
		s := h.create(t, "u1", fmt.Sprint("in-range-", i), nil)
		ev := textEvent("ev-1", "x", map[string]any{"k": i})
		ev.Timestamp = ts
		h.appendEv(t, s, ev)
		got := h.get(t, s.Key())
		for what, lu := range map[string]time.Time{"live": s.LastUpdateTime(), "fresh": got.LastUpdateTime()} {
			if !lu.Equal(ts) {
				t.Errorf("event at %v: %s LastUpdateTime = %v", ts, what, lu)
			}
		}
		if evs := got.Events(); len(evs) != 1 || !evs[0].Timestamp.Equal(ts) {
			t.Errorf("event at %v read back as %v", ts, canon(evs))
		}
		for _, tc := range []struct {
			after time.Time
			want  []string
		}{
			{ts, []string{"ev-1"}},
			{ts.Add(-time.Microsecond), []string{"ev-1"}},
			{ts.Add(time.Microsecond), nil},
		} {
			w, err := h.svc.Get(t.Context(), s.Key(), &session.GetOptions{After: tc.after})
			if err != nil {
				t.Fatal(err)
			}
			wantIDs(t, fmt.Sprintf("event at %v, After %v", ts, tc.after), w.Events(), tc.want...)
		}
	}
}
