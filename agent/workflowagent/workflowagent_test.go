package workflowagent_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/workflowagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

const (
	testApp  = "app"
	testUser = "u"
	testSess = "s"
)

// body is the logic of a test agent, written as a push iterator body.
type body func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool)

func custom(t testing.TB, name string, run body) agent.Agent {
	t.Helper()
	a, err := agent.New(agent.Config{
		Name: name,
		Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
			return func(yield func(*event.Event, error) bool) { run(ctx, inv, yield) }
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// textEvent returns an event of the invocation's agent with text and an
// optional state delta.
func textEvent(inv *agent.Invocation, text string, delta map[string]any) *event.Event {
	ev := inv.NewEvent()
	ev.Content = genai.NewContentFromText(text, genai.RoleModel)
	ev.Actions.StateDelta = delta
	return ev
}

type fixture struct {
	svc *session.Service
	r   *runner.Runner
}

func newFixture(t testing.TB, root agent.Agent) *fixture {
	t.Helper()
	svc := memsession.NewService()
	if _, err := svc.Create(context.Background(), session.Key{AppName: testApp, UserID: testUser, SessionID: testSess}, nil); err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: testApp, Agent: root, Sessions: svc, Resumable: true})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{svc: svc, r: r}
}

// run runs one invocation. It leaves out checkpoint events, whose emission
// the resume tests check; the other tests look at the agents' own events.
func (f *fixture) run(ctx context.Context) iter.Seq2[*event.Event, error] {
	return func(yield func(*event.Event, error) bool) {
		for ev, err := range f.r.Run(ctx, testUser, testSess, genai.NewContentFromText("hi", genai.RoleUser), nil) {
			if err == nil && agent.IsCheckpoint(ev) {
				continue
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// runAll runs one invocation and returns its events and errors.
func (f *fixture) runAll(t testing.TB) ([]*event.Event, []error) {
	t.Helper()
	var evs []*event.Event
	var errs []error
	for ev, err := range f.run(context.Background()) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		evs = append(evs, ev)
	}
	return evs, errs
}

// stored reads the session back from the service.
func (f *fixture) stored(t testing.TB) *session.Session {
	t.Helper()
	s, err := f.svc.Get(context.Background(), session.Key{AppName: testApp, UserID: testUser, SessionID: testSess}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// storedContent returns the stored events without checkpoints.
func (f *fixture) storedContent(t testing.TB) []*event.Event {
	t.Helper()
	var out []*event.Event
	for _, ev := range f.stored(t).Events() {
		if !agent.IsCheckpoint(ev) {
			out = append(out, ev)
		}
	}
	return out
}

func authors(evs []*event.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Author
	}
	return out
}

func text(ev *event.Event) string {
	if ev == nil || ev.Content == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range ev.Content.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// leftoverBranches returns the stacks of goroutines still running a parallel
// branch. Parallel.Run waits for its branches before returning, so this must
// be empty as soon as the runner's loop has ended: no polling needed.
func leftoverBranches() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "workflowagent.runBranch") {
			out = append(out, g)
		}
	}
	return out
}

func checkNoLeftoverBranches(t *testing.T) {
	t.Helper()
	if gs := leftoverBranches(); len(gs) > 0 {
		t.Errorf("R6: %d parallel branch goroutines left behind:\n%s", len(gs), strings.Join(gs, "\n\n"))
	}
}

func mustSequential(t testing.TB, cfg workflowagent.Config) *workflowagent.Sequential {
	t.Helper()
	a, err := workflowagent.NewSequential(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustParallel(t testing.TB, cfg workflowagent.Config) *workflowagent.Parallel {
	t.Helper()
	a, err := workflowagent.NewParallel(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustLoop(t testing.TB, cfg workflowagent.LoopConfig) *workflowagent.Loop {
	t.Helper()
	a, err := workflowagent.NewLoop(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestConstructorsValidate(t *testing.T) {
	ok := custom(t, "ok", func(context.Context, *agent.Invocation, func(*event.Event, error) bool) {})
	bad := []workflowagent.Config{
		{},
		{Name: "user"},
		{Name: "w", SubAgents: []agent.Agent{nil}},
		{Name: "w", SubAgents: []agent.Agent{ok, ok}},
	}
	for _, cfg := range bad {
		if _, err := workflowagent.NewSequential(cfg); !errors.Is(err, workflowagent.ErrInvalidConfig) {
			t.Errorf("NewSequential(%+v) error = %v, want ErrInvalidConfig", cfg, err)
		}
		if _, err := workflowagent.NewParallel(cfg); !errors.Is(err, workflowagent.ErrInvalidConfig) {
			t.Errorf("NewParallel(%+v) error = %v, want ErrInvalidConfig", cfg, err)
		}
		if _, err := workflowagent.NewLoop(workflowagent.LoopConfig{Config: cfg}); !errors.Is(err, workflowagent.ErrInvalidConfig) {
			t.Errorf("NewLoop(%+v) error = %v, want ErrInvalidConfig", cfg, err)
		}
	}
	_, err := workflowagent.NewLoop(workflowagent.LoopConfig{Config: workflowagent.Config{Name: "l"}, MaxIterations: -1})
	if !errors.Is(err, workflowagent.ErrInvalidConfig) {
		t.Errorf("NewLoop(MaxIterations: -1) error = %v, want ErrInvalidConfig", err)
	}
	seq := mustSequential(t, workflowagent.Config{Name: "seq", Description: "d", SubAgents: []agent.Agent{ok}})
	if seq.Name() != "seq" || seq.Description() != "d" || len(seq.SubAgents()) != 1 || agent.SubAgents(seq)[0] != ok {
		t.Errorf("accessors: %q %q %v", seq.Name(), seq.Description(), seq.SubAgents())
	}
	if l := mustLoop(t, workflowagent.LoopConfig{Config: workflowagent.Config{Name: "l"}, MaxIterations: 3}); l.MaxIterations() != 3 {
		t.Errorf("MaxIterations() = %d, want 3", l.MaxIterations())
	}
}

// TestA3SequentialCommittedState: children run in order and each sees the
// state committed by the previous one.
func TestA3SequentialCommittedState(t *testing.T) {
	first := custom(t, "first", func(_ context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		if !yield(textEvent(inv, "drafted", map[string]any{"draft": "v1"}), nil) {
			return
		}
		// R1: after the yield, the event is committed.
		if v, _ := inv.Session().Get("draft"); v != "v1" {
			t.Errorf("R1: first reads draft = %v after its yield, want v1", v)
		}
	})
	second := custom(t, "second", func(_ context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		v, _ := inv.Session().Get("draft")
		yield(textEvent(inv, fmt.Sprintf("reviewed %v", v), map[string]any{"review": "ok"}), nil)
	})
	seq := mustSequential(t, workflowagent.Config{Name: "pipeline", SubAgents: []agent.Agent{first, second}})
	f := newFixture(t, seq)
	evs, errs := f.runAll(t)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if got, want := authors(evs), []string{"first", "second"}; !slices.Equal(got, want) {
		t.Fatalf("authors = %v, want %v", got, want)
	}
	if got := text(evs[1]); got != "reviewed v1" {
		t.Errorf("second saw %q, want %q", got, "reviewed v1")
	}
	for _, ev := range evs {
		if ev.Branch != "" {
			t.Errorf("event of %s on branch %q, want the parent's (empty) branch", ev.Author, ev.Branch)
		}
	}
	s := f.stored(t)
	if n := len(f.storedContent(t)); n != 3 {
		t.Errorf("stored %d events besides checkpoints, want 3 (user + 2)", n)
	}
	if d, _ := s.Get("draft"); d != "v1" {
		t.Errorf("stored draft = %v", d)
	}
	if r, _ := s.Get("review"); r != "ok" {
		t.Errorf("stored review = %v", r)
	}
}

// TestA3SequentialStopsWhenEnded: a child that ends the invocation is the
// last to run.
func TestA3SequentialStopsWhenEnded(t *testing.T) {
	var ranSecond atomic.Bool
	first := custom(t, "first", func(_ context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		inv.End()
		yield(textEvent(inv, "done", nil), nil)
	})
	second := custom(t, "second", func(_ context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		ranSecond.Store(true)
		yield(textEvent(inv, "late", nil), nil)
	})
	f := newFixture(t, mustSequential(t, workflowagent.Config{Name: "seq", SubAgents: []agent.Agent{first, second}}))
	evs, errs := f.runAll(t)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if got := authors(evs); !slices.Equal(got, []string{"first"}) {
		t.Errorf("authors = %v, want [first]", got)
	}
	if ranSecond.Load() {
		t.Error("second ran after the invocation ended")
	}
}

// TestA3SequentialStopsOnError: an error is reported once and later
// children do not run.
func TestA3SequentialStopsOnError(t *testing.T) {
	errBoom := errors.New("boom")
	var ranSecond atomic.Bool
	first := custom(t, "first", func(_ context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		if yield(textEvent(inv, "before", map[string]any{"k": 1}), nil) {
			yield(nil, errBoom)
		}
	})
	second := custom(t, "second", func(_ context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		ranSecond.Store(true)
	})
	f := newFixture(t, mustSequential(t, workflowagent.Config{Name: "seq", SubAgents: []agent.Agent{first, second}}))
	evs, errs := f.runAll(t)
	if len(errs) != 1 || !errors.Is(errs[0], errBoom) {
		t.Fatalf("errors = %v, want one wrapping boom", errs)
	}
	if len(evs) != 1 || ranSecond.Load() {
		t.Errorf("events = %v, second ran = %v; want the first event only", authors(evs), ranSecond.Load())
	}
	if n := len(f.storedContent(t)); n != 2 {
		t.Errorf("stored %d events besides checkpoints, want 2", n)
	}
}

// TestA3SequentialCallbacks: before-agent content short-circuits the
// workflow; after-agent content is emitted after the children.
func TestA3SequentialCallbacks(t *testing.T) {
	child := custom(t, "child", func(_ context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		yield(textEvent(inv, "child", nil), nil)
	})
	after := func(_ context.Context, cc *agent.CallbackContext) (*genai.Content, error) {
		return genai.NewContentFromText("after", genai.RoleModel), nil
	}
	f := newFixture(t, mustSequential(t, workflowagent.Config{
		Name: "seq", SubAgents: []agent.Agent{child}, AfterAgent: []agent.AfterAgentCallback{after},
	}))
	evs, errs := f.runAll(t)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if got := authors(evs); !slices.Equal(got, []string{"child", "seq"}) || text(evs[1]) != "after" {
		t.Errorf("authors = %v, want [child seq] with the after-agent text", got)
	}

	before := func(_ context.Context, cc *agent.CallbackContext) (*genai.Content, error) {
		return genai.NewContentFromText("skipped", genai.RoleModel), nil
	}
	child2 := custom(t, "child", func(_ context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		t.Error("child ran although the before-agent callback returned content")
	})
	f = newFixture(t, mustSequential(t, workflowagent.Config{
		Name: "seq", SubAgents: []agent.Agent{child2}, BeforeAgent: []agent.BeforeAgentCallback{before},
	}))
	evs, errs = f.runAll(t)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if got := authors(evs); !slices.Equal(got, []string{"seq"}) || text(evs[0]) != "skipped" {
		t.Errorf("authors = %v, want [seq] with the before-agent text", got)
	}
}

// waitOr blocks until ch is closed or ctx is done; it reports whether ch was
// closed. Test children use it so that a cancelled run never hangs them.
func waitOr(ctx context.Context, ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		return false
	}
}

// TestA4ParallelInterleavedBranches: two children really run at the same
// time (each waits for the other mid-run), on branches "parent.child"; after
// each yield a child reads back the state its event committed (R1); every
// event lands in the session exactly once.
func TestA4ParallelInterleavedBranches(t *testing.T) {
	aFirst, bFirst, aSecond := make(chan struct{}), make(chan struct{}), make(chan struct{})
	// delivered records the events the caller of the runner has received;
	// the runner forwards an event only after committing it.
	var mu sync.Mutex
	delivered := map[string]bool{}
	resumed := map[string]bool{} // events whose yield has returned
	// step yields event i of a child with state key=i and checks that, when
	// yield returns, the event is committed and was delivered to the caller.
	step := func(inv *agent.Invocation, key string, i int, yield func(*event.Event, error) bool) bool {
		ev := textEvent(inv, fmt.Sprintf("%s%d", key, i), map[string]any{key: i})
		if !yield(ev, nil) {
			return false
		}
		if v, _ := inv.Session().Get(key); v != float64(i) {
			t.Errorf("R1: %s reads %s = %v after yielding event %d, want %d", inv.Agent().Name(), key, v, i, i)
		}
		mu.Lock()
		ok := delivered[ev.ID]
		resumed[ev.ID] = true
		mu.Unlock()
		if !ok {
			t.Errorf("R1: %s resumed before its event %d reached the caller", inv.Agent().Name(), i)
		}
		return true
	}
	a := custom(t, "a", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		if !step(inv, "a", 1, yield) {
			return
		}
		close(aFirst)
		if !waitOr(ctx, bFirst) || !step(inv, "a", 2, yield) {
			return
		}
		close(aSecond)
	})
	b := custom(t, "b", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		if !waitOr(ctx, aFirst) || !step(inv, "b", 1, yield) {
			return
		}
		close(bFirst)
		if !waitOr(ctx, aSecond) {
			return
		}
		step(inv, "b", 2, yield)
	})
	par := mustParallel(t, workflowagent.Config{Name: "par", SubAgents: []agent.Agent{a, b}})
	f := newFixture(t, par)
	var evs []*event.Event
	for ev, err := range f.run(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		// Give a child that was (wrongly) resumed early a chance to run: it
		// must stay suspended while its event is being delivered.
		for range 50 {
			runtime.Gosched()
		}
		mu.Lock()
		if resumed[ev.ID] {
			t.Errorf("R1: %s resumed before the caller had received its event %q", ev.Author, text(ev))
		}
		delivered[ev.ID] = true
		mu.Unlock()
		evs = append(evs, ev)
	}
	checkNoLeftoverBranches(t)
	var texts, branches []string
	for _, ev := range evs {
		texts = append(texts, text(ev))
		branches = append(branches, ev.Branch)
	}
	if want := []string{"a1", "b1", "a2", "b2"}; !slices.Equal(texts, want) {
		t.Errorf("events = %v, want the interleaving %v", texts, want)
	}
	if want := []string{"par.a", "par.b", "par.a", "par.b"}; !slices.Equal(branches, want) {
		t.Errorf("branches = %v, want %v", branches, want)
	}

	stored := f.storedContent(t)
	if len(stored) != 5 {
		t.Fatalf("stored %d events besides checkpoints, want 5 (user + 4)", len(stored))
	}
	ids := map[string]int{}
	for _, ev := range stored[1:] {
		ids[ev.ID]++
	}
	for _, ev := range evs {
		if ids[ev.ID] != 1 {
			t.Errorf("event %s (%s) stored %d times, want once", ev.ID, text(ev), ids[ev.ID])
		}
	}
	s := f.stored(t)
	if va, _ := s.Get("a"); va != 2.0 {
		t.Errorf("stored a = %v, want 2", va)
	}
	if vb, _ := s.Get("b"); vb != 2.0 {
		t.Errorf("stored b = %v, want 2", vb)
	}
}

// TestA4ParallelNestedBranch: a parallel agent under another one extends its
// own branch.
func TestA4ParallelNestedBranch(t *testing.T) {
	leaf := custom(t, "leaf", func(_ context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		yield(textEvent(inv, "x", nil), nil)
	})
	inner := mustParallel(t, workflowagent.Config{Name: "inner", SubAgents: []agent.Agent{leaf}})
	outer := mustParallel(t, workflowagent.Config{Name: "outer", SubAgents: []agent.Agent{inner}})
	f := newFixture(t, mustSequential(t, workflowagent.Config{Name: "root", SubAgents: []agent.Agent{outer}}))
	evs, errs := f.runAll(t)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(evs) != 1 || evs[0].Branch != "outer.inner.leaf" {
		t.Fatalf("events = %v, want one event on branch outer.inner.leaf", evs)
	}
	checkNoLeftoverBranches(t)
}

// endless returns a child that yields events until told to stop, and counts
// its exits in exited.
func endless(t *testing.T, name string, exited *atomic.Int32) agent.Agent {
	return custom(t, name, func(_ context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		defer exited.Add(1)
		for i := 0; ; i++ {
			if !yield(textEvent(inv, fmt.Sprint(i), map[string]any{name: i}), nil) {
				return
			}
		}
	})
}

// blocked returns a child that waits for its context to be done.
func blocked(t *testing.T, name string, started chan<- struct{}, exited *atomic.Int32) agent.Agent {
	return custom(t, name, func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		defer exited.Add(1)
		close(started)
		<-ctx.Done()
	})
}

// TestR6ParallelBreakStopsChildren: breaking out of the runner's loop stops
// every child, and Run returns only after all of them have exited.
func TestR6ParallelBreakStopsChildren(t *testing.T) {
	var exited atomic.Int32
	started := make(chan struct{})
	par := mustParallel(t, workflowagent.Config{Name: "par", SubAgents: []agent.Agent{
		endless(t, "x", &exited), endless(t, "y", &exited), blocked(t, "z", started, &exited),
	}})
	f := newFixture(t, par)
	n := 0
	for _, err := range f.run(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 5 {
			<-started
			break
		}
	}
	if got := exited.Load(); got != 3 {
		t.Errorf("%d of 3 children have exited after the loop broke", got)
	}
	checkNoLeftoverBranches(t)
	if n := len(f.storedContent(t)); n != 1+5 {
		t.Errorf("stored %d events besides checkpoints, want 6 (user + the 5 forwarded)", n)
	}
}

// TestR6ParallelCancelStopsChildren: cancelling the context ends the run
// with one context error and stops every child.
func TestR6ParallelCancelStopsChildren(t *testing.T) {
	var exited atomic.Int32
	started := make(chan struct{})
	par := mustParallel(t, workflowagent.Config{Name: "par", SubAgents: []agent.Agent{
		endless(t, "x", &exited), blocked(t, "z", started, &exited),
	}})
	f := newFixture(t, par)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errs []error
	for _, err := range f.run(ctx) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		<-started
		cancel()
	}
	if len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
		t.Errorf("errors = %v, want one wrapping context.Canceled", errs)
	}
	if got := exited.Load(); got != 2 {
		t.Errorf("%d of 2 children have exited after cancellation", got)
	}
	checkNoLeftoverBranches(t)
}

// TestA4ParallelFailureCancelsSiblings: a failing child cancels its
// siblings; the error is reported once.
func TestA4ParallelFailureCancelsSiblings(t *testing.T) {
	errBoom := errors.New("boom")
	var exited atomic.Int32
	var sawCancel atomic.Bool
	started := make(chan struct{})
	waiter := custom(t, "waiter", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		defer exited.Add(1)
		close(started)
		<-ctx.Done()
		sawCancel.Store(true)
	})
	failing := custom(t, "failing", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		defer exited.Add(1)
		if !waitOr(ctx, started) || !yield(textEvent(inv, "partial work", nil), nil) {
			return
		}
		yield(nil, errBoom)
	})
	f := newFixture(t, mustParallel(t, workflowagent.Config{Name: "par", SubAgents: []agent.Agent{waiter, failing}}))
	evs, errs := f.runAll(t)
	if len(errs) != 1 || !errors.Is(errs[0], errBoom) {
		t.Fatalf("errors = %v, want boom once", errs)
	}
	if len(evs) != 1 || text(evs[0]) != "partial work" {
		t.Errorf("events = %v, want the event before the failure", evs)
	}
	if !sawCancel.Load() || exited.Load() != 2 {
		t.Errorf("sibling cancelled = %v, exited = %d; want true, 2", sawCancel.Load(), exited.Load())
	}
	checkNoLeftoverBranches(t)
}

// TestA4ParallelBranchPanicIsAnError: a branch whose agent panics, on a
// goroutine where nothing else could recover it, ends the parallel run with
// an error naming it, as a failing branch does, instead of ending the
// process; its sibling is cancelled.
func TestA4ParallelBranchPanicIsAnError(t *testing.T) {
	var sawCancel atomic.Bool
	started := make(chan struct{})
	waiter := custom(t, "waiter", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		close(started)
		<-ctx.Done()
		sawCancel.Store(true)
	})
	panicking := custom(t, "panicking", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		if waitOr(ctx, started) {
			panic("out of cheese")
		}
	})
	f := newFixture(t, mustParallel(t, workflowagent.Config{Name: "par", SubAgents: []agent.Agent{waiter, panicking}}))
	_, errs := f.runAll(t)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "panicking panicked: out of cheese") {
		t.Fatalf("errors = %v, want one naming the panicking branch", errs)
	}
	if !sawCancel.Load() {
		t.Error("the sibling was not cancelled")
	}
	checkNoLeftoverBranches(t)
}

