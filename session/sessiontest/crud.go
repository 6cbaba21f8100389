package sessiontest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/session"
)

// testS4AlreadyExists: creating an existing id fails and changes nothing (S4).
func testS4AlreadyExists(t *testing.T, h *harness) {
	s := h.create(t, "u1", "s1", map[string]any{"k": "first"})
	h.appendEv(t, s, textEvent("ev-1", "x", nil))
	_, err := h.svc.Create(t.Context(), s.Key(), map[string]any{"k": "second", "user:x": 1})
	if !errors.Is(err, session.ErrAlreadyExists) {
		t.Fatalf("second Create error = %v, want ErrAlreadyExists", err)
	}
	got := h.get(t, s.Key())
	wantState(t, "after failed create", got.State(), map[string]any{"k": "first"})
	wantIDs(t, "after failed create", got.Events(), "ev-1")
}

// testS6Windows: event windows by count and by time (S6).
func testS6Windows(t *testing.T, h *harness) {
	s := h.create(t, "u1", "s1", nil)
	ts := func(i int) time.Time { return base.Add(time.Hour + time.Duration(i)*time.Second) }
	for i := 1; i <= 5; i++ {
		ev := textEvent(fmt.Sprintf("ev-%d", i), fmt.Sprint(i), nil)
		ev.Timestamp = ts(i)
		h.appendEv(t, s, ev)
	}
	for _, tc := range []struct {
		name string
		opts *session.GetOptions
		want []string
	}{
		{"all", nil, []string{"ev-1", "ev-2", "ev-3", "ev-4", "ev-5"}},
		{"recent-3", &session.GetOptions{NumRecentEvents: 3}, []string{"ev-3", "ev-4", "ev-5"}},
		{"recent-10", &session.GetOptions{NumRecentEvents: 10}, []string{"ev-1", "ev-2", "ev-3", "ev-4", "ev-5"}},
		{"after-4", &session.GetOptions{After: ts(4)}, []string{"ev-4", "ev-5"}},
		{"after-between", &session.GetOptions{After: ts(3).Add(time.Millisecond)}, []string{"ev-4", "ev-5"}},
		{"recent-3-after-4", &session.GetOptions{NumRecentEvents: 3, After: ts(4)}, []string{"ev-4", "ev-5"}},
		{"recent-1-after-2", &session.GetOptions{NumRecentEvents: 1, After: ts(2)}, []string{"ev-5"}},
		{"after-before-all", &session.GetOptions{After: ts(0)}, []string{"ev-1", "ev-2", "ev-3", "ev-4", "ev-5"}},
		{"after-all", &session.GetOptions{After: ts(6)}, nil},
		// ADK's num_recent_events=0 ("no events") is NoEvents in Loom.
		{"recent-0", &session.GetOptions{NoEvents: true}, nil},
		// NoEvents wins over every other bound.
		{"none-after-2", &session.GetOptions{NoEvents: true, After: ts(2)}, nil},
		{"none-recent-3-after-2", &session.GetOptions{NoEvents: true, NumRecentEvents: 3, After: ts(2)}, nil},
		{"none-after-seq-1-after-2", &session.GetOptions{NoEvents: true, AfterSeq: 1, After: ts(2)}, nil},
		{"none-after-seq-1", &session.GetOptions{NoEvents: true, AfterSeq: 1}, nil},
		{"after-seq-3", &session.GetOptions{AfterSeq: 3}, []string{"ev-4", "ev-5"}},
		{"after-seq-0", &session.GetOptions{AfterSeq: 0}, []string{"ev-1", "ev-2", "ev-3", "ev-4", "ev-5"}},
		{"after-seq-5", &session.GetOptions{AfterSeq: 5}, nil},
		{"after-seq-9", &session.GetOptions{AfterSeq: 9}, nil},
		{"after-seq-2-recent-1", &session.GetOptions{AfterSeq: 2, NumRecentEvents: 1}, []string{"ev-5"}},
		{"after-seq-1-after-4", &session.GetOptions{AfterSeq: 1, After: ts(4)}, []string{"ev-4", "ev-5"}},
	} {
		got, err := h.svc.Get(t.Context(), s.Key(), tc.opts)
		if err != nil {
			t.Fatalf("Get %s: %v", tc.name, err)
		}
		wantIDs(t, tc.name, got.Events(), tc.want...)
		if got.Len() != len(tc.want) {
			t.Errorf("%s: Len = %d, want %d", tc.name, got.Len(), len(tc.want))
		}
		if got.Seq() != 5 {
			t.Errorf("%s: Seq = %d, want 5 whatever the window", tc.name, got.Seq())
		}
		for _, e := range got.Events() {
			if n := strings.TrimPrefix(e.ID, "ev-"); e.Content == nil || len(e.Content.Parts) != 1 || e.Content.Parts[0].Text != n {
				t.Errorf("%s: event %s has wrong content", tc.name, e.ID)
			}
		}
	}
	// A windowed copy can still be appended to: the window limits what is
	// loaded, not the session's position.
	w, err := h.svc.Get(t.Context(), s.Key(), &session.GetOptions{NumRecentEvents: 1})
	if err != nil {
		t.Fatal(err)
	}
	h.appendEv(t, w, textEvent("ev-6", "6", nil))
	if n := h.get(t, s.Key()).Len(); n != 6 {
		t.Errorf("after append through windowed copy: %d events, want 6", n)
	}
}

