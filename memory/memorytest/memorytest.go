// Package memorytest is the conformance suite for memory.Store
// implementations.
//
// A backend is done when it passes [Run]:
//
//	func TestConformance(t *testing.T) {
//		memorytest.Run(t, func(t *testing.T) memory.Store {
//			return mystore.New()
//		})
//	}
//
// The suite drives the store through [memory.NewService] with sessions built
// by session/memsession, so it checks what users see: text events become
// searchable, matching is word-based and case-insensitive, entries matching
// more query words rank first, searches are confined to one (app, user),
// re-adding a session replaces its memories, adding some events of a
// session updates theirs and keeps the others (Store.Upsert), and limits
// are honoured.
//
// The queries avoid common stop words and the texts avoid words that differ
// only by a suffix, so that stores built on full-text engines with stemming
// and stop-word lists (SQLite FTS5, PostgreSQL text search) can pass. Such
// stores must treat a query as a set of words, any of which may match, and
// must not fail on punctuation or operator characters in the query.
package memorytest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

const (
	app  = "app"
	user = "alice"
)

// Run runs the conformance suite against stores made by newStore. newStore
// is called once per subtest and must return an empty store.
func Run(t *testing.T, newStore func(t *testing.T) memory.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(*testing.T, *fixture)
	}{
		{"AddAndSearch", testAddAndSearch},
		{"CaseInsensitive", testCaseInsensitive},
		{"BestMatchFirst", testBestMatchFirst},
		{"AnyWordMatches", testAnyWord},
		{"OnlyTextEvents", testOnlyText},
		{"UserAndAppIsolation", testIsolation},
		{"ReAddReplaces", testReAdd},
		{"ReplaceDirect", testReplaceDirect},
		{"AddEvents", testAddEvents},
		{"UpsertDirect", testUpsertDirect},
		{"ConcurrentUpserts", testConcurrentUpserts},
		{"EmptyQuery", testEmptyQuery},
		{"OperatorCharacters", testOperators},
		{"Limit", testLimit},
		{"WordsInsidePunctuation", testWordsInsidePunctuation},
		{"DiacriticsDistinguish", testDiacritics},
		{"CaseBeyondASCII", testCaseBeyondASCII},
		{"OnlyLettersAndDigits", testOnlyLettersAndDigits},
		{"ManyQueryWords", testManyQueryWords},
		{"MoreWordsFirstAtScale", testMoreWordsFirstAtScale},
		{"ConcurrentAdds", testConcurrentAdds},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := newStore(t)
			f := &fixture{
				store:    store,
				mem:      memory.NewService(store),
				sessions: memsession.NewService(),
				base:     time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC),
			}
			t.Cleanup(func() {
				if err := f.mem.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tc.fn(t, f)
		})
	}
}

type fixture struct {
	store    memory.Store
	mem      *memory.Service
	sessions *session.Service

	mu   sync.Mutex
	base time.Time
	n    int
}

// nextTime returns distinct whole-second timestamps, increasing, so that
// every backend can store them exactly.
func (f *fixture) nextTime() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	return f.base.Add(time.Duration(f.n) * time.Second)
}

// msg is one event of a test session.
type msg struct {
	author string
	text   string
}

// newSession creates session id of (appName, userID) with one event per
// message and returns it with the events as committed.
func (f *fixture) newSession(t *testing.T, appName, userID, id string, msgs ...msg) *session.Session {
	t.Helper()
	ctx := context.Background()
	s, err := f.sessions.Create(ctx, session.Key{AppName: appName, UserID: userID, SessionID: id}, nil)
	if err != nil {
		t.Fatalf("Create session %s: %v", id, err)
	}
	f.appendText(t, s, msgs...)
	return s
}