// TestA4ParallelEmpty: no children, no events.
func TestA4ParallelEmpty(t *testing.T) {
	f := newFixture(t, mustParallel(t, workflowagent.Config{Name: "par"}))
	evs, errs := f.runAll(t)
	if len(evs) != 0 || len(errs) != 0 {
		t.Errorf("events %v, errors %v; want none", evs, errs)
	}
}

// counter returns a child that increments state key "n" with each event and
// records the values it saw.
func counter(t *testing.T, name string, seen *[]int) agent.Agent {
	return custom(t, name, func(_ context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		n, _ := inv.Session().Get("n")
		next := 1
		if v, ok := n.(float64); ok { // state numbers read back as float64
			next = int(v) + 1
		}
		*seen = append(*seen, next)
		yield(textEvent(inv, fmt.Sprint(next), map[string]any{"n": next}), nil)
	})
}

// TestA5LoopMaxIterations: MaxIterations 2 runs the child twice, each pass
// seeing the state of the previous one.
func TestA5LoopMaxIterations(t *testing.T) {
	var seen []int
	loop := mustLoop(t, workflowagent.LoopConfig{
		Config:        workflowagent.Config{Name: "loop", SubAgents: []agent.Agent{counter(t, "step", &seen)}},
		MaxIterations: 2,
	})
	f := newFixture(t, loop)
	evs, errs := f.runAll(t)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if !slices.Equal(seen, []int{1, 2}) || len(evs) != 2 {
		t.Errorf("passes saw %v with %d events, want [1 2] and 2 events", seen, len(evs))
	}
	if n, _ := f.stored(t).Get("n"); n != 2.0 {
		t.Errorf("stored n = %v, want 2", n)
	}
}

