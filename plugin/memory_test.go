package plugin_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/memory/memmemory"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// countingStore is a memory.Store that counts the entries written to it.
type countingStore struct {
	memory.Store
	mu       sync.Mutex
	written  int // entries passed to Replace and Upsert
	replaces int // calls of Replace
}

func (c *countingStore) Replace(ctx context.Context, app, user, sessionID string, entries []memory.Entry) error {
	c.mu.Lock()
	c.written += len(entries)
	c.replaces++
	c.mu.Unlock()
	return c.Store.Replace(ctx, app, user, sessionID, entries)
}

func (c *countingStore) Upsert(ctx context.Context, app, user, sessionID string, entries []memory.Entry) error {
	c.mu.Lock()
	c.written += len(entries)
	c.mu.Unlock()
	return c.Store.Upsert(ctx, app, user, sessionID, entries)
}

func (c *countingStore) counts() (written, replaces int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.written, c.replaces
}

// memoryModel answers a message containing "echo" with a call of echo,
// one containing "wait" with a call of the long-running wait, a function
// response with a text naming the tool, and any other message with a text
// repeating it.
func memoryModel() *scripted.Model {
	return scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if frs := scripted.LastFunctionResponse(req); len(frs) > 0 {
			return scripted.Text(fmt.Sprintf("%s finished for %s", frs[0].Name, scripted.LastUserText(req))), nil
		}
		text := scripted.LastUserText(req)
		switch {
		case strings.Contains(text, "echo"):
			return scripted.Call("echo", map[string]any{"v": text}), nil
		case strings.Contains(text, "wait"):
			return scripted.Call("wait", nil), nil
		}
		return scripted.Text("noted " + text), nil
	})
}