func (f *fixture) appendText(t *testing.T, s *session.Session, msgs ...msg) {
	t.Helper()
	for _, m := range msgs {
		role := genai.RoleModel
		if m.author == event.AuthorUser {
			role = genai.RoleUser
		}
		ev := &event.Event{ID: event.NewID(), InvocationID: "inv", Author: m.author, Timestamp: f.nextTime()}
		ev.Content = genai.NewContentFromText(m.text, genai.Role(role))
		f.appendEvent(t, s, ev)
	}
}

func (f *fixture) appendEvent(t *testing.T, s *session.Session, ev *event.Event) {
	t.Helper()
	if err := f.sessions.AppendEvent(context.Background(), s, ev); err != nil {
		t.Fatalf("AppendEvent: %v", err)
	}
}

func (f *fixture) add(t *testing.T, s *session.Session) {
	t.Helper()
	if err := f.mem.AddSession(t.Context(), s); err != nil {
		t.Fatalf("AddSession(%s): %v", s.ID(), err)
	}
}

func (f *fixture) search(t *testing.T, appName, userID, query string, limit int) []memory.Entry {
	t.Helper()
	res, err := f.mem.Search(t.Context(), appName, userID, query, &memory.SearchOptions{Limit: limit})
	if err != nil {
		t.Fatalf("Search(%q): %v", query, err)
	}
	return res
}

func texts(es []memory.Entry) []string {
	out := make([]string, len(es))
	for i := range es {
		out[i] = es[i].Text()
	}
	return out
}

func wantTexts(t *testing.T, query string, got []memory.Entry, want ...string) {
	t.Helper()
	g := slices.Sorted(slices.Values(texts(got)))
	w := slices.Sorted(slices.Values(want))
	if !slices.Equal(g, w) {
		t.Errorf("Search(%q) = %q, want %q", query, g, w)
	}
}

func testAddAndSearch(t *testing.T, f *fixture) {
	s := f.newSession(t, app, user, "s1",
		msg{event.AuthorUser, "Please book a flight to Lisbon"},
		msg{"travel_agent", "Your flight to Lisbon departs Tuesday"},
		msg{"travel_agent", "Hotel reservation confirmed"},
	)
	f.add(t, s)
	res := f.search(t, app, user, "Lisbon", 10)
	wantTexts(t, "Lisbon", res, "Please book a flight to Lisbon", "Your flight to Lisbon departs Tuesday")

	// Entries carry the identity of the events they came from.
	events := s.Events()
	byID := map[string]*event.Event{}
	for _, e := range events {
		byID[e.ID] = e
	}
	for _, e := range res {
		ev, ok := byID[e.ID]
		if !ok {
			t.Errorf("entry id %q is not an event id of the session", e.ID)
			continue
		}
		if e.SessionID != "s1" || e.Author != ev.Author || !e.Timestamp.Equal(ev.Timestamp) {
			t.Errorf("entry = {session %q, author %q, time %v}, want {s1, %q, %v}",
				e.SessionID, e.Author, e.Timestamp, ev.Author, ev.Timestamp)
		}
		if e.Content == nil || e.Content.Role != ev.Content.Role {
			t.Errorf("entry content = %+v, want role %q", e.Content, ev.Content.Role)
		}
	}
	wantTexts(t, "hotel", f.search(t, app, user, "hotel", 10), "Hotel reservation confirmed")
	if res := f.search(t, app, user, "zanzibar", 10); len(res) != 0 {
		t.Errorf("Search(zanzibar) = %q, want nothing", texts(res))
	}
}

func testCaseInsensitive(t *testing.T, f *fixture) {
	f.add(t, f.newSession(t, app, user, "s1", msg{event.AuthorUser, "My favourite COLOUR is Turquoise"}))
	for _, q := range []string{"turquoise", "TURQUOISE", "TuRqUoIsE", "colour", "Colour"} {
		wantTexts(t, q, f.search(t, app, user, q, 10), "My favourite COLOUR is Turquoise")
	}
}