// TestA5LoopEscalate: an escalating event is committed and ends the loop at
// once: neither the rest of its child nor later children run.
func TestA5LoopEscalate(t *testing.T) {
	var passes, laterRuns atomic.Int32
	var resumed atomic.Bool
	first := custom(t, "first", func(_ context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		p := passes.Add(1)
		ev := textEvent(inv, fmt.Sprint(p), map[string]any{"pass": int(p)})
		ev.Actions.Escalate = p == 3
		if !yield(ev, nil) {
			return
		}
		if p == 3 {
			resumed.Store(true)
			yield(textEvent(inv, "after escalate", nil), nil)
		}
	})
	second := custom(t, "second", func(_ context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		laterRuns.Add(1)
		yield(textEvent(inv, "second", nil), nil)
	})
	loop := mustLoop(t, workflowagent.LoopConfig{Config: workflowagent.Config{Name: "loop", SubAgents: []agent.Agent{first, second}}})
	f := newFixture(t, loop)
	evs, errs := f.runAll(t)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if passes.Load() != 3 || laterRuns.Load() != 2 || resumed.Load() {
		t.Errorf("passes = %d, second ran %d times, resumed after escalate = %v; want 3, 2, false",
			passes.Load(), laterRuns.Load(), resumed.Load())
	}
	last := evs[len(evs)-1]
	if len(evs) != 5 || !last.Actions.Escalate {
		t.Fatalf("got %d events ending with %q, want 5 ending with the escalation", len(evs), text(last))
	}
	stored := f.storedContent(t)
	if got := stored[len(stored)-1]; got.ID != last.ID || !got.Actions.Escalate {
		t.Errorf("last stored event %s, want the escalating event %s", got.ID, last.ID)
	}
	s := f.stored(t)
	if end := s.At(s.Len() - 1); end.Author != "loop" || !end.Actions.EndOfAgent {
		t.Errorf("the loop did not record its end after the escalation")
	}
	if p, _ := s.Get("pass"); p != 3.0 {
		t.Errorf("stored pass = %v, want 3 (the escalating event is committed)", p)
	}
}

