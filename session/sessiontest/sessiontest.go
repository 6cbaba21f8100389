// Package sessiontest is the conformance suite for [session.Store]
// implementations.
//
// A backend is done when it passes [Run] under the race detector:
//
//	func TestConformance(t *testing.T) {
//		sessiontest.Run(t, func(t *testing.T) session.Store {
//			st := mybackend.Open(t.TempDir())
//			t.Cleanup(func() { st.Close() })
//			return st
//		})
//	}
//
// The suite drives the store through [session.NewService], so it checks the
// behaviour users see (CONFORMANCE S1–S10 and more): state scopes, windows,
// pagination, optimistic concurrency, refresh, isolation of returned memory
// and concurrent writers. Subtests are named after the checklist ids.
//
// A backend whose stores implement [session.Leaser] (several processes
// sharing one database) also passes [RunLease], given two stores over one
// database.
package sessiontest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
)

// Run runs the conformance suite against the stores that newStore returns.
//
// Every subtest calls newStore once and uses the store on its own; the
// backend registers any cleanup with t.Cleanup. Some subtests close the
// store themselves, so a cleanup must tolerate a store that is already
// closed. Subtests do not run in parallel with each other.
func Run(t *testing.T, newStore func(t *testing.T) session.Store) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := newStore(t)
			if st == nil {
				t.Fatal("newStore returned nil")
			}
			tc.fn(t, newHarness(t, st))
		})
	}
}

type testCase struct {
	name string
	fn   func(t *testing.T, h *harness)
}

// cases lists the subtests in the order they run.
var cases = []testCase{
	{"S1TempKeys", testS1TempKeys},
	{"S2Scopes", testS2Scopes},
	{"S3CreateStateScopes", testS3CreateState},
	{"S4AlreadyExists", testS4AlreadyExists},
	{"S4ConcurrentCreate", testS4ConcurrentCreate},
	{"S5PartialNotStored", testS5Partial},
	{"S6Windows", testS6Windows},
	{"S6ListPaginated", testS6List},
	{"S6ListAllUsers", testListAllUsers},
	{"S7StaleWriter", testS7Stale},
	{"S7ConcurrentCopiesOneSession", testS7ConcurrentCopies},
	{"S7ConcurrentSharedCopy", testS7SharedCopy},
	{"S7ConcurrentManySessions", testS7ManySessions},
	{"S8UserAndAppIsolation", testS8Isolation},
	{"S9NilDeletes", testS9NilDeletes},
	{"S10CancelledContext", testS10Cancelled},
	{"S10ClosedStore", testS10Closed},
	{"S10DeletedSession", testS10Deleted},
	{"E1IDsAndTimestamps", testE1IDs},
	{"E5MarksStored", testE5MarksStored},
	{"CreateGeneratedID", testCreateGeneratedID},
	{"GetMissing", testGetMissing},
	{"Delete", testDelete},
	{"LastUpdateTime", testLastUpdateTime},
	{"EventRoundTrip", testEventRoundTrip},
	{"RefreshIncremental", testRefreshIncremental},
	{"RefreshDeleted", testRefreshDeleted},
	{"RefreshRecreated", testRefreshRecreated},
	{"NoSharedMemory", testNoSharedMemory},
	{"OddKeys", testOddKeys},
	{"StateValues", testStateValues},
	{"StateJSONForm", testStateJSONForm},
	{"EventJSONForm", testEventJSONForm},
	{"V1InvalidValues", testV1InvalidValues},
	{"V1LimitValues", testV1LimitValues},
	{"V2InvalidEvents", testV2InvalidEvents},
	{"V3InvalidIDs", testV3InvalidIDs},
	{"V4NilSession", testV4NilSession},
	{"V5RecreatedSessionStale", testV5Recreated},
	{"V6AfterOutOfOrder", testV6AfterOutOfOrder},
	{"S13ImportedTimestamps", testS13ImportedTimestamps},
	{"V7DuplicateEventID", testV7DuplicateEventID},
	{"V8PageTokens", testV8PageTokens},
	{"V10UnknownOutcome", testV10UnknownOutcome},
	{"EventTimeRange", testEventTimeRange},
	{"LeaseOneService", testLeaseOneService},
	{"S14Expiry", testS14Expiry},
}

// base is the first instant of the deterministic clock.
var base = time.Date(2025, 5, 13, 10, 0, 0, 0, time.UTC)