func testBestMatchFirst(t *testing.T, f *fixture) {
	f.add(t, f.newSession(t, app, user, "s1",
		msg{event.AuthorUser, "garden tomato harvest"},
		msg{"agent", "kitchen tomato sauce"},
		msg{"agent", "garden tomato basil harvest"},
		msg{"agent", "garage bicycle repair"},
	))
	res := f.search(t, app, user, "tomato basil harvest", 10)
	got := texts(res)
	if len(got) != 3 {
		t.Fatalf("Search = %q, want the three tomato entries", got)
	}
	want := []string{"garden tomato basil harvest", "garden tomato harvest", "kitchen tomato sauce"}
	if !slices.Equal(got, want) {
		t.Errorf("Search order = %q, want %q (more matched words first)", got, want)
	}
}

func testAnyWord(t *testing.T, f *fixture) {
	f.add(t, f.newSession(t, app, user, "s1",
		msg{event.AuthorUser, "violin lessons on Monday"},
		msg{"agent", "piano tuning scheduled"},
	))
	// A query word absent from every entry does not hide the others.
	wantTexts(t, "violin piano xylophone", f.search(t, app, user, "violin piano xylophone", 10),
		"violin lessons on Monday", "piano tuning scheduled")
}

func testOnlyText(t *testing.T, f *fixture) {
	s := f.newSession(t, app, user, "s1", msg{event.AuthorUser, "remember the umbrella"})
	// A function call, a thought and a state-only event are not remembered.
	call := &event.Event{ID: event.NewID(), Author: "agent", Timestamp: f.nextTime()}
	call.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
		genai.NewPartFromFunctionCall("umbrella_lookup", map[string]any{"q": "umbrella"}),
	}}
	f.appendEvent(t, s, call)
	thought := &event.Event{ID: event.NewID(), Author: "agent", Timestamp: f.nextTime()}
	thought.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: "umbrella thinking", Thought: true}}}
	f.appendEvent(t, s, thought)
	state := &event.Event{ID: event.NewID(), Author: "agent", Timestamp: f.nextTime()}
	state.Actions.StateDelta = map[string]any{"umbrella": true}
	f.appendEvent(t, s, state)
	f.add(t, s)
	res := f.search(t, app, user, "umbrella", 10)
	wantTexts(t, "umbrella", res, "remember the umbrella")
}

func testIsolation(t *testing.T, f *fixture) {
	f.add(t, f.newSession(t, app, user, "s1", msg{event.AuthorUser, "alice secret pineapple"}))
	f.add(t, f.newSession(t, app, "bob", "s1", msg{event.AuthorUser, "bob secret pineapple"}))
	f.add(t, f.newSession(t, "app2", user, "s1", msg{event.AuthorUser, "other app secret pineapple"}))
	f.add(t, f.newSession(t, app, user, "s2", msg{"agent", "second pineapple session"}))

	wantTexts(t, "pineapple", f.search(t, app, user, "pineapple", 10),
		"alice secret pineapple", "second pineapple session")
	wantTexts(t, "pineapple", f.search(t, app, "bob", "pineapple", 10), "bob secret pineapple")
	wantTexts(t, "pineapple", f.search(t, "app2", user, "pineapple", 10), "other app secret pineapple")
	if res := f.search(t, app, "carol", "pineapple", 10); len(res) != 0 {
		t.Errorf("a user with no memories found %q", texts(res))
	}
	if res := f.search(t, "app3", user, "pineapple", 10); len(res) != 0 {
		t.Errorf("an app with no memories found %q", texts(res))
	}
	// Re-adding bob's session does not disturb alice's memories of the same session id.
	f.add(t, f.newSession(t, app, "bob", "s9", msg{event.AuthorUser, "nothing relevant"}))
	wantTexts(t, "secret", f.search(t, app, user, "secret", 10), "alice secret pineapple")
}