// listAll pages through List and returns every session, failing on a page
// larger than size or a token loop.
func listAll(t *testing.T, h *harness, user string, size int) (all []*session.Session, pages int) {
	t.Helper()
	token := ""
	for {
		res, err := h.svc.List(t.Context(), h.app, user, &session.ListOptions{PageSize: size, PageToken: token})
		if err != nil {
			t.Fatalf("List(%q, token %q): %v", user, token, err)
		}
		pages++
		if len(res.Sessions) > size {
			t.Fatalf("page of %d sessions, size %d", len(res.Sessions), size)
		}
		all = append(all, res.Sessions...)
		if res.NextPageToken == "" {
			return all, pages
		}
		if res.NextPageToken == token || pages > 100 {
			t.Fatalf("page token does not advance: %q", token)
		}
		token = res.NextPageToken
	}
}

func sessionIDs(ss []*session.Session) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.UserID() + "/" + s.ID()
	}
	return out
}

// testS6List: listing is paginated, carries merged state and no events (S6).
func testS6List(t *testing.T, h *harness) {
	var want []string
	for i := range 5 {
		id := fmt.Sprintf("s%d", i)
		s := h.create(t, "u1", id, map[string]any{"n": i})
		h.appendEv(t, s, textEvent("ev-"+id, "x", map[string]any{"user:seen": i, "app:a": "A"}))
		want = append(want, "u1/"+id)
	}
	h.create(t, "u2", "other", nil)

	got, pages := listAll(t, h, "u1", 2)
	if pages != 3 {
		t.Errorf("5 sessions in pages of 2: %d pages, want 3", pages)
	}
	if ids := sessionIDs(got); !slices.Equal(ids, want) {
		t.Errorf("listed %v, want %v", ids, want)
	}
	for i, s := range got {
		if s.Len() != 0 || len(s.Events()) != 0 {
			t.Errorf("listed session %s carries %d events, want none", s.ID(), s.Len())
		}
		wantState(t, "listed "+s.ID(), s.State(), map[string]any{"n": i, "user:seen": 4, "app:a": "A"})
		if s.AppName() != h.app || s.UserID() != "u1" {
			t.Errorf("listed session key = %v", s.Key())
		}
	}

	// One page holds everything: no token.
	res, err := h.svc.List(t.Context(), h.app, "u1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sessions) != 5 || res.NextPageToken != "" {
		t.Errorf("default page: %d sessions, token %q; want 5 and none", len(res.Sessions), res.NextPageToken)
	}
	// Exactly one full page: the token may be empty or lead to an empty page.
	got, _ = listAll(t, h, "u1", 5)
	if len(got) != 5 {
		t.Errorf("pages of 5: listed %d sessions, want 5", len(got))
	}

	res, err = h.svc.List(t.Context(), h.app, "nobody", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sessions) != 0 || res.NextPageToken != "" {
		t.Errorf("user without sessions: %d sessions, token %q", len(res.Sessions), res.NextPageToken)
	}
	res, err = h.svc.List(t.Context(), h.app+"_none", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sessions) != 0 {
		t.Errorf("app without sessions: %d sessions", len(res.Sessions))
	}
}