// harness holds a service over the store under test, with a deterministic
// clock (one millisecond per reading) and id generator.
type harness struct {
	store session.Store
	svc   *session.Service
	app   string // app name unique to the subtest
	ticks atomic.Int64
	ids   atomic.Int64
}

var nonWord = regexp.MustCompile(`[^A-Za-z0-9]+`)

func newHarness(t *testing.T, st session.Store) *harness {
	h := &harness{store: st}
	h.svc = session.NewService(st, &session.Options{
		Now:   func() time.Time { return base.Add(time.Duration(h.ticks.Add(1)) * time.Millisecond) },
		NewID: func() string { return fmt.Sprintf("gen-%06d", h.ids.Add(1)) },
	})
	h.app = "app_" + nonWord.ReplaceAllString(t.Name(), "_")
	return h
}

func (h *harness) key(user, id string) session.Key {
	return session.Key{AppName: h.app, UserID: user, SessionID: id}
}

// create creates a session or fails the test.
func (h *harness) create(t *testing.T, user, id string, state map[string]any) *session.Session {
	t.Helper()
	s, err := h.svc.Create(t.Context(), h.key(user, id), state)
	if err != nil {
		t.Fatalf("Create(%s/%s): %v", user, id, err)
	}
	return s
}

// get loads a session with all its events or fails the test.
func (h *harness) get(t *testing.T, key session.Key) *session.Session {
	t.Helper()
	s, err := h.svc.Get(t.Context(), key, nil)
	if err != nil {
		t.Fatalf("Get(%v): %v", key, err)
	}
	return s
}

// appendEv appends ev or fails the test.
func (h *harness) appendEv(t *testing.T, s *session.Session, ev *event.Event) {
	t.Helper()
	if err := h.svc.AppendEvent(t.Context(), s, ev); err != nil {
		t.Fatalf("AppendEvent(%s): %v", s.ID(), err)
	}
}

// textEvent returns an agent event with text content and the given delta.
func textEvent(id, text string, delta map[string]any) *event.Event {
	e := &event.Event{ID: id, InvocationID: "e-inv", Author: "agent"}
	e.Content = genai.NewContentFromText(text, genai.RoleModel)
	e.Actions.StateDelta = delta
	return e
}

// canon returns the JSON encoding of v with map keys sorted, so that values
// compare equal whatever numeric type a backend decodes numbers into.
func canon(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<unencodable %T: %v>", v, err)
	}
	var x any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&x); err != nil {
		return string(b)
	}
	b, _ = json.Marshal(x)
	return string(b)
}

// sameJSON reports whether a and b encode to the same JSON.
func sameJSON(a, b any) bool { return canon(a) == canon(b) }

// wantState fails the test unless the merged state equals want (compared as
// JSON).
func wantState(t *testing.T, what string, got, want map[string]any) {
	t.Helper()
	if !sameJSON(got, want) {
		t.Errorf("%s: state = %s, want %s", what, canon(got), canon(want))
	}
}

// wantValue fails unless state key k holds want (compared as JSON).
func wantValue(t *testing.T, s *session.Session, k string, want any) {
	t.Helper()
	v, ok := s.Get(k)
	if !ok {
		t.Errorf("session %s: key %q missing, want %s", s.ID(), k, canon(want))
		return
	}
	if !sameJSON(v, want) {
		t.Errorf("session %s: key %q = %s, want %s", s.ID(), k, canon(v), canon(want))
	}
}

// wantAbsent fails if state key k is present.
func wantAbsent(t *testing.T, s *session.Session, k string) {
	t.Helper()
	if v, ok := s.Get(k); ok {
		t.Errorf("session %s: key %q = %s, want absent", s.ID(), k, canon(v))
	}
}

// eventIDs returns the ids of events, in order.
func eventIDs(evs []*event.Event) []string {
	ids := make([]string, len(evs))
	for i, e := range evs {
		ids[i] = e.ID
	}
	return ids
}

// wantIDs fails unless the session's events have exactly the given ids.
func wantIDs(t *testing.T, what string, evs []*event.Event, want ...string) {
	t.Helper()
	got := eventIDs(evs)
	if fmt.Sprint(got) != fmt.Sprint(want) || len(got) != len(want) {
		t.Errorf("%s: event ids = %v, want %v", what, got, want)
	}
}