func testReAdd(t *testing.T, f *fixture) {
	s := f.newSession(t, app, user, "s1",
		msg{event.AuthorUser, "walrus facts please"},
		msg{"agent", "walrus tusks grow long"},
	)
	f.add(t, s)
	f.add(t, s)
	wantTexts(t, "walrus", f.search(t, app, user, "walrus", 10), "walrus facts please", "walrus tusks grow long")

	f.appendText(t, s, msg{event.AuthorUser, "walrus diet question"})
	f.add(t, s)
	res := f.search(t, app, user, "walrus", 10)
	wantTexts(t, "walrus", res, "walrus facts please", "walrus tusks grow long", "walrus diet question")
	ids := map[string]bool{}
	for _, e := range res {
		if ids[e.ID] {
			t.Errorf("entry %q returned twice", e.ID)
		}
		ids[e.ID] = true
	}
	// Other sessions are untouched by re-adding this one.
	f.add(t, f.newSession(t, app, user, "s2", msg{"agent", "walrus sighting"}))
	f.add(t, s)
	if got := len(f.search(t, app, user, "walrus", 10)); got != 4 {
		t.Errorf("after re-adding s1, %d walrus entries, want 4", got)
	}
}

// testReplaceDirect checks Store.Replace: a new set of entries replaces the
// old one, and an empty set removes the session's memories.
func testReplaceDirect(t *testing.T, f *fixture) {
	ctx := t.Context()
	entry := func(id, text string) memory.Entry {
		return memory.Entry{ID: id, SessionID: "s1", Author: "agent", Timestamp: f.nextTime(),
			Content: genai.NewContentFromText(text, genai.RoleModel)}
	}
	if err := f.store.Replace(ctx, app, user, "s1", []memory.Entry{entry("e1", "old cactus note")}); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	if err := f.store.Replace(ctx, app, user, "s2", []memory.Entry{entry("e9", "other cactus note")}); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	if err := f.store.Replace(ctx, app, user, "s1", []memory.Entry{entry("e2", "new orchid note")}); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	wantTexts(t, "cactus", f.search(t, app, user, "cactus", 10), "other cactus note")
	wantTexts(t, "orchid", f.search(t, app, user, "orchid", 10), "new orchid note")
	if err := f.store.Replace(ctx, app, user, "s1", nil); err != nil {
		t.Fatalf("Replace with no entries: %v", err)
	}
	if res := f.search(t, app, user, "orchid note", 10); len(res) != 1 || res[0].Text() != "other cactus note" {
		t.Errorf("after clearing s1, Search = %q, want only s2's note", texts(res))
	}
	// Returned entries are the caller's: changing them changes nothing stored.
	res := f.search(t, app, user, "cactus", 10)
	if len(res) == 1 && res[0].Content != nil && len(res[0].Content.Parts) > 0 {
		res[0].Content.Parts[0].Text = "mutated"
		wantTexts(t, "cactus", f.search(t, app, user, "cactus", 10), "other cactus note")
	}
}

func testEmptyQuery(t *testing.T, f *fixture) {
	f.add(t, f.newSession(t, app, user, "s1", msg{event.AuthorUser, "anything at all"}))
	for _, q := range []string{"", "   ", "\t\n"} {
		if res := f.search(t, app, user, q, 10); len(res) != 0 {
			t.Errorf("Search(%q) = %q, want nothing", q, texts(res))
		}
	}
}

// testOperators checks that query syntax of full-text engines is not
// interpreted: quotes, parentheses, wildcards and boolean words are just
// text around the searched words.
func testOperators(t *testing.T, f *fixture) {
	f.add(t, f.newSession(t, app, user, "s1", msg{event.AuthorUser, "the llama wore a poncho"}))
	for _, q := range []string{`"llama`, `llama*`, `(llama) AND`, `NEAR(llama poncho)`, `-llama`, `llama:*`, `'llama'`, `llama & | !`, `poncho OR`, `llama?`} {
		res, err := f.mem.Search(t.Context(), app, user, q, nil)
		if err != nil {
			t.Errorf("Search(%q): %v", q, err)
			continue
		}
		wantTexts(t, q, res, "the llama wore a poncho")
	}
	for _, q := range []string{`"`, `*`, `()`, `&|!`, `:`} {
		if _, err := f.mem.Search(t.Context(), app, user, q, nil); err != nil {
			t.Errorf("Search(%q): %v", q, err)
		}
	}
}