func memoryRunner(t *testing.T, mem *memory.Service) *runner.Runner {
	t.Helper()
	wait, err := functiontool.New(functiontool.Config{Name: "wait", LongRunning: true},
		func(context.Context, tool.Context, struct{}) (map[string]any, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	a, err := llmagent.New(llmagent.Config{Name: "a", Model: memoryModel(), Tools: []tool.Tool{echoTool{}, wait}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, Sessions: memsession.NewService(), Memory: mem,
		Plugins: []*plugin.Plugin{plugin.AddSessionToMemory()}, AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func runText(t *testing.T, r *runner.Runner, text string) []*event.Event {
	t.Helper()
	evs, err := r.RunSync(context.Background(), "u", "s", genai.NewContentFromText(text, genai.RoleUser), nil)
	if err != nil {
		t.Fatalf("run %q: %v", text, err)
	}
	return evs
}

// TestAddSessionToMemoryWritesOnlyNewEvents checks that the memory work of
// an invocation does not grow with the session: each invocation writes the
// entries of its own events (its message and the final answer; the tool
// call and response have no text) and never replaces the whole session.
func TestAddSessionToMemoryWritesOnlyNewEvents(t *testing.T) {
	store := &countingStore{Store: memmemory.New()}
	mem := memory.NewService(store)
	r := memoryRunner(t, mem)
	before := 0
	for i := range 30 {
		msg := fmt.Sprintf("note%d", i)
		if i%2 == 1 {
			msg = fmt.Sprintf("echo note%d", i)
		}
		runText(t, r, msg)
		written, replaces := store.counts()
		if got := written - before; got != 2 {
			t.Fatalf("invocation %d wrote %d entries, want 2 (its own events only)", i, got)
		}
		if replaces != 0 {
			t.Fatalf("invocation %d replaced the session's memories %d times", i, replaces)
		}
		before = written
	}
	res, err := mem.Search(context.Background(), "app", "u", "note0 note29", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"echo note29", "echo finished for echo note29", "note0", "noted note0"}
	got := make([]string, len(res))
	for i := range res {
		got[i] = res[i].Text()
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("Search(note0 note29) = %q, want %q", got, want)
	}
}

// entryKey is what a search result says of one memory.
type entryKey struct {
	id, session, author, text string
	ts                        int64
}

func entryKeys(es []memory.Entry) []entryKey {
	out := make([]entryKey, len(es))
	for i, e := range es {
		out[i] = entryKey{e.ID, e.SessionID, e.Author, e.Text(), e.Timestamp.UnixNano()}
	}
	return out
}

// TestAddSessionToMemoryMatchesAddSession drives a session through a
// runner with the plugin, with tool calls and an invocation that pauses on
// a long-running call, lets another invocation run, and is then resumed;
// it checks that searches find exactly what adding the whole session at
// the end finds.
func TestAddSessionToMemoryMatchesAddSession(t *testing.T) {
	ctx := context.Background()
	store := &countingStore{Store: memmemory.New()}
	mem := memory.NewService(store)
	r := memoryRunner(t, mem)

	runText(t, r, "alpha plans")
	runText(t, r, "echo bravo")
	paused := runText(t, r, "wait for charlie approval")
	var invID, callID string
	for _, ev := range paused {
		if len(ev.LongRunningToolIDs) > 0 {
			invID, callID = ev.InvocationID, ev.LongRunningToolIDs[0]
		}
	}
	if callID == "" {
		t.Fatal("the wait call did not pause the invocation")
	}
	runText(t, r, "delta meanwhile")
	resp := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
		{FunctionResponse: &genai.FunctionResponse{ID: callID, Name: "wait", Response: map[string]any{"ok": true}}},
		{Text: "charlie approved by echo"},
	}}
	if _, err := r.RunSync(ctx, "u", "s", resp, nil); err != nil {
		t.Fatalf("resume: %v", err)
	}
	runText(t, r, "echo foxtrot")

	sess, err := r.Sessions().Get(ctx, session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The resumed invocation's events are not contiguous: another
	// invocation ran between its pause and its end.
	var order []string
	for _, ev := range sess.Events() {
		if len(order) == 0 || order[len(order)-1] != ev.InvocationID {
			order = append(order, ev.InvocationID)
		}
	}
	if n := len(slices.DeleteFunc(slices.Clone(order), func(id string) bool { return id != invID })); n != 2 {
		t.Fatalf("the paused invocation has %d runs of events in the log, want 2", n)
	}
	if _, replaces := store.counts(); replaces != 0 {
		t.Errorf("the plugin replaced the session's memories %d times", replaces)
	}

	whole := memmemory.NewService()
	if err := whole.AddSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	// A query with every word of the session finds every memory.
	var words []string
	for _, ev := range sess.Events() {
		words = append(words, strings.Fields(ev.Text())...)
	}
	slices.Sort(words)
	words = slices.Compact(words)
	queries := append([]string{strings.Join(words, " ")}, words...)
	for _, q := range queries {
		got, err := mem.Search(ctx, "app", "u", q, &memory.SearchOptions{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		want, err := whole.Search(ctx, "app", "u", q, &memory.SearchOptions{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(entryKeys(got), entryKeys(want)) {
			t.Errorf("Search(%q):\n got %v\nwant %v", q, entryKeys(got), entryKeys(want))
		}
	}
	all, _ := whole.Search(ctx, "app", "u", queries[0], &memory.SearchOptions{Limit: 1000})
	// The texts of the six runs: every message and answer, but for the
	// paused run, which has no answer.
	if len(all) != 11 {
		t.Errorf("the session makes %d memories, want 11: %v", len(all), entryKeys(all))
	}
}

// BenchmarkAddSessionToMemory runs invocations with the plugin in a
// session that already holds n earlier invocations: the time per
// invocation should not depend on n.
func BenchmarkAddSessionToMemory(b *testing.B) {
	for _, n := range []int{10, 2000} {
		b.Run(fmt.Sprint("session=", n), func(b *testing.B) {
			a, err := llmagent.New(llmagent.Config{Name: "a", Model: scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
				return scripted.Text("noted " + scripted.LastUserText(req)), nil
			})})
			if err != nil {
				b.Fatal(err)
			}
			r, err := runner.New(runner.Config{AppName: "app", Agent: a, Sessions: memsession.NewService(), Memory: memmemory.NewService(),
				Plugins: []*plugin.Plugin{plugin.AddSessionToMemory()}, AutoCreateSession: true})
			if err != nil {
				b.Fatal(err)
			}
			run := func(i int) {
				if _, err := r.RunSync(b.Context(), "u", "s", genai.NewContentFromText(fmt.Sprint("note ", i), genai.RoleUser), nil); err != nil {
					b.Fatal(err)
				}
			}
			for i := range n {
				run(i)
			}
			i := n
			for b.Loop() {
				run(i)
				i++
			}
		})
	}
}
