package runner_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

const app, user = "app", "u1"

func userText(s string) *genai.Content { return genai.NewContentFromText(s, genai.RoleUser) }

// custom builds a custom agent from a run function.
func custom(t *testing.T, name string, run func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool), subs ...agent.Agent) agent.Agent {
	t.Helper()
	a, err := agent.New(agent.Config{Name: name, SubAgents: subs, Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
		return func(yield func(*event.Event, error) bool) { run(ctx, inv, yield) }
	}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func setup(t *testing.T, root agent.Agent, cfg runner.Config) (*runner.Runner, *session.Service, session.Key) {
	t.Helper()
	svc := memsession.NewService()
	cfg.AppName, cfg.Agent, cfg.Sessions = app, root, svc
	r, err := runner.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	key := session.Key{AppName: app, UserID: user, SessionID: "s1"}
	if _, err := svc.Create(context.Background(), key, nil); err != nil {
		t.Fatal(err)
	}
	return r, svc, key
}

func stored(t *testing.T, svc *session.Service, key session.Key) *session.Session {
	t.Helper()
	s, err := svc.Get(context.Background(), key, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestR1CodeAfterYieldSeesCommittedState is the seeds' central guarantee: a
// custom agent that yields a state change and then reads it back sees the
// committed value, and the event is already in storage when it resumes.
func TestR1CodeAfterYieldSeesCommittedState(t *testing.T) {
	var svc *session.Service
	var key session.Key
	var seen any
	var storedAtResume int
	root := custom(t, "root", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		ev := inv.NewEvent()
		ev.Content = genai.NewContentFromText("setting", genai.RoleModel)
		ev.Actions.StateDelta = map[string]any{"counter": 1}
		if !yield(ev, nil) {
			return
		}
		seen, _ = inv.Session().Get("counter")
		fresh, err := svc.Get(ctx, key, nil)
		if err == nil {
			storedAtResume = fresh.Len()
			if v, _ := fresh.Get("counter"); v != 1.0 {
				seen = fmt.Sprintf("storage has %v", v)
			}
		}
	})
	r, s, k := setup(t, root, runner.Config{})
	svc, key = s, k
	if _, err := r.RunSync(context.Background(), user, "s1", userText("go"), nil); err != nil {
		t.Fatal(err)
	}
	if seen != 1.0 {
		t.Fatalf("after yield, state counter = %v, want 1", seen)
	}
	if storedAtResume != 2 {
		t.Fatalf("events in storage when the agent resumed = %d, want 2 (user + yielded)", storedAtResume)
	}
}

// TestR2MissingSession checks that running on a missing session fails with
// session.ErrNotFound unless auto-create is on.
func TestR2MissingSession(t *testing.T) {
	root := custom(t, "root", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		yield(inv.NewEvent(), nil)
	})
	r, _, _ := setup(t, root, runner.Config{})
	_, err := r.RunSync(context.Background(), user, "nope", userText("hi"), nil)
	if !errors.Is(err, session.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
	r2, svc, _ := setup(t, root, runner.Config{AutoCreateSession: true})
	if _, err := r2.RunSync(context.Background(), user, "new", userText("hi"), nil); err != nil {
		t.Fatal(err)
	}
	if got := stored(t, svc, session.Key{AppName: app, UserID: user, SessionID: "new"}).Len(); got != 2 {
		t.Fatalf("auto-created session has %d events, want 2", got)
	}
}

// TestR3UserMessageStoredFirst checks the user event: first, author user,
// role user, the request's state delta, and one invocation id for all.
func TestR3UserMessageStoredFirst(t *testing.T) {
	root := custom(t, "root", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		if v, _ := inv.Session().Get("mood"); v != "sunny" {
			yield(nil, fmt.Errorf("request state delta not visible: %v", v))
			return
		}
		for range 2 {
			ev := inv.NewEvent()
			ev.Content = genai.NewContentFromText("x", genai.RoleModel)
			if !yield(ev, nil) {
				return
			}
		}
	})
	r, svc, key := setup(t, root, runner.Config{})
	msg := &genai.Content{Parts: []*genai.Part{{Text: "hello"}}} // no role
	evs, err := r.RunSync(context.Background(), user, "s1", msg, &runner.RunOptions{StateDelta: map[string]any{"mood": "sunny"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 {
		t.Fatalf("yielded %d events, want 2 (the user message is not yielded)", len(evs))
	}
	s := stored(t, svc, key)
	first := s.At(0)
	if first.Author != event.AuthorUser || first.Content.Role != genai.RoleUser || first.Text() != "hello" {
		t.Fatalf("first event = %s/%s/%q", first.Author, first.Content.Role, first.Text())
	}
	if first.Actions.StateDelta["mood"] != "sunny" {
		t.Fatalf("user event delta = %v", first.Actions.StateDelta)
	}
	if !strings.HasPrefix(first.InvocationID, "e-") {
		t.Fatalf("invocation id %q", first.InvocationID)
	}
	for _, e := range s.Events() {
		if e.InvocationID != first.InvocationID {
			t.Fatalf("event %s has invocation %s, want %s", e.ID, e.InvocationID, first.InvocationID)
		}
	}
}

// TestR4PartialEventsForwardedNotStored checks that partial events reach
// the caller but are never stored nor have their actions applied.
func TestR4PartialEventsForwardedNotStored(t *testing.T) {
	root := custom(t, "root", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		for _, chunk := range []string{"Hel", "lo"} {
			p := inv.NewEvent()
			p.Partial = true
			p.Content = genai.NewContentFromText(chunk, genai.RoleModel)
			p.Actions.StateDelta = map[string]any{"leak": chunk}
			if !yield(p, nil) {
				return
			}
		}
		final := inv.NewEvent()
		final.Content = genai.NewContentFromText("Hello", genai.RoleModel)
		yield(final, nil)
	})
	r, svc, key := setup(t, root, runner.Config{})
	evs, err := r.RunSync(context.Background(), user, "s1", userText("hi"), &runner.RunOptions{Streaming: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 || !evs[0].Partial || !evs[1].Partial || evs[2].Partial {
		t.Fatalf("got %d events, want partial, partial, final", len(evs))
	}
	s := stored(t, svc, key)
	if s.Len() != 2 || s.At(1).Text() != "Hello" {
		t.Fatalf("stored %d events; want user + one aggregated", s.Len())
	}
	if _, ok := s.Get("leak"); ok {
		t.Fatal("a partial event's state delta was applied")
	}
}

// TestR5StagedStateDirtyReadAndLoss checks that a state write through a
// callback context is readable at once, staged into the next event the
// context emits, and lost (nothing half-applied) if the invocation fails
// before that event is committed.
func TestR5StagedStateDirtyReadAndLoss(t *testing.T) {
	fail := true
	root := custom(t, "root", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		cc := agent.NewCallbackContext(inv)
		cc.State().Set("draft", "v1")
		if v, _ := inv.Session().Get("draft"); v != "v1" {
			yield(nil, fmt.Errorf("dirty read = %v, want v1", v))
			return
		}
		if fail {
			yield(nil, errors.New("boom"))
			return
		}
		ev := cc.Event()
		if ev.Actions.StateDelta["draft"] != "v1" {
			yield(nil, fmt.Errorf("staged delta = %v", ev.Actions.StateDelta))
			return
		}
		yield(ev, nil)
	})
	r, svc, key := setup(t, root, runner.Config{})
	if _, err := r.RunSync(context.Background(), user, "s1", userText("one"), nil); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v, want boom", err)
	}
	s := stored(t, svc, key)
	if _, ok := s.Get("draft"); ok {
		t.Fatal("uncommitted state reached storage")
	}
	fail = false
	if _, err := r.RunSync(context.Background(), user, "s1", userText("two"), nil); err != nil {
		t.Fatal(err)
	}
	if v, _ := stored(t, svc, key).Get("draft"); v != "v1" {
		t.Fatalf("after a successful run, draft = %v", v)
	}
}

// TestR5DirtyWriteDiscardedBetweenInvocations checks that a staged write of
// a failed invocation is not visible to the next invocation on the same
// (cached) live session.
func TestR5DirtyWriteDiscardedBetweenInvocations(t *testing.T) {
	turn := 0
	var seen []any
	root := custom(t, "root", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		turn++
		v, _ := inv.Session().Get("x")
		seen = append(seen, v)
		if turn == 1 {
			agent.NewCallbackContext(inv).State().Set("x", "dirty")
			yield(nil, errors.New("fail"))
			return
		}
		yield(inv.NewEvent(), nil)
	})
	r, _, _ := setup(t, root, runner.Config{})
	r.RunSync(context.Background(), user, "s1", userText("1"), nil)
	if _, err := r.RunSync(context.Background(), user, "s1", userText("2"), nil); err != nil {
		t.Fatal(err)
	}
	if seen[1] != nil {
		t.Fatalf("second invocation saw %v from the failed one", seen[1])
	}
}

// TestR5TempStateLivesOneInvocation checks temp: keys: visible for the rest
// of the invocation, gone in the next (CONFORMANCE S1).
func TestR5TempStateLivesOneInvocation(t *testing.T) {
	var seen []any
	root := custom(t, "root", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		v, _ := inv.Session().Get("temp:scratch")
		seen = append(seen, v)
		ev := inv.NewEvent()
		ev.Actions.StateDelta = map[string]any{"temp:scratch": len(seen)}
		if !yield(ev, nil) {
			return
		}
		v, _ = inv.Session().Get("temp:scratch")
		seen = append(seen, v)
	})
	r, svc, key := setup(t, root, runner.Config{})
	for range 2 {
		if _, err := r.RunSync(context.Background(), user, "s1", userText("x"), nil); err != nil {
			t.Fatal(err)
		}
	}
	if seen[0] != nil || seen[1] != 1.0 || seen[2] != nil || seen[3] != 3.0 {
		t.Fatalf("temp values seen = %v, want [nil 1 nil 3]", seen)
	}
	for _, e := range stored(t, svc, key).Events() {
		if _, ok := e.Actions.StateDelta["temp:scratch"]; ok {
			t.Fatal("temp key stored in an event")
		}
	}
}

func waitGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			n := runtime.Stack(buf, true)
			t.Fatalf("%d goroutines left (base %d):\n%s", runtime.NumGoroutine(), base, buf[:n])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestR6BreakStopsAgent checks that breaking out of the event stream stops
// the agent at its next yield and leaves no goroutine behind.
func TestR6BreakStopsAgent(t *testing.T) {
	base := runtime.NumGoroutine()
	var produced int
	root := custom(t, "root", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		for {
			produced++
			ev := inv.NewEvent()
			ev.Content = genai.NewContentFromText("tick", genai.RoleModel)
			if !yield(ev, nil) {
				return
			}
		}
	})
	r, svc, key := setup(t, root, runner.Config{})
	n := 0
	for _, err := range r.Run(context.Background(), user, "s1", userText("go"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 3 {
			break
		}
	}
	if produced != 3 {
		t.Fatalf("agent produced %d events after the caller stopped at 3", produced)
	}
	if got := stored(t, svc, key).Len(); got != 4 {
		t.Fatalf("stored %d events, want 4", got)
	}
	waitGoroutines(t, base)
}

// TestR6CancelStopsInvocation checks that cancelling the context stops a
// blocked agent promptly with a context error.
func TestR6CancelStopsInvocation(t *testing.T) {
	base := runtime.NumGoroutine()
	started := make(chan struct{})
	root := custom(t, "root", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		close(started)
		<-ctx.Done()
		yield(nil, ctx.Err())
	})
	r, _, _ := setup(t, root, runner.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.RunSync(ctx, user, "s1", userText("go"), nil)
		done <- err
	}()
	<-started
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("invocation did not stop after cancel")
	}
	waitGoroutines(t, base)
}