func testLimit(t *testing.T, f *fixture) {
	var msgs []msg
	for i := range 15 {
		msgs = append(msgs, msg{"agent", fmt.Sprintf("penguin fact number %c", 'a'+i)})
	}
	f.add(t, f.newSession(t, app, user, "s1", msgs...))
	if got := len(f.search(t, app, user, "penguin", 3)); got != 3 {
		t.Errorf("limit 3 returned %d entries", got)
	}
	if got := len(f.search(t, app, user, "penguin", 1)); got != 1 {
		t.Errorf("limit 1 returned %d entries", got)
	}
	if got := len(f.search(t, app, user, "penguin", 100)); got != 15 {
		t.Errorf("limit 100 returned %d entries, want all 15", got)
	}
	// The default limit is 10.
	res, err := f.mem.Search(t.Context(), app, user, "penguin", nil)
	if err != nil {
		t.Fatalf("Search: %v", err)
	}
	if len(res) != 10 {
		t.Errorf("default limit returned %d entries, want 10", len(res))
	}
}

func testConcurrentAdds(t *testing.T, f *fixture) {
	const n = 8
	words := []string{"amber", "birch", "cobalt", "dune", "ember", "fjord", "glacier", "harbor"}
	sessions := make([]*session.Session, n)
	for i := range n {
		sessions[i] = f.newSession(t, app, user, fmt.Sprint("s", i),
			msg{event.AuthorUser, "shared topic " + words[i]},
			msg{"agent", words[i] + " reply"},
		)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := f.mem.AddSession(context.Background(), sessions[i]); err != nil {
				t.Errorf("AddSession(s%d): %v", i, err)
			}
		})
	}
	wg.Wait()
	for i := range n {
		wantTexts(t, words[i], f.search(t, app, user, words[i], 10), "shared topic "+words[i], words[i]+" reply")
	}
	if got := len(f.search(t, app, user, "shared topic", 100)); got != n {
		t.Errorf("Search(shared topic) returned %d entries, want %d", got, n)
	}
}

// ids returns the entry ids of es, sorted, and fails on an id seen twice.
func ids(t *testing.T, es []memory.Entry) []string {
	t.Helper()
	out := make([]string, 0, len(es))
	for _, e := range es {
		if slices.Contains(out, e.ID) {
			t.Errorf("entry %q returned twice", e.ID)
		}
		out = append(out, e.ID)
	}
	slices.Sort(out)
	return out
}