// testListAllUsers: an empty user lists every user's sessions of the app,
// ordered by user then id, and nothing of other apps.
func testListAllUsers(t *testing.T, h *harness) {
	var want []string
	for _, u := range []string{"alice", "bob", "carol"} {
		for i := range 3 {
			id := fmt.Sprintf("s%d", i)
			h.create(t, u, id, map[string]any{"owner": u})
			want = append(want, u+"/"+id)
		}
	}
	if _, err := h.svc.Create(t.Context(), session.Key{AppName: h.app + "_other", UserID: "alice", SessionID: "x"}, nil); err != nil {
		t.Fatal(err)
	}
	got, pages := listAll(t, h, "", 4)
	if ids := sessionIDs(got); !slices.Equal(ids, want) {
		t.Errorf("listed %v, want %v", ids, want)
	}
	if pages != 3 {
		t.Errorf("9 sessions in pages of 4: %d pages, want 3", pages)
	}
	for _, s := range got {
		wantValue(t, s, "owner", s.UserID())
	}
}

// testS8Isolation: the same session id under two users or two apps names two
// sessions that never see each other (S8).
func testS8Isolation(t *testing.T, h *harness) {
	a := h.create(t, "u1", "same", map[string]any{"who": "u1"})
	b := h.create(t, "u2", "same", map[string]any{"who": "u2"})
	c, err := h.svc.Create(t.Context(), session.Key{AppName: h.app + "_b", UserID: "u1", SessionID: "same"}, map[string]any{"who": "app b"})
	if err != nil {
		t.Fatalf("same id in another app: %v", err)
	}
	h.appendEv(t, a, textEvent("ev-a", "a", map[string]any{"x": "a"}))
	h.appendEv(t, b, textEvent("ev-b", "b", map[string]any{"x": "b"}))

	ga, gb, gc := h.get(t, a.Key()), h.get(t, b.Key()), h.get(t, c.Key())
	wantIDs(t, "u1's session", ga.Events(), "ev-a")
	wantIDs(t, "u2's session", gb.Events(), "ev-b")
	wantIDs(t, "other app's session", gc.Events())
	wantState(t, "u1's session", ga.State(), map[string]any{"who": "u1", "x": "a"})
	wantState(t, "u2's session", gb.State(), map[string]any{"who": "u2", "x": "b"})
	wantState(t, "other app's session", gc.State(), map[string]any{"who": "app b"})

	if _, err := h.svc.Get(t.Context(), h.key("u3", "same"), nil); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("third user's Get = %v, want ErrNotFound", err)
	}
	if err := h.svc.Delete(t.Context(), b.Key()); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "u1's session after u2's was deleted", h.get(t, a.Key()).Events(), "ev-a")
	h.get(t, c.Key())
	// Appending through u2's copy cannot reach u1's session.
	if err := h.svc.AppendEvent(t.Context(), b, textEvent("ev-b2", "b", nil)); err == nil {
		t.Error("append to deleted u2 session succeeded")
	}
	wantIDs(t, "u1's session", h.get(t, a.Key()).Events(), "ev-a")
}

// testCreateGeneratedID: an empty id is replaced by a generated one.
func testCreateGeneratedID(t *testing.T, h *harness) {
	s1 := h.create(t, "u1", "", map[string]any{"n": 1})
	s2 := h.create(t, "u1", "", map[string]any{"n": 2})
	if s1.ID() == "" || s2.ID() == "" || s1.ID() == s2.ID() {
		t.Fatalf("generated ids %q and %q, want distinct non-empty", s1.ID(), s2.ID())
	}
	wantValue(t, h.get(t, s1.Key()), "n", 1)
	wantValue(t, h.get(t, s2.Key()), "n", 2)
	if s1.AppName() != h.app || s1.UserID() != "u1" {
		t.Errorf("key = %v", s1.Key())
	}
}

