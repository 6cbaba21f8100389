package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/session/sqlsession"
)

// heapAfterGC returns the live heap once the garbage, and the model
// histories of dropped sessions (removed by cleanups after a collection),
// are gone.
func heapAfterGC() uint64 {
	var ms runtime.MemStats
	for range 3 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // let cleanups run
	}
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// echoLLM returns an LLM agent whose model answers every turn with "ok".
func echoLLM(t *testing.T) (*llmagent.Agent, *scripted.Model) {
	t.Helper()
	m := scripted.New("echo", func(context.Context, *model.Request) (scripted.Turn, error) {
		return scripted.Text("ok"), nil
	})
	a, err := llmagent.New(llmagent.Config{Name: "echo", Model: m})
	if err != nil {
		t.Fatal(err)
	}
	return a, m
}

// TestSessionCacheBoundedInBytes runs twenty 2 MB messages, two in each of
// ten sessions on SQLite, through a runner whose session cache may hold
// 5 MiB: the cache's accounted bytes never exceed the bound, and the heap
// after the run grows by about the bound, not by the 40 MB of sessions a
// cache bounded only in count would keep.
func TestSessionCacheBoundedInBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 40 MB through SQLite")
	}
	ctx := context.Background()
	svc, err := sqlsession.NewService(ctx, "sqlite://"+filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	ag, _ := echoLLM(t)
	const budget = 5 << 20
	r, err := runner.New(runner.Config{AppName: app, Agent: ag, Sessions: svc, AutoCreateSession: true, SessionCacheBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 2<<20)
	base := heapAfterGC()
	for i := range 20 {
		id := fmt.Sprint("s", i%10)
		evs, err := r.RunSync(ctx, user, id, userText(fmt.Sprint(i, big)), nil)
		if err != nil || len(evs) != 1 || evs[0].Content.Parts[0].Text != "ok" {
			t.Fatalf("turn %d: %v, %d events", i, err, len(evs))
		}
		if n, bytes := r.CacheUsage(); bytes > budget {
			t.Fatalf("after turn %d the cache holds %d sessions of %d bytes, over its bound of %d", i, n, bytes, budget)
		}
	}
	grew := int64(heapAfterGC()) - int64(base)
	n, bytes := r.CacheUsage()
	t.Logf("heap grew by %d MB; the cache holds %d sessions of %d bytes", grew>>20, n, bytes)
	if grew > budget+10<<20 {
		t.Fatalf("heap grew by %d MB after twenty 2 MB messages, want at most the cache bound (%d MB) and a margin", grew>>20, budget>>20)
	}
	runtime.KeepAlive(r)
}

// TestEvictedSessionReloads checks that a session dropped from the cache,
// by a newer one or for being larger than the bound, continues next turn
// from the store with its whole history.
func TestEvictedSessionReloads(t *testing.T) {
	ctx := context.Background()
	m := scripted.New("echo", func(context.Context, *model.Request) (scripted.Turn, error) {
		return scripted.Text("ok"), nil
	}).Recording()
	ag, err := llmagent.New(llmagent.Config{Name: "echo", Model: m})
	if err != nil {
		t.Fatal(err)
	}
	svc := memsession.NewService()
	const budget = 64 << 10
	r, err := runner.New(runner.Config{AppName: app, Agent: ag, Sessions: svc, AutoCreateSession: true, SessionCacheBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	turn := func(id, text string) {
		t.Helper()
		evs, err := r.RunSync(ctx, user, id, userText(text), nil)
		if err != nil || len(evs) != 1 {
			t.Fatalf("turn %q in %s: %v, %d events", text, id, err, len(evs))
		}
	}
	// The texts each model request carried, in order.
	lastRequest := func() []string {
		reqs := m.Requests()
		var texts []string
		for _, c := range reqs[len(reqs)-1].Contents {
			for _, p := range c.Parts {
				texts = append(texts, p.Text)
			}
		}
		return texts
	}
	// A session holding one of these, in its event and in its model
	// history, fits in the cache; two such sessions do not.
	filler := strings.Repeat("f", 20<<10)

	turn("a", "a1 "+filler)
	if n, _ := r.CacheUsage(); n != 1 {
		t.Fatalf("cache holds %d sessions after one turn, want 1", n)
	}
	turn("b", "b1 "+filler) // evicts a
	if n, bytes := r.CacheUsage(); n != 1 || bytes > budget {
		t.Fatalf("cache holds %d sessions of %d bytes, want 1 within %d", n, bytes, budget)
	}
	turn("a", "a2")
	if got, want := lastRequest(), []string{"a1 " + filler, "ok", "a2"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the reloaded session sent %.40q, want its whole history", got)
	}

	// A session larger than the bound is never kept, and still works.
	turn("c", "c1 "+strings.Repeat("g", budget))
	if n, _ := r.CacheUsage(); n != 1 {
		t.Fatalf("cache holds %d sessions, want only a (c is too large)", n)
	}
	turn("c", "c2")
	if got := lastRequest(); len(got) != 3 || got[2] != "c2" || !strings.HasPrefix(got[0], "c1 ") {
		t.Fatalf("the oversized session sent %.40q, want its whole history", got)
	}
	s, err := svc.Get(ctx, session.Key{AppName: app, UserID: user, SessionID: "c"}, nil)
	if err != nil || s.Len() != 4 {
		t.Fatalf("stored session c: %v, %d events, want 4", err, s.Len())
	}
}

// TestSessionCacheDisabled checks that a negative byte bound keeps no
// session between turns, and that turns still see their history.
func TestSessionCacheDisabled(t *testing.T) {
	m := scripted.New("echo", func(context.Context, *model.Request) (scripted.Turn, error) {
		return scripted.Text("ok"), nil
	}).Recording()
	ag, err := llmagent.New(llmagent.Config{Name: "echo", Model: m})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: app, Agent: ag, Sessions: memsession.NewService(), AutoCreateSession: true, SessionCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"one", "two"} {
		if _, err := r.RunSync(context.Background(), user, "s", userText(text), nil); err != nil {
			t.Fatal(err)
		}
		if n, bytes := r.CacheUsage(); n != 0 || bytes != 0 {
			t.Fatalf("a disabled cache holds %d sessions of %d bytes", n, bytes)
		}
	}
	reqs := m.Requests()
	if got := len(reqs[len(reqs)-1].Contents); got != 3 {
		t.Fatalf("the second turn sent %d contents, want 3 (one, ok, two)", got)
	}
}

// TestIdleSessionsAreTrimmed runs 150 turns in a session: the runner keeps
// the idle session trimmed (session.Session.Trim), so its cached copy is
// much smaller than a copy holding every event decoded, and the model sees on
// the next turn exactly the history a runner without a cache sends.
func TestIdleSessionsAreTrimmed(t *testing.T) {
	ctx := context.Background()
	svc := memsession.NewService()
	a, m := echoLLM(t)
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, Sessions: svc, AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	key := session.Key{AppName: "app", UserID: "u", SessionID: "s"}
	if _, err := svc.Create(ctx, key, nil); err != nil {
		t.Fatal(err)
	}
	decoded, err := svc.Get(ctx, key, nil) // refreshed below: it appends the events decoded
	if err != nil {
		t.Fatal(err)
	}
	for i := range 150 {
		if _, err := r.RunSync(ctx, "u", "s", genai.NewContentFromText(fmt.Sprint("turn ", i), genai.RoleUser), nil); err != nil {
			t.Fatal(err)
		}
	}
	_, cached := r.CacheUsage()
	full, err := svc.Get(ctx, session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.Refresh(ctx, decoded); err != nil {
		t.Fatal(err)
	}
	if full.Len() != 300 || decoded.Len() != 300 || cached <= 0 || cached > decoded.Size()*2/3 {
		t.Fatalf("cached %d bytes for a session of %d events and %d bytes decoded: want at most two thirds", cached, full.Len(), decoded.Size())
	}

	m.Recording()
	b, fresh := echoLLM(t)
	fresh.Recording()
	uncached, err := runner.New(runner.Config{AppName: "app", Agent: b, Sessions: svc, SessionCacheSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	last := genai.NewContentFromText("last turn", genai.RoleUser)
	if _, err := r.RunSync(ctx, "u", "s", last, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Get(ctx, session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil); err != nil {
		t.Fatal(err)
	}
	// The uncached runner answers the same question in a copy of the
	// session as it stood before the last turn.
	if _, err := r.Fork(ctx, "u", "s", full.At(299).ID, "copy"); err != nil {
		t.Fatal(err)
	}
	if _, err := uncached.RunSync(ctx, "u", "copy", last, nil); err != nil {
		t.Fatal(err)
	}
	got, want := m.Requests(), fresh.Requests()
	gotJSON, _ := json.Marshal(got[len(got)-1].Contents)
	wantJSON, _ := json.Marshal(want[len(want)-1].Contents)
	if len(got[len(got)-1].Contents) != 301 || string(gotJSON) != string(wantJSON) {
		t.Fatalf("history of the trimmed session's turn (%d contents) differs from an uncached runner's:\n%s\nwant\n%s",
			len(got[len(got)-1].Contents), gotJSON, wantJSON)
	}
}

// TestCacheCountsModelHistories checks that the model history an LLM agent
// keeps for a cached session counts in the cache's bytes, so that the
// cache's bound holds what sessions really keep in memory.
func TestCacheCountsModelHistories(t *testing.T) {
	ctx := context.Background()
	svc := memsession.NewService()
	a, _ := echoLLM(t)
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, Sessions: svc, AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if _, err := r.RunSync(ctx, "u", "s", genai.NewContentFromText(fmt.Sprint("question ", i), genai.RoleUser), nil); err != nil {
			t.Fatal(err)
		}
	}
	stored, err := svc.Get(ctx, session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var history int64 // what the agent's history of the 200 contents holds, at least
	for _, ev := range stored.Events() {
		history += session.ContentSize(ev.Content)
	}
	if _, cached := r.CacheUsage(); stored.Len() != 200 || cached < history {
		t.Fatalf("the cache counts %d bytes for a session whose model history holds %d", cached, history)
	}
}

// TestDeletedSessionLeavesCache checks that deleting a session drops it
// from the cache of idle live sessions at once: its memory goes back with
// it, not when newer sessions push it out, and a session of the same id
// created later starts empty.
func TestDeletedSessionLeavesCache(t *testing.T) {
	ctx := context.Background()
	ag, _ := echoLLM(t)
	svc := memsession.NewService()
	r, err := runner.New(runner.Config{AppName: app, Agent: ag, Sessions: svc, AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if _, err := r.RunSync(ctx, user, id, userText("hello"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := r.CacheUsage(); n != 3 {
		t.Fatalf("cache holds %d sessions after three turns, want 3", n)
	}
	for _, id := range []string{"a", "b"} {
		if err := r.DeleteSession(ctx, user, id); err != nil {
			t.Fatal(err)
		}
	}
	if n, bytes := r.CacheUsage(); n != 1 {
		t.Fatalf("cache holds %d sessions (%d bytes) after two of three were deleted, want 1", n, bytes)
	}
	evs, err := r.RunSync(ctx, user, "a", userText("again"), nil)
	if err != nil || len(evs) != 1 {
		t.Fatalf("turn in a new session a: %v, %d events", err, len(evs))
	}
	s, err := svc.Get(ctx, session.Key{AppName: app, UserID: user, SessionID: "a"}, nil)
	if err != nil || s.Len() != 2 {
		t.Fatalf("new session a: %v, %d events, want 2 (none of the deleted one's)", err, s.Len())
	}
}