// testAddEvents checks Service.AddEvents: only the given events are added,
// by the rule of AddSession; an event added again is one memory, updated
// in place; the session's other memories stay.
func testAddEvents(t *testing.T, f *fixture) {
	ctx := t.Context()
	s := f.newSession(t, app, user, "s1",
		msg{event.AuthorUser, "kiwi orchard visit"},
		msg{"agent", "kiwi harvest starts in May"},
	)
	f.add(t, f.newSession(t, app, user, "s2", msg{"agent", "kiwi from another session"}))
	evs := s.Events()
	addEvents := func(evs ...*event.Event) {
		t.Helper()
		if err := f.mem.AddEvents(ctx, s, evs); err != nil {
			t.Fatalf("AddEvents: %v", err)
		}
	}
	addEvents(evs[0])
	wantTexts(t, "kiwi", f.search(t, app, user, "kiwi", 10), "kiwi orchard visit", "kiwi from another session")
	addEvents(evs[0], evs[1])
	addEvents(evs[0])
	wantTexts(t, "kiwi", f.search(t, app, user, "kiwi", 10),
		"kiwi orchard visit", "kiwi harvest starts in May", "kiwi from another session")

	// An event given twice in one call is one memory.
	f.appendText(t, s, msg{event.AuthorUser, "kiwi jam recipe"})
	last := s.At(s.Len() - 1)
	addEvents(last, last)
	res := f.search(t, app, user, "kiwi", 10)
	if got := ids(t, res); len(got) != 4 {
		t.Errorf("Search(kiwi) ids = %q, want 4", got)
	}
	wantTexts(t, "kiwi", res, "kiwi orchard visit", "kiwi harvest starts in May", "kiwi jam recipe", "kiwi from another session")

	// Events without text add nothing, and adding nothing changes nothing.
	call := &event.Event{ID: event.NewID(), Author: "agent", Timestamp: f.nextTime()}
	call.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
		genai.NewPartFromFunctionCall("kiwi_lookup", map[string]any{"q": "kiwi"}),
		{Text: "kiwi thinking", Thought: true},
	}}
	f.appendEvent(t, s, call)
	addEvents(call)
	addEvents()
	addEvents(nil)
	wantTexts(t, "kiwi", f.search(t, app, user, "kiwi", 10),
		"kiwi orchard visit", "kiwi harvest starts in May", "kiwi jam recipe", "kiwi from another session")

	// Entries made by AddEvents are those AddSession makes, and the two
	// mix: re-adding the whole session and then some of its events again
	// leaves one memory per event.
	before := f.search(t, app, user, "kiwi", 10)
	f.add(t, s)
	addEvents(evs[1])
	after := f.search(t, app, user, "kiwi", 10)
	if !slices.Equal(ids(t, before), ids(t, after)) {
		t.Errorf("after AddSession, ids = %q, want %q", ids(t, after), ids(t, before))
	}
	byID := map[string]memory.Entry{}
	for _, e := range before {
		byID[e.ID] = e
	}
	for _, e := range after {
		b := byID[e.ID]
		if e.SessionID != b.SessionID || e.Author != b.Author || !e.Timestamp.Equal(b.Timestamp) || e.Text() != b.Text() ||
			e.Content == nil || b.Content == nil || e.Content.Role != b.Content.Role {
			t.Errorf("entry %s from AddSession = %+v, from AddEvents %+v", e.ID, e, b)
		}
	}
	if err := f.mem.AddEvents(ctx, nil, evs); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("AddEvents(nil session) = %v, want ErrInvalid", err)
	}
}

// testUpsertDirect checks Store.Upsert: an entry replaces the session's
// entry with its id, other entries and sessions stay, and Replace still
// replaces everything.
func testUpsertDirect(t *testing.T, f *fixture) {
	ctx := t.Context()
	entry := func(session, id, text string) memory.Entry {
		return memory.Entry{ID: id, SessionID: session, Author: "agent", Timestamp: f.nextTime(),
			Content: genai.NewContentFromText(text, genai.RoleModel)}
	}
	upsert := func(session string, es ...memory.Entry) {
		t.Helper()
		if err := f.store.Upsert(ctx, app, user, session, es); err != nil {
			t.Fatalf("Upsert: %v", err)
		}
	}
	// Into a session with no memories yet.
	upsert("s1", entry("s1", "e1", "old cactus note"), entry("s1", "e2", "fern note"))
	if err := f.store.Replace(ctx, app, user, "s2", []memory.Entry{entry("s2", "e1", "other cactus note")}); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	upsert("s1", entry("s1", "e1", "new orchid note"), entry("s1", "e3", "tulip note"))
	upsert("s1")
	wantTexts(t, "cactus", f.search(t, app, user, "cactus", 10), "other cactus note")
	wantTexts(t, "note", f.search(t, app, user, "note", 10), "new orchid note", "fern note", "tulip note", "other cactus note")
	// Another user's session of the same id is another session.
	if err := f.store.Upsert(ctx, app, "bob", "s1", []memory.Entry{entry("s1", "e1", "bob orchid")}); err != nil {
		t.Fatalf("Upsert: %v", err)
	}
	wantTexts(t, "orchid", f.search(t, app, user, "orchid", 10), "new orchid note")
	// Replace drops what Upsert stored.
	if err := f.store.Replace(ctx, app, user, "s1", []memory.Entry{entry("s1", "e4", "lily note")}); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	wantTexts(t, "note", f.search(t, app, user, "note", 10), "lily note", "other cactus note")
	if err := f.store.Replace(ctx, app, user, "s1", nil); err != nil {
		t.Fatalf("Replace with no entries: %v", err)
	}
	upsert("s1", entry("s1", "e4", "lily again"))
	wantTexts(t, "lily", f.search(t, app, user, "lily", 10), "lily again")
}