// testGetMissing: missing sessions and malformed keys give the right errors.
func testGetMissing(t *testing.T, h *harness) {
	ctx := t.Context()
	if _, err := h.svc.Get(ctx, h.key("u1", "missing"), nil); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Get missing = %v, want ErrNotFound", err)
	}
	h.create(t, "u1", "s1", nil)
	if _, err := h.svc.Get(ctx, h.key("u1", "s1"), &session.GetOptions{NoEvents: true}); err != nil {
		t.Errorf("Get existing: %v", err)
	}
	for _, k := range []session.Key{
		{AppName: "", UserID: "u1", SessionID: "s1"},
		{AppName: h.app, UserID: "", SessionID: "s1"},
		{AppName: h.app, UserID: "u1", SessionID: ""},
	} {
		if _, err := h.svc.Get(ctx, k, nil); !errors.Is(err, session.ErrInvalid) {
			t.Errorf("Get(%v) = %v, want ErrInvalid", k, err)
		}
	}
	if _, err := h.svc.Create(ctx, session.Key{UserID: "u1"}, nil); !errors.Is(err, session.ErrInvalid) {
		t.Errorf("Create without app = %v, want ErrInvalid", err)
	}
	if _, err := h.svc.List(ctx, "", "u1", nil); !errors.Is(err, session.ErrInvalid) {
		t.Errorf("List without app = %v, want ErrInvalid", err)
	}
}

// testDelete: deleted sessions are gone from reads and listings; deleting a
// missing session is not an error; shared scopes survive; the id can be
// reused for a fresh session.
func testDelete(t *testing.T, h *harness) {
	ctx := t.Context()
	s := h.create(t, "u1", "s1", map[string]any{"k": 1, "app:a": 1, "user:u": 1})
	h.appendEv(t, s, textEvent("ev-1", "x", map[string]any{"k": 2}))
	h.create(t, "u1", "s2", nil)

	if err := h.svc.Delete(ctx, s.Key()); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := h.svc.Get(ctx, s.Key(), nil); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Get after Delete = %v, want ErrNotFound", err)
	}
	got, _ := listAll(t, h, "u1", 10)
	if ids := sessionIDs(got); !slices.Equal(ids, []string{"u1/s2"}) {
		t.Errorf("listed after delete: %v", ids)
	}
	if err := h.svc.Delete(ctx, s.Key()); err != nil {
		t.Errorf("second Delete: %v", err)
	}
	if err := h.svc.Delete(ctx, h.key("u9", "never")); err != nil {
		t.Errorf("Delete of a missing session: %v", err)
	}

	again := h.create(t, "u1", "s1", nil)
	if again.Len() != 0 {
		t.Errorf("recreated session has %d events", again.Len())
	}
	wantState(t, "recreated session", h.get(t, again.Key()).State(), map[string]any{"app:a": 1, "user:u": 1})
}

// testLastUpdateTime: creation and each append set the last update time.
func testLastUpdateTime(t *testing.T, h *harness) {
	s := h.create(t, "u1", "s1", nil)
	created := s.LastUpdateTime()
	if created.IsZero() {
		t.Fatal("new session has zero LastUpdateTime")
	}
	if got := h.get(t, s.Key()).LastUpdateTime(); !got.Equal(created) {
		t.Errorf("stored LastUpdateTime = %v, want %v", got, created)
	}
	ev := textEvent("ev-1", "x", nil)
	ev.Timestamp = created.Add(time.Hour)
	h.appendEv(t, s, ev)
	for what, got := range map[string]time.Time{
		"live":  s.LastUpdateTime(),
		"fresh": h.get(t, s.Key()).LastUpdateTime(),
	} {
		if !got.Equal(ev.Timestamp) {
			t.Errorf("%s LastUpdateTime = %v, want the event's %v", what, got, ev.Timestamp)
		}
	}
	res, err := h.svc.List(t.Context(), h.app, "u1", nil)
	if err != nil || len(res.Sessions) != 1 {
		t.Fatalf("List: %v, %v", res, err)
	}
	if got := res.Sessions[0].LastUpdateTime(); !got.Equal(ev.Timestamp) {
		t.Errorf("listed LastUpdateTime = %v, want %v", got, ev.Timestamp)
	}
}