// TestA5LoopEscalateFromNested: an escalation deep inside a sequential
// child ends the loop too.
func TestA5LoopEscalateFromNested(t *testing.T) {
	var after atomic.Bool
	esc := custom(t, "esc", func(_ context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		ev := textEvent(inv, "stop", nil)
		ev.Actions.Escalate = true
		yield(ev, nil)
	})
	tail := custom(t, "tail", func(context.Context, *agent.Invocation, func(*event.Event, error) bool) { after.Store(true) })
	seq := mustSequential(t, workflowagent.Config{Name: "seq", SubAgents: []agent.Agent{esc, tail}})
	loop := mustLoop(t, workflowagent.LoopConfig{Config: workflowagent.Config{Name: "loop", SubAgents: []agent.Agent{seq}}, MaxIterations: 5})
	evs, errs := newFixture(t, loop).runAll(t)
	if len(errs) > 0 || len(evs) != 1 || after.Load() {
		t.Errorf("events %d, errors %v, tail ran %v; want 1 event, no error, tail not run", len(evs), errs, after.Load())
	}
}

// TestA5LoopStopsWhenEnded: an unbounded loop stops when a child ends the
// invocation.
func TestA5LoopStopsWhenEnded(t *testing.T) {
	var runs atomic.Int32
	child := custom(t, "child", func(_ context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		if runs.Add(1) == 2 {
			inv.End()
		}
		yield(textEvent(inv, "x", nil), nil)
	})
	loop := mustLoop(t, workflowagent.LoopConfig{Config: workflowagent.Config{Name: "loop", SubAgents: []agent.Agent{child}}})
	evs, errs := newFixture(t, loop).runAll(t)
	if len(errs) > 0 || len(evs) != 2 || runs.Load() != 2 {
		t.Errorf("events %d, errors %v, runs %d; want 2, none, 2", len(evs), errs, runs.Load())
	}
}

