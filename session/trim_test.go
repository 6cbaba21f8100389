package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/session/sqlsession"
)

// TestTrimKeepsWhatIsRead checks that a trimmed session reads exactly as
// before (each event, a range of them, its JSON), holds less memory, and
// keeps working: appends, refreshes and later trims.
func TestTrimKeepsWhatIsRead(t *testing.T) {
	// In memory, Trim drops the decoded events and keeps the store's
	// bytes; on SQLite it encodes them.
	t.Run("memory", func(t *testing.T) { testTrim(t, memsession.NewService()) })
	t.Run("sqlite", func(t *testing.T) {
		svc, err := sqlsession.NewService(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "s.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer svc.Close()
		testTrim(t, svc)
	})
}

func testTrim(t *testing.T, svc *session.Service) {
	ctx := context.Background()
	key := session.Key{AppName: "app", UserID: "u", SessionID: "s"}
	sess, err := svc.Create(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range sizeEvents(40, 50) {
		if err := svc.AppendEvent(ctx, sess, ev); err != nil {
			t.Fatal(err)
		}
	}
	encode := func(evs []*event.Event) string {
		b, err := json.Marshal(evs)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	wholeBefore, _ := json.Marshal(sess)
	eventsBefore := encode(sess.Events())
	first, last := sess.At(0), sess.At(39)
	sizeBefore := sess.Size()

	sess.Trim(4)
	if got := sess.Size(); got >= sizeBefore/2 {
		t.Fatalf("trimmed size %d, before %d: want less than half", got, sizeBefore)
	}
	if sess.At(0) != first || sess.At(39) != last {
		t.Fatal("the first and the kept events are not the same values")
	}
	if got := encode(sess.Events()); got != eventsBefore {
		t.Fatalf("events read after Trim differ:\n%s\nwant\n%s", got, eventsBefore)
	}
	if got, want := encode(sess.EventsFrom(17)), encode(sess.Events()[17:]); got != want || sess.Len() != 40 {
		t.Fatalf("EventsFrom(17) = %s, want %s", got, want)
	}
	for i := range sess.Len() {
		if got, want := encode([]*event.Event{sess.At(i)}), encode(sess.Events()[i:i+1]); got != want {
			t.Fatalf("At(%d) = %s, want %s", i, got, want)
		}
	}
	if whole, _ := json.Marshal(sess); string(whole) != string(wholeBefore) {
		t.Fatalf("session JSON after Trim:\n%s\nwant\n%s", whole, wholeBefore)
	}

	// The trimmed copy appends, refreshes and trims again.
	other, err := svc.Get(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	more := sizeEvents(8, 10)
	for _, ev := range more[:4] {
		if err := svc.AppendEvent(ctx, sess, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := svc.Refresh(ctx, other); err != nil {
		t.Fatal(err)
	}
	other.Trim(0)
	sess.Trim(2)
	sess.Trim(2)
	stored, err := svc.Get(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := encode(stored.Events())
	for _, s := range []*session.Session{sess, other} {
		if got := encode(s.Events()); got != want || s.Len() != 44 {
			t.Fatalf("after appends and trims: %d events %s\nwant %s", s.Len(), got, want)
		}
	}
	for _, ev := range more[4:] {
		if err := svc.AppendEvent(ctx, other, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := svc.Refresh(ctx, sess); err != nil || sess.Len() != 48 || sess.At(47).ID != more[7].ID {
		t.Fatalf("refresh of a trimmed copy: %d events, %v", sess.Len(), err)
	}
}

// TestTrimWhileReading trims a session while readers read it (run with
// -race): every read sees every event.
func TestTrimWhileReading(t *testing.T) {
	ctx := context.Background()
	svc, sess := newMemSession(t)
	for _, ev := range sizeEvents(200, 10) {
		if err := svc.AppendEvent(ctx, sess, ev); err != nil {
			t.Fatal(err)
		}
	}
	ids := make([]string, 0, 200)
	for _, ev := range sess.Events() {
		ids = append(ids, ev.ID)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				var got []string
				for _, ev := range sess.Events() {
					got = append(got, ev.ID)
				}
				if !slices.Equal(got, ids) || sess.At(100).ID != ids[100] {
					t.Error("a read during Trim lost events")
					return
				}
			}
		})
	}
	for keep := 150; keep >= 0; keep -= 10 {
		sess.Trim(keep)
	}
	wg.Wait()
}

// TestConcurrentTrims trims one session from several goroutines at once
// (run with -race), in memory, where the store's bytes are kept, and on
// SQLite, where Trim encodes: the events read stay the same.
func TestConcurrentTrims(t *testing.T) {
	t.Run("memory", func(t *testing.T) { testConcurrentTrims(t, memsession.NewService()) })
	t.Run("sqlite", func(t *testing.T) {
		svc, err := sqlsession.NewService(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "s.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer svc.Close()
		testConcurrentTrims(t, svc)
	})
}

func testConcurrentTrims(t *testing.T, svc *session.Service) {
	ctx := context.Background()
	sess, err := svc.Create(ctx, session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range sizeEvents(300, 10) {
		if err := svc.AppendEvent(ctx, sess, ev); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := json.Marshal(sess.Events())
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for keep := 250 - g; keep >= 0; keep -= 25 {
				sess.Trim(keep)
			}
		})
	}
	wg.Wait()
	if got, _ := json.Marshal(sess.Events()); string(got) != string(want) || sess.Len() != 300 {
		t.Fatalf("after concurrent trims the session reads differently")
	}
}

// TestInvocationEvents checks that InvocationEvents yields exactly the
// events of one invocation, with their indexes, in a trimmed session and
// one that is not: also when another event's text holds the id, and for
// an id that JSON escapes.
func TestInvocationEvents(t *testing.T) {
	ctx := context.Background()
	svc, sess := newMemSession(t)
	ids := []string{"inv-a", "inv-b", `inv<"c">`}
	for i := range 30 {
		id := ids[i%len(ids)]
		text := "text"
		if i%5 == 0 {
			text = `mentions "inv-a" and inv<"c">`
		}
		if err := svc.AppendEvent(ctx, sess, event.NewModelText(id, "agent", text)); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		for _, id := range append(ids, "inv-none") {
			var want, got []int
			for i, ev := range sess.Events() {
				if ev.InvocationID == id {
					want = append(want, i)
				}
			}
			for i, ev := range sess.InvocationEvents(id) {
				if ev.InvocationID != id || sess.At(i).ID != ev.ID {
					t.Fatalf("%s: %s: event %d is %+v", when, id, i, ev)
				}
				got = append(got, i)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: %s: indexes %v, want %v", when, id, got, want)
			}
		}
	}
	check("decoded")
	sess.Trim(2)
	check("trimmed")
}

// TestInvocationEventsDecodesCandidatesOnly: finding the last invocation of
// a trimmed session of 1,000 events decodes its own events, not the rest
// (decoding them all would take thousands of allocations).
func TestInvocationEventsDecodesCandidatesOnly(t *testing.T) {
	sess, last := invocationsSession(t, 1000)
	allocs := testing.AllocsPerRun(10, func() {
		n := 0
		for range sess.InvocationEvents(last) {
			n++
		}
		if n != 4 {
			t.Fatalf("found %d events", n)
		}
	})
	if allocs > 100 {
		t.Errorf("%v allocations to find 4 events among 1,000", allocs)
	}
}

// invocationsSession returns a trimmed session of n events, four per
// invocation, and the id of its last invocation.
func invocationsSession(t testing.TB, n int) (*session.Session, string) {
	ctx := context.Background()
	svc, sess := newMemSession(t)
	var last string
	for i := range n {
		if i%4 == 0 {
			last = event.NewInvocationID()
		}
		if err := svc.AppendEvent(ctx, sess, event.NewModelText(last, "agent", "some text of the conversation")); err != nil {
			t.Fatal(err)
		}
	}
	sess.Trim(4)
	return sess, last
}

// BenchmarkInvocationEvents finds the events of the last invocation of a
// trimmed session of 4,000 events (1,000 invocations), as resuming it does.
func BenchmarkInvocationEvents(b *testing.B) {
	sess, last := invocationsSession(b, 4000)
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for range sess.InvocationEvents(last) {
			n++
		}
		if n != 4 {
			b.Fatalf("found %d events", n)
		}
	}
}

// TestEventsMentioning: newest first, every event the session holds
// decoded, and of the events kept encoded exactly those whose encoding
// holds one of the strings; a string JSON escapes makes every event a
// candidate.
func TestEventsMentioning(t *testing.T) {
	ctx := context.Background()
	svc, sess := newMemSession(t)
	for i := range 40 {
		ev := event.NewModelText("inv", "agent", "text")
		switch i % 10 {
		case 3:
			ev.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{genai.NewPartFromFunctionCall("f", nil)}}
			ev.Content.Parts[0].FunctionCall.ID = "call-a"
		case 7:
			ev.Content = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{genai.NewPartFromFunctionResponse("f", map[string]any{"ok": true})}}
			ev.Content.Parts[0].FunctionResponse.ID = "call-b"
		case 9:
			ev.Content = genai.NewContentFromText(`a text that quotes "call-a"`, genai.RoleModel)
		}
		if err := svc.AppendEvent(ctx, sess, ev); err != nil {
			t.Fatal(err)
		}
	}
	all := make([]int, 0, sess.Len())
	for i := sess.Len() - 1; i >= 0; i-- {
		all = append(all, i)
	}
	mentions := func(strs []string) []int {
		var out []int
		for _, i := range all {
			b, err := sess.At(i).MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range strs {
				if bytes.Contains(b, []byte(`"`+s+`"`)) {
					out = append(out, i)
					break
				}
			}
		}
		return out
	}
	got := func(strs ...string) []int {
		var out []int
		for i, ev := range sess.EventsMentioning(strs...) {
			if ev.ID != sess.At(i).ID {
				t.Fatalf("index %d yields event %s, not %s", i, ev.ID, sess.At(i).ID)
			}
			out = append(out, i)
		}
		return out
	}
	cases := [][]string{{"call-a"}, {"call-a", "call-b"}, {"none"}, {`call<"x">`}}
	for _, strs := range cases {
		if g := got(strs...); !slices.Equal(g, all) {
			t.Errorf("decoded, %q: indexes %v, want all of them", strs, g)
		}
	}
	// A trimmed session keeps its first event decoded (see Trim); the
	// text that quotes "call-a" holds it escaped, not as a JSON string.
	sess.Trim(0)
	for _, strs := range cases[:3] {
		want := mentions(strs)
		if !slices.Contains(want, 0) {
			want = append(want, 0)
		}
		if g := got(strs...); !slices.Equal(g, want) || (len(strs) == 1 && strs[0] == "call-a" && len(want) != 5) {
			t.Errorf("trimmed, %q: indexes %v, want %v", strs, g, want)
		}
	}
	if g := got(`call<"x">`); !slices.Equal(g, all) {
		t.Errorf("trimmed, an escaped string: indexes %v, want all of them", g)
	}
}

// TestEventsMentioningDecodesCandidatesOnly: looking for an id no event of
// a trimmed session of 1,000 events holds decodes none of them (decoding
// them all would take thousands of allocations).
func TestEventsMentioningDecodesCandidatesOnly(t *testing.T) {
	sess, _ := invocationsSession(t, 1000)
	allocs := testing.AllocsPerRun(10, func() {
		for i := range sess.EventsMentioning("adk-00000000-0000-0000-0000-000000000000") {
			if i != 0 && i < sess.Len()-4 { // the first and last four stay decoded (see Trim)
				t.Fatalf("event %d mentions an id no event holds", i)
			}
		}
	})
	if allocs > 20 {
		t.Errorf("%v allocations to look through 1,000 events", allocs)
	}
}

// newMemSession returns an in-memory session service and a new, empty
// session of it.
func newMemSession(tb testing.TB) (*session.Service, *session.Session) {
	tb.Helper()
	svc := memsession.NewService()
	sess, err := svc.Create(context.Background(), session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return svc, sess
}