// testConcurrentUpserts checks that concurrent upserts of the same ids into
// one session leave one memory per id.
func testConcurrentUpserts(t *testing.T, f *fixture) {
	const n = 8
	words := []string{"amber", "birch", "cobalt", "dune", "ember", "fjord", "glacier", "harbor"}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			es := []memory.Entry{
				{ID: "shared", SessionID: "s1", Author: "agent", Timestamp: f.nextTime(), Content: genai.NewContentFromText("common walnut", genai.RoleModel)},
				{ID: fmt.Sprint("own", i), SessionID: "s1", Author: "agent", Timestamp: f.nextTime(), Content: genai.NewContentFromText(words[i]+" walnut", genai.RoleModel)},
			}
			if err := f.store.Upsert(context.Background(), app, user, "s1", es); err != nil {
				t.Errorf("Upsert %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	res := f.search(t, app, user, "walnut", 100)
	if got := len(ids(t, res)); got != n+1 {
		t.Errorf("Search(walnut) returned %d entries, want %d", got, n+1)
	}
}

// testWordsInsidePunctuation checks that a word is a run of letters and
// digits wherever it stands: words inside e-mail addresses, URLs, host
// names, file paths and decimal numbers are found, as are the words of a
// query written the same way.
func testWordsInsidePunctuation(t *testing.T, f *fixture) {
	mail := "write to alice@example.com today"
	link := "docs at https://wiki.example.org/onboarding/guide"
	pi := "pi is about 3.14159"
	conf := "config lives in /etc/loom/server.yaml"
	f.add(t, f.newSession(t, app, user, "s1",
		msg{"agent", mail}, msg{"agent", link}, msg{"agent", pi}, msg{"agent", conf}))
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"alice", []string{mail}},
		{"example", []string{mail, link}},
		{"wiki", []string{link}},
		{"onboarding", []string{link}},
		{"14159", []string{pi}},
		{"3", []string{pi}},
		{"loom", []string{conf}},
		{"yaml", []string{conf}},
		{"server.yaml", []string{conf}},
		{"bob@example.org", []string{mail, link}},
	} {
		wantTexts(t, c.query, f.search(t, app, user, c.query, 10), c.want...)
	}
}

// testDiacritics checks that words are compared as they are written,
// lower-cased: "café" and "cafe" are two words.
func testDiacritics(t *testing.T, f *fixture) {
	f.add(t, f.newSession(t, app, user, "s1",
		msg{"agent", "meet at the café tomorrow"},
		msg{"agent", "the cafe downstairs is closed"},
		msg{"agent", "a naïve plan"},
	))
	wantTexts(t, "café", f.search(t, app, user, "café", 10), "meet at the café tomorrow")
	wantTexts(t, "CAFÉ", f.search(t, app, user, "CAFÉ", 10), "meet at the café tomorrow")
	wantTexts(t, "cafe", f.search(t, app, user, "cafe", 10), "the cafe downstairs is closed")
	if res := f.search(t, app, user, "naive", 10); len(res) != 0 {
		t.Errorf("Search(naive) = %q, want nothing", texts(res))
	}
}