// TestR7LLMCallLimit checks the per-invocation call counter.
func TestR7LLMCallLimit(t *testing.T) {
	root := custom(t, "root", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		for {
			if err := inv.CountLLMCall(); err != nil {
				yield(nil, err)
				return
			}
			if !yield(inv.NewEvent(), nil) {
				return
			}
		}
	})
	r, _, _ := setup(t, root, runner.Config{})
	evs, err := r.RunSync(context.Background(), user, "s1", userText("go"), &runner.RunOptions{MaxLLMCalls: 3})
	if !errors.Is(err, agent.ErrLLMCallLimit) || len(evs) != 3 {
		t.Fatalf("err = %v after %d events; want ErrLLMCallLimit after 3", err, len(evs))
	}
}

// TestSelectAgentForNewTurn checks agent selection: the agent that asked a
// pending function call; else the last agent that spoke if transferable;
// else the root.
func TestSelectAgentForNewTurn(t *testing.T) {
	var ran []string
	mk := func(name string, subs ...agent.Agent) agent.Agent {
		return custom(t, name, func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
			ran = append(ran, name)
			ev := inv.NewEvent()
			if strings.Contains(inv.UserContent().Parts[0].Text, "call") {
				ev.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{ID: "fc-1", Name: "lr"}}}}
				ev.LongRunningToolIDs = []string{"fc-1"}
			} else {
				ev.Content = genai.NewContentFromText("hi from "+name, genai.RoleModel)
			}
			yield(ev, nil)
		}, subs...)
	}
	child := mk("child")
	root := mk("root", child)
	r, svc, key := setup(t, root, runner.Config{})
	ctx := context.Background()
	// A session where the child asked a function call.
	s := stored(t, svc, key)
	ev := event.New("e-old", "child")
	ev.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{ID: "fc-9", Name: "lr"}}}}
	ev.LongRunningToolIDs = []string{"fc-9"}
	if err := svc.AppendEvent(ctx, s, ev); err != nil {
		t.Fatal(err)
	}
	resp := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: "fc-9", Name: "lr", Response: map[string]any{"ok": true}}}}}
	if _, err := r.RunSync(ctx, user, "s1", resp, nil); err != nil {
		t.Fatal(err)
	}
	// Custom agents do not take part in transfer: a plain message goes to
	// the root even though the child spoke last.
	if _, err := r.RunSync(ctx, user, "s1", userText("hello"), nil); err != nil {
		t.Fatal(err)
	}
	if strings.Join(ran, ",") != "child,root" {
		t.Fatalf("ran %v, want [child root]", ran)
	}
}

