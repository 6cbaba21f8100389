package memsession

import (
	"errors"
	"fmt"
	"hash/maphash"
	"runtime"
	"strings"
	"testing"
	"unsafe"
	"weak"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
)

// appendN appends n events with ids prefix0, prefix1, ... to s.
func appendN(t testing.TB, svc *session.Service, s *session.Session, prefix string, n int) {
	t.Helper()
	for i := range n {
		e := event.NewModelText("e-1", "agent", "text")
		e.ID = fmt.Sprintf("%s%d", prefix, i)
		if err := svc.AppendEvent(t.Context(), s, e); err != nil {
			t.Fatalf("append %s: %v", e.ID, err)
		}
	}
}

// TestDuplicateIDs appends, to sessions shorter and longer than the linear
// scan of ids, an event with the id of each event already there: every one
// is refused with ErrAlreadyExists and the session is unchanged, and a new
// id is still accepted. Past the threshold the ids are in a set.
func TestDuplicateIDs(t *testing.T) {
	for _, n := range []int{1, linearIDs - 1, linearIDs, linearIDs + 1, 3 * linearIDs} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			st, svc, s := newSession(t)
			key := s.Key()
			appendN(t, svc, s, "id-", n)
			for i := range n {
				e := event.NewModelText("e-1", "agent", "again")
				e.ID = fmt.Sprintf("id-%d", i)
				if err := svc.AppendEvent(t.Context(), s, e); !errors.Is(err, session.ErrAlreadyExists) {
					t.Fatalf("append of duplicate %s: err = %v, want ErrAlreadyExists", e.ID, err)
				}
			}
			appendN(t, svc, s, "new-", 1)
			got, err := svc.Get(t.Context(), key, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got.Len() != n+1 || got.At(n).ID != "new-0" {
				t.Fatalf("session holds %d events, last %s; want %d, last new-0", got.Len(), got.At(got.Len()-1).ID, n+1)
			}
			r := st.lookup(key)
			if wantSet := n+1 > linearIDs; (r.idSet != nil) != wantSet || (wantSet && len(r.idSet) != n+1) {
				t.Errorf("%d events: id set of %d hashes (nil: %v), want a set: %v", n+1, len(r.idSet), r.idSet == nil, wantSet)
			}
		})
	}
}

// TestIDHashCollision makes the hash of a stored id equal that of a new
// one: the new event is not a duplicate and is stored, in a short session
// and in one past the linear scan.
func TestIDHashCollision(t *testing.T) {
	for _, n := range []int{2, 2 * linearIDs} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			st, svc, s := newSession(t)
			key := s.Key()
			appendN(t, svc, s, "id-", n)
			h := maphash.String(st.seed, "other")
			r := st.lookup(key)
			r.meta[1].id = h
			if r.idSet != nil {
				r.idSet[h] = struct{}{}
			}
			e := event.NewModelText("e-1", "agent", "text")
			e.ID = "other"
			if err := svc.AppendEvent(t.Context(), s, e); err != nil {
				t.Fatalf("append of an id whose hash collides: %v", err)
			}
			e = event.NewModelText("e-1", "agent", "text")
			e.ID = "other"
			if err := svc.AppendEvent(t.Context(), s, e); !errors.Is(err, session.ErrAlreadyExists) {
				t.Fatalf("second append of other: err = %v, want ErrAlreadyExists", err)
			}
		})
	}
}

// TestEmptyStateNoMap checks that a session without session-scoped state
// holds no state map until a key is set, and reads back empty meanwhile.
func TestEmptyStateNoMap(t *testing.T) {
	st := New()
	svc := session.NewService(st, nil)
	key := session.Key{AppName: "a", UserID: "u", SessionID: "s"}
	s, err := svc.Create(t.Context(), key, map[string]any{"app:x": 1, "temp:t": 2})
	if err != nil {
		t.Fatal(err)
	}
	if r := st.lookup(key); r.state != nil {
		t.Fatalf("new session without state holds a state map %v", r.state)
	}
	e := event.NewModelText("e-1", "agent", "text")
	e.Actions.StateDelta = map[string]any{"gone": nil, "user:u": "v"}
	if err := svc.AppendEvent(t.Context(), s, e); err != nil {
		t.Fatal(err)
	}
	if r := st.lookup(key); r.state != nil {
		t.Fatalf("session after a delta without session keys holds a state map %v", r.state)
	}
	got, err := svc.Get(t.Context(), key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]any{"app:x": float64(1), "user:u": "v"}; fmt.Sprint(got.State()) != fmt.Sprint(want) {
		t.Fatalf("state = %v, want %v", got.State(), want)
	}
	e = event.NewModelText("e-1", "agent", "text")
	e.Actions.StateDelta = map[string]any{"k": "v"}
	if err := svc.AppendEvent(t.Context(), s, e); err != nil {
		t.Fatal(err)
	}
	if got, err = svc.Get(t.Context(), key, nil); err != nil {
		t.Fatal(err)
	}
	if v, ok := got.Get("k"); !ok || v != "v" {
		t.Fatalf("k = %v, %v after it was set", v, ok)
	}
}