// TestR6LoopCancel: cancelling the context stops an unbounded loop with a
// context error.
func TestR6LoopCancel(t *testing.T) {
	child := custom(t, "child", func(_ context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		yield(textEvent(inv, "x", nil), nil)
	})
	loop := mustLoop(t, workflowagent.LoopConfig{Config: workflowagent.Config{Name: "loop", SubAgents: []agent.Agent{child}}})
	f := newFixture(t, loop)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errs []error
	for _, err := range f.run(ctx) {
		if err != nil {
			errs = append(errs, err)
		}
		cancel()
	}
	if len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
		t.Errorf("errors = %v, want one wrapping context.Canceled", errs)
	}
}

// TestA4ParallelEndsEachBranchOnce: a branch whose agent records its own
// end (a workflow agent) gets no second end from the parallel agent; a
// branch whose agent does not gets one, and so does the parallel agent.
func TestA4ParallelEndsEachBranchOnce(t *testing.T) {
	say := func(name string) agent.Agent {
		return custom(t, name, func(_ context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
			yield(textEvent(inv, name, nil), nil)
		})
	}
	seq := mustSequential(t, workflowagent.Config{Name: "seq", SubAgents: []agent.Agent{say("inner")}})
	f := newFixture(t, mustParallel(t, workflowagent.Config{Name: "par", SubAgents: []agent.Agent{say("leaf"), seq}}))
	if _, errs := f.runAll(t); len(errs) > 0 {
		t.Fatal(errs)
	}
	ends := map[string]int{}
	for _, ev := range f.stored(t).Events() {
		if ev.Actions.EndOfAgent {
			ends[ev.Author]++
		}
	}
	if want := map[string]int{"leaf": 1, "inner": 1, "seq": 1, "par": 1}; !maps.Equal(ends, want) {
		t.Fatalf("ends by author %v, want %v", ends, want)
	}
}