// TestS7ConcurrentRunsOnOneSessionSerialize checks that concurrent
// invocations of one session never interleave nor get lost.
func TestS7ConcurrentRunsOnOneSessionSerialize(t *testing.T) {
	root := custom(t, "root", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		for i := range 3 {
			ev := inv.NewEvent()
			ev.Content = genai.NewContentFromText(fmt.Sprint(i), genai.RoleModel)
			ev.Actions.StateDelta = map[string]any{"n": i}
			if !yield(ev, nil) {
				return
			}
			runtime.Gosched()
		}
	})
	r, svc, key := setup(t, root, runner.Config{})
	const runs = 12
	var wg sync.WaitGroup
	errs := make(chan error, runs)
	for i := range runs {
		wg.Go(func() {
			_, err := r.RunSync(context.Background(), user, "s1", userText(fmt.Sprint("msg", i)), nil)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	evs := stored(t, svc, key).Events()
	if len(evs) != runs*4 {
		t.Fatalf("stored %d events, want %d", len(evs), runs*4)
	}
	for i := 0; i < len(evs); i += 4 {
		inv := evs[i].InvocationID
		if evs[i].Author != event.AuthorUser {
			t.Fatalf("event %d is by %s, want the user message starting an invocation", i, evs[i].Author)
		}
		for j := 1; j < 4; j++ {
			if evs[i+j].InvocationID != inv {
				t.Fatalf("invocations interleaved at event %d", i+j)
			}
		}
	}
}

// TestRunRejectsEmptyMessage checks input validation.
func TestRunRejectsEmptyMessage(t *testing.T) {
	root := custom(t, "root", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {})
	r, svc, key := setup(t, root, runner.Config{})
	if _, err := r.RunSync(context.Background(), user, "s1", &genai.Content{}, nil); !errors.Is(err, runner.ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	if stored(t, svc, key).Len() != 0 {
		t.Fatal("a rejected run changed the session")
	}
}

// TestAfterAgentsEventsCommittedByRunner: an event a plugin returns from
// AfterAgents is committed by the runner as part of the invocation and not
// sent to the caller; the hook does not run after an agent error.
func TestAfterAgentsEventsCommittedByRunner(t *testing.T) {
	calls := 0
	p := &plugin.Plugin{Name: "notes", AfterAgents: func(ctx context.Context, inv *agent.Invocation) (*event.Event, error) {
		calls++
		ev := event.New(inv.ID(), "root")
		ev.Actions.StateDelta = map[string]any{"noted": calls}
		return ev, nil
	}}
	root := custom(t, "root", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		if inv.UserContent().Parts[0].Text == "fail" {
			yield(nil, errors.New("agent failed"))
			return
		}
		ev := inv.NewEvent()
		ev.Content = genai.NewContentFromText("hi", genai.RoleModel)
		yield(ev, nil)
	})
	r, svc, key := setup(t, root, runner.Config{Plugins: []*plugin.Plugin{p}})
	ctx := context.Background()
	evs, err := r.RunSync(ctx, user, key.SessionID, userText("hello"), nil)
	if err != nil || len(evs) != 1 {
		t.Fatalf("run: %d events, %v; want the agent's one event", len(evs), err)
	}
	s := stored(t, svc, key)
	last := s.At(s.Len() - 1)
	if last.InvocationID != evs[0].InvocationID || last.Actions.StateDelta["noted"] == nil {
		t.Fatalf("the plugin's event was not committed in the invocation: %+v", last)
	}
	if _, err := r.RunSync(ctx, user, key.SessionID, userText("fail"), nil); err == nil {
		t.Fatal("the agent's error was not reported")
	}
	if calls != 1 {
		t.Fatalf("AfterAgents ran %d times, want once (not after the failed run)", calls)
	}
}