// testCaseBeyondASCII checks that case is folded as strings.ToLower folds
// it, beyond ASCII too, and no further: "ß" is not "ss".
func testCaseBeyondASCII(t *testing.T, f *fixture) {
	f.add(t, f.newSession(t, app, user, "s1",
		msg{"agent", "ÉCOLE Ærøskøbing ΣΟΦΙΑ"},
		msg{"agent", "die STRASSE ist breit"},
	))
	for _, q := range []string{"école", "ærøskøbing", "ÆRØSKØBING", "σοφια", "Σοφια"} {
		wantTexts(t, q, f.search(t, app, user, q, 10), "ÉCOLE Ærøskøbing ΣΟΦΙΑ")
	}
	wantTexts(t, "strasse", f.search(t, app, user, "strasse", 10), "die STRASSE ist breit")
	if res := f.search(t, app, user, "straße", 10); len(res) != 0 {
		t.Errorf("Search(straße) = %q, want nothing", texts(res))
	}
}

// testManyQueryWords checks that a query of many distinct words, 1,500,
// is answered as a short one is: the entry holding one of them is found.
func testManyQueryWords(t *testing.T, f *fixture) {
	f.add(t, f.newSession(t, app, user, "s1", msg{"agent", "the word w1499 is here"}))
	ws := make([]string, 1500)
	for i := range ws {
		ws[i] = fmt.Sprint("w", i)
	}
	wantTexts(t, "1,500 words", f.search(t, app, user, strings.Join(ws, " "), 10), "the word w1499 is here")
}

// testOnlyLettersAndDigits checks that only letters and decimal digits
// make words: superscripts, fractions and other number signs separate
// words, and decimal digits of any script are digits.
func testOnlyLettersAndDigits(t *testing.T, f *fixture) {
	f.add(t, f.newSession(t, app, user, "s1",
		msg{"agent", "area x² plus half½cup"},
		msg{"agent", "room ٣٤ upstairs"},
	))
	wantTexts(t, "x", f.search(t, app, user, "x", 10), "area x² plus half½cup")
	wantTexts(t, "half cup", f.search(t, app, user, "half cup", 10), "area x² plus half½cup")
	wantTexts(t, "٣٤", f.search(t, app, user, "٣٤", 10), "room ٣٤ upstairs")
}

// testMoreWordsFirstAtScale checks that an entry containing more of the
// query's words comes first however many entries contain fewer of them
// and rank higher by a full-text engine's relevance: here a long entry
// with each word once against many short ones with some of the words many
// times.
func testMoreWordsFirstAtScale(t *testing.T, f *fixture) {
	filler := make([]string, 300)
	for i := range filler {
		filler[i] = fmt.Sprintf("w%d", i)
	}
	check := func(query, want string) {
		t.Helper()
		for _, limit := range []int{1, 3} {
			got := texts(f.search(t, app, user, query, limit))
			if len(got) != limit || got[0] != want {
				for i, s := range got {
					got[i] = s[:min(len(s), 20)]
				}
				t.Errorf("Search(%s, limit %d) = %q, want the entry with all its words first", query, limit, got)
			}
		}
	}

	var msgs []msg
	for i := range 60 {
		msgs = append(msgs,
			msg{"agent", fmt.Sprintf("%sz%d", strings.Repeat("zebra ", 12), i)},
			msg{"agent", fmt.Sprintf("%so%d", strings.Repeat("okapi ", 12), i)})
	}
	for i := range 1000 {
		msgs = append(msgs, msg{"agent", fmt.Sprintf("unrelated note n%d", i)})
	}
	both := "zebra " + strings.Join(filler, " ") + " okapi"
	msgs = append(msgs, msg{event.AuthorUser, both})
	f.add(t, f.newSession(t, app, user, "s1", msgs...))
	check("zebra okapi", both)

	// Entries with two of three words many times each against one with
	// all three once.
	msgs = msgs[:0]
	for i := range 60 {
		msgs = append(msgs, msg{"agent", fmt.Sprintf("%sp%d", strings.Repeat("zebra okapi ", 12), i)})
	}
	all := "lemur " + strings.Join(filler, " ") + " okapi zebra"
	msgs = append(msgs, msg{event.AuthorUser, all})
	f.add(t, f.newSession(t, app, user, "s2", msgs...))
	check("zebra okapi lemur", all)
}