// BenchmarkAppendLong appends 10,000 events to one session: with the ids
// in a set past the linear scan, the cost per event does not grow with the
// session's length.
func BenchmarkAppendLong(b *testing.B) {
	const n = 10_000
	for b.Loop() {
		b.StopTimer()
		svc := session.NewService(New(), nil)
		s, err := svc.Create(b.Context(), session.Key{AppName: "a", UserID: "u", SessionID: "s"}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		appendN(b, svc, s, "id-", n)
	}
}

// TestUserIDShared checks that the sessions of a user share one user id
// string, whichever string each was created with.
func TestUserIDShared(t *testing.T) {
	st := New()
	svc := session.NewService(st, nil)
	for i := range 3 {
		user := strings.Clone("user")
		if _, err := svc.Create(t.Context(), session.Key{AppName: "a", UserID: user, SessionID: fmt.Sprint("s", i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	var users []string
	st.apps["a"].Ascend(func(e entry) bool {
		users = append(users, e.user)
		return true
	})
	if len(users) != 3 {
		t.Fatalf("%d sessions in the order, want 3", len(users))
	}
	for _, u := range users[1:] {
		if u != "user" || unsafe.StringData(u) != unsafe.StringData(users[0]) {
			t.Errorf("user id %q at %p, want the first session's at %p", u, unsafe.StringData(u), unsafe.StringData(users[0]))
		}
	}
}

// newSession returns a store, a service over it and a new session.
func newSession(t *testing.T) (*Store, *session.Service, *session.Session) {
	t.Helper()
	st := New()
	svc := session.NewService(st, nil)
	s, err := svc.Create(t.Context(), session.Key{AppName: "a", UserID: "u", SessionID: "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st, svc, s
}

// TestKeysDoNotPinCallerMemory checks that a session's keys are the store's
// own strings: an app, user or session id that is a piece of a larger
// string (a request's path, a batch of generated ids) must not keep that
// string alive for as long as the session lives.
func TestKeysDoNotPinCallerMemory(t *testing.T) {
	st := New()
	svc := session.NewService(st, nil)
	for _, part := range []string{"app", "user", "session"} {
		big := createWithPiece(t, svc, part)
		for range 3 {
			runtime.GC()
		}
		if big.Value() != nil {
			t.Errorf("the %s id holds on to the 1 MiB string it was cut from", part)
		}
	}
	// The sessions are still found by their keys.
	for _, k := range []session.Key{{AppName: "abcdefgh", UserID: "u-app", SessionID: "s"},
		{AppName: "app-user", UserID: "abcdefgh", SessionID: "s"}, {AppName: "app-session", UserID: "u-session", SessionID: "abcdefgh"}} {
		if _, err := svc.Get(t.Context(), k, nil); err != nil {
			t.Errorf("get %v: %v", k, err)
		}
	}
}

// createWithPiece creates a session whose app, user or session id (part)
// is the first 8 bytes ("abcdefgh") of a new 1 MiB string, with state in
// the app and user scopes (which the store keeps by app and by user too),
// and returns a weak pointer to that string.
func createWithPiece(t *testing.T, svc *session.Service, part string) weak.Pointer[byte] {
	t.Helper()
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = 'a' + byte(i%26)
	}
	piece := unsafe.String(&big[0], 8)
	key := session.Key{AppName: "app-" + part, UserID: "u-" + part, SessionID: "s"}
	switch part {
	case "app":
		key.AppName = piece
	case "user":
		key.UserID = piece
	case "session":
		key.SessionID = piece
	}
	if _, err := svc.Create(t.Context(), key, map[string]any{"app:n": 1, "user:n": 1}); err != nil {
		t.Fatal(err)
	}
	return weak.Make(&big[0])
}