// TestA16CheckpointsOnlyWhenResumable: sequential, parallel and loop agents
// write checkpoint events (agent state, end of agent) only in a resumable
// application, as ADK does; their own and their children's events are the
// same either way. (CONFORMANCE A16)
func TestA16CheckpointsOnlyWhenResumable(t *testing.T) {
	say := func(name string) agent.Agent {
		return custom(t, name, func(_ context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
			yield(textEvent(inv, name, nil), nil)
		})
	}
	trees := map[string]func() agent.Agent{
		"sequential": func() agent.Agent {
			return mustSequential(t, workflowagent.Config{Name: "root", SubAgents: []agent.Agent{say("a"), say("b")}})
		},
		"parallel": func() agent.Agent {
			return mustParallel(t, workflowagent.Config{Name: "root", SubAgents: []agent.Agent{say("a"), say("b")}})
		},
		"loop": func() agent.Agent {
			return mustLoop(t, workflowagent.LoopConfig{Config: workflowagent.Config{Name: "root", SubAgents: []agent.Agent{say("a"), say("b")}}, MaxIterations: 2})
		},
	}
	for name, tree := range trees {
		counts := map[bool][2]int{} // resumable → [content events, checkpoints]
		for _, resumable := range []bool{false, true} {
			svc := memsession.NewService()
			key := session.Key{AppName: testApp, UserID: testUser, SessionID: testSess}
			if _, err := svc.Create(context.Background(), key, nil); err != nil {
				t.Fatal(err)
			}
			r, err := runner.New(runner.Config{AppName: testApp, Agent: tree(), Sessions: svc, Resumable: resumable})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.RunSync(context.Background(), testUser, testSess, genai.NewContentFromText("hi", genai.RoleUser), nil); err != nil {
				t.Fatal(err)
			}
			s, err := svc.Get(context.Background(), key, nil)
			if err != nil {
				t.Fatal(err)
			}
			var c [2]int
			for _, ev := range s.Events() {
				switch {
				case ev.Actions.AgentState != nil || ev.Actions.EndOfAgent:
					c[1]++
				case ev.Content != nil:
					c[0]++
				}
			}
			counts[resumable] = c
		}
		if counts[false][1] != 0 || counts[true][1] == 0 {
			t.Errorf("%s: checkpoints %d not resumable, %d resumable; want none, some", name, counts[false][1], counts[true][1])
		}
		if counts[false][0] != counts[true][0] {
			t.Errorf("%s: content events %d not resumable, %d resumable; want the same", name, counts[false][0], counts[true][0])
		}
	}
}

// TestA16ResumeWithoutCheckpointsRefused: a workflow agent asked to resume
// in an application that is not resumable fails with ErrNotResumable and
// runs no sub-agent. (CONFORMANCE A16)
func TestA16ResumeWithoutCheckpointsRefused(t *testing.T) {
	var runs atomic.Int32
	child := custom(t, "child", func(_ context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		runs.Add(1)
		yield(textEvent(inv, "x", nil), nil)
	})
	for _, root := range []agent.Agent{
		mustSequential(t, workflowagent.Config{Name: "seq", SubAgents: []agent.Agent{child}}),
		mustParallel(t, workflowagent.Config{Name: "par", SubAgents: []agent.Agent{child}}),
		mustLoop(t, workflowagent.LoopConfig{Config: workflowagent.Config{Name: "loop", SubAgents: []agent.Agent{child}}, MaxIterations: 1}),
	} {
		tree, err := agent.NewTree(root)
		if err != nil {
			t.Fatal(err)
		}
		sess, err := memsession.NewService().Create(context.Background(), session.Key{AppName: testApp, UserID: testUser, SessionID: testSess}, nil)
		if err != nil {
			t.Fatal(err)
		}
		inv := agent.NewInvocation(agent.InvocationConfig{Tree: tree, Session: sess}).ResumeFrom(0)
		var errs []error
		for _, err := range root.Run(context.Background(), inv) {
			if err != nil {
				errs = append(errs, err)
			}
		}
		if len(errs) != 1 || !errors.Is(errs[0], workflowagent.ErrNotResumable) {
			t.Errorf("%s: errors %v, want ErrNotResumable", root.Name(), errs)
		}
	}
	if runs.Load() != 0 {
		t.Errorf("a sub-agent ran %d times", runs.Load())
	}
}
