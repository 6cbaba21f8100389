package graph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/session/sqlsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// TestFuncChainTypedIO: function nodes pass typed outputs along plain
// edges; the workflow's output is the last node's, and state written by a
// node is committed with its end.
// (CONFORMANCE A11)
func TestFuncChainTypedIO(t *testing.T) {
	type word struct {
		Text string `json:"text"`
		Len  int    `json:"len"`
	}
	measure := graph.Func("measure", func(_ context.Context, nc *graph.Context, in string) (word, error) {
		nc.State().Set("measured", in)
		return word{Text: in, Len: len(in)}, nil
	})
	render := graph.Func("render", func(_ context.Context, _ *graph.Context, w word) (string, error) {
		return fmt.Sprintf("%s has %d letters", w.Text, w.Len), nil
	})
	w := mustNew(t, graph.Config{Name: "wf", Nodes: []*graph.Node{measure, render}, Edges: []graph.Edge{{From: "measure", To: "render"}}})
	r, key := setup(t, w, nil)
	evs := collect(t, r.Run(context.Background(), userID, key.SessionID, text("kite"), nil))
	if got := outputOf(t, evs, "wf"); got != "kite has 4 letters" {
		t.Errorf("output = %v", got)
	}
	if got := ended(evs); !slices.Equal(got, []string{"wf/measure@1", "wf/render@1"}) {
		t.Errorf("ended = %v", got)
	}
	for _, ev := range evs {
		if ev.NodeInfo != nil && ev.NodeInfo.Path == "wf/measure@1" {
			if ev.Actions.StateDelta["measured"] != "kite" {
				t.Errorf("measure's end carries state %v", ev.Actions.StateDelta)
			}
			if m, _ := ev.Output.(map[string]any); m["len"] != 4.0 {
				t.Errorf("measure's recorded output = %#v, want its JSON form", ev.Output)
			}
		}
	}
}

// TestRoutingChoosesEdge: the route a node sets picks the edge.
// (CONFORMANCE A11)
func TestRoutingChoosesEdge(t *testing.T) {
	classify := graph.Func("classify", func(_ context.Context, nc *graph.Context, in string) (string, error) {
		if strings.Contains(in, "refund") {
			nc.SetRoute("billing")
		} else {
			nc.SetRoute("support")
		}
		return in, nil
	})
	reply := func(name string) *graph.Node {
		return graph.Func(name, func(context.Context, *graph.Context, string) (string, error) { return name, nil })
	}
	w := mustNew(t, graph.Config{Name: "router",
		Nodes: []*graph.Node{classify, reply("billing"), reply("support")},
		Edges: []graph.Edge{{From: "classify", To: "billing", Route: "billing"}, {From: "classify", To: "support", Route: "support"}}})
	for msg, want := range map[string]string{"I want a refund": "billing", "my screen is dark": "support"} {
		r, key := setup(t, w, nil)
		evs := collect(t, r.Run(context.Background(), userID, key.SessionID, text(msg), nil))
		if got := outputOf(t, evs, "router"); got != want {
			t.Errorf("%q routed to %v, want %s", msg, got, want)
		}
		if n := len(ended(evs)); n != 2 {
			t.Errorf("%q: %d node runs, want 2", msg, n)
		}
		// As in ADK 2, the node's end event carries its route in
		// actions.route.
		for _, ev := range evs {
			if ev.NodeInfo != nil && ev.NodeInfo.Path == "router/classify@1" && ev.Actions.EndOfAgent && (ev.Actions.Route != want || ev.Actions.AgentState["route"] != nil) {
				t.Errorf("%q: classify's end event: route %v, agent state %v", msg, ev.Actions.Route, ev.Actions.AgentState)
			}
		}
	}
}

// TestFanOutJoin: a node with several plain edges fans out; the branches run
// concurrently on branches of their own, and the join hands on all outputs.
// (CONFORMANCE A11)
func TestFanOutJoin(t *testing.T) {
	var running, peak atomic.Int32
	branch := func(name string) *graph.Node {
		return graph.Func(name, func(_ context.Context, nc *graph.Context, in string) (string, error) {
			n := running.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(20 * time.Millisecond)
			running.Add(-1)
			nc.State().Set(name, true)
			return name + ":" + in, nil
		})
	}
	w := mustNew(t, graph.Config{Name: "fan",
		Nodes: []*graph.Node{upper("start"), branch("a"), branch("b"), branch("c"), graph.Join("all")},
		Edges: []graph.Edge{{From: "start", To: "a"}, {From: "start", To: "b"}, {From: "start", To: "c"},
			{From: "a", To: "all"}, {From: "b", To: "all"}, {From: "c", To: "all"}}})
	r, key := setup(t, w, nil)
	evs := collect(t, r.Run(context.Background(), userID, key.SessionID, text("x"), nil))
	want := map[string]any{"a": "a:X", "b": "b:X", "c": "c:X"}
	if got := outputOf(t, evs, "fan"); !reflect.DeepEqual(got, want) {
		t.Errorf("join output = %#v, want %#v", got, want)
	}
	if peak.Load() < 2 {
		t.Errorf("at most %d branches ran at once, want concurrency", peak.Load())
	}
	for _, ev := range evs {
		if ev.NodeInfo != nil && ev.NodeInfo.Path == "fan/b@1" && ev.Branch != "fan.b" {
			t.Errorf("branch b's event on branch %q, want fan.b", ev.Branch)
		}
	}
	s, _ := r.Sessions().Get(context.Background(), key, nil)
	for _, k := range []string{"a", "b", "c"} {
		if v, _ := s.Get(k); v != true {
			t.Errorf("state %s = %v after the fan-out", k, v)
		}
	}
}

// TestBoundedLoop: a back edge with a bound runs the loop at most that often;
// the node then takes its other edge.
// (CONFORMANCE A11)
func TestBoundedLoop(t *testing.T) {
	var drafts atomic.Int32
	draft := graph.Func("draft", func(_ context.Context, _ *graph.Context, in string) (string, error) {
		drafts.Add(1)
		return in + "+", nil
	})
	check := graph.Func("check", func(_ context.Context, nc *graph.Context, in string) (string, error) {
		nc.SetRoute("again") // never satisfied
		return in, nil
	})
	w := mustNew(t, graph.Config{Name: "loop",
		Nodes: []*graph.Node{draft, check},
		Edges: []graph.Edge{{From: "draft", To: "check"}, {From: "check", To: "draft", Route: "again", Max: 3}}})
	r, key := setup(t, w, nil)
	evs := collect(t, r.Run(context.Background(), userID, key.SessionID, text("d"), nil))
	if drafts.Load() != 4 {
		t.Errorf("draft ran %d times, want 1 + 3 loops", drafts.Load())
	}
	if got := outputOf(t, evs, "loop"); got != "d++++" {
		t.Errorf("output = %v", got)
	}
	if got := ended(evs); got[len(got)-1] != "loop/check@4" {
		t.Errorf("last node run %s, want loop/check@4", got[len(got)-1])
	}
}

// TestMaxStepsEndsUnboundedLoop: a loop without a bound is stopped by
// MaxSteps with an error event.
//
// (CONFORMANCE G1)
func TestMaxStepsEndsUnboundedLoop(t *testing.T) {
	w := mustNew(t, graph.Config{Name: "spin", MaxSteps: 5,
		Nodes: []*graph.Node{upper("a"), upper("b")},
		Edges: []graph.Edge{{From: "a", To: "b"}, {From: "b", To: "a"}}})
	r, key := setup(t, w, nil)
	evs := collect(t, r.Run(context.Background(), userID, key.SessionID, text("x"), nil))
	ev := errorEvent(evs)
	if ev == nil || ev.ErrorCode != graph.ErrorCodeNodeFailed || !strings.Contains(ev.ErrorMessage, "more than 5") {
		t.Fatalf("error event = %+v", ev)
	}
}

// TestMaxStepsCountsDynamicNodes: a node that runs itself as a dynamic
// child, without end, is stopped by MaxSteps with an error event.
//
// (CONFORMANCE G1)
func TestMaxStepsCountsDynamicNodes(t *testing.T) {
	var self *graph.Node
	self = graph.Func("self", func(ctx context.Context, nc *graph.Context, in string) (string, error) {
		out, err := nc.RunNode(ctx, self, in+".")
		if err != nil {
			return "", err
		}
		return graph.Convert[string](out)
	})
	w := mustNew(t, graph.Config{Name: "deep", MaxSteps: 20, Nodes: []*graph.Node{self}})
	r, key := setup(t, w, nil)
	evs := collect(t, r.Run(context.Background(), userID, key.SessionID, text("0"), nil))
	ev := errorEvent(evs)
	if ev == nil || ev.ErrorCode != graph.ErrorCodeNodeFailed || !strings.Contains(ev.ErrorMessage, "more than 20") {
		t.Fatalf("error event = %+v", ev)
	}
}

// TestRetryThenSucceed: a failing node is retried with backoff.
//
// (CONFORMANCE G1)
func TestRetryThenSucceed(t *testing.T) {
	var calls atomic.Int32
	flaky := graph.Func("flaky", func(context.Context, *graph.Context, string) (string, error) {
		if calls.Add(1) < 3 {
			return "", errors.New("transient")
		}
		return "ok", nil
	}).With(graph.NodeOptions{Retry: graph.Retry{MaxAttempts: 3, Backoff: time.Millisecond}})
	w := mustNew(t, graph.Config{Name: "wf", Nodes: []*graph.Node{flaky}})
	r, key := setup(t, w, nil)
	evs := collect(t, r.Run(context.Background(), userID, key.SessionID, text("x"), nil))
	if calls.Load() != 3 || outputOf(t, evs, "wf") != "ok" {
		t.Errorf("calls = %d, output = %v", calls.Load(), outputOf(t, evs, "wf"))
	}
	if errorEvent(evs) != nil {
		t.Errorf("error event after a successful retry")
	}
}

// TestRetryExhaustedEndsWithError: after its last attempt the node's failure
// ends the workflow with a clear error event; later nodes do not run.
// (CONFORMANCE A11)
func TestRetryExhaustedEndsWithError(t *testing.T) {
	var calls, after atomic.Int32
	broken := graph.Func("broken", func(context.Context, *graph.Context, string) (string, error) {
		calls.Add(1)
		return "", errors.New("disk on fire")
	}).With(graph.NodeOptions{Retry: graph.Retry{MaxAttempts: 2, Backoff: time.Millisecond}})
	next := graph.Func("next", func(context.Context, *graph.Context, string) (string, error) {
		after.Add(1)
		return "", nil
	})
	w := mustNew(t, graph.Config{Name: "wf", Nodes: []*graph.Node{broken, next}, Edges: []graph.Edge{{From: "broken", To: "next"}}})
	r, key := setup(t, w, nil)
	evs := collect(t, r.Run(context.Background(), userID, key.SessionID, text("x"), nil))
	ev := errorEvent(evs)
	if ev == nil {
		t.Fatal("no error event")
	}
	for _, want := range []string{"wf/broken@1", "after 2 attempts", "disk on fire"} {
		if !strings.Contains(ev.ErrorMessage, want) {
			t.Errorf("error message %q lacks %q", ev.ErrorMessage, want)
		}
	}
	if calls.Load() != 2 || after.Load() != 0 {
		t.Errorf("calls = %d, next ran %d times", calls.Load(), after.Load())
	}
}

// TestTimeout: an attempt that outlives its timeout fails, naming the
// timeout.
//
// (CONFORMANCE G1)
func TestTimeout(t *testing.T) {
	slow := graph.Func("slow", func(ctx context.Context, _ *graph.Context, _ string) (string, error) {
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(5 * time.Second):
			return "late", nil
		}
	}).With(graph.NodeOptions{Timeout: 10 * time.Millisecond})
	w := mustNew(t, graph.Config{Name: "wf", Nodes: []*graph.Node{slow}})
	r, key := setup(t, w, nil)
	start := time.Now()
	evs := collect(t, r.Run(context.Background(), userID, key.SessionID, text("x"), nil))
	ev := errorEvent(evs)
	if ev == nil || !strings.Contains(ev.ErrorMessage, "timed out after 10ms") {
		t.Fatalf("error event = %+v", ev)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("the timeout did not stop the node")
	}
}

// TestToolNode: a tool node gets its input as arguments; its result is the
// output and its state writes are committed.
//
// (CONFORMANCE G3)
func TestToolNode(t *testing.T) {
	type args struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	add, err := functiontool.New(functiontool.Config{Name: "add", Description: "adds"},
		func(_ context.Context, tc tool.Context, a args) (map[string]any, error) {
			tc.State().Set("sum", a.A+a.B)
			return map[string]any{"sum": a.A + a.B}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	pair := graph.Func("pair", func(context.Context, *graph.Context, string) (args, error) { return args{A: 2, B: 3}, nil })
	w := mustNew(t, graph.Config{Name: "wf", Nodes: []*graph.Node{pair, graph.FromTool(add)}, Edges: []graph.Edge{{From: "pair", To: "add"}}})
	r, key := setup(t, w, nil)
	evs := collect(t, r.Run(context.Background(), userID, key.SessionID, text("x"), nil))
	if got := outputOf(t, evs, "wf"); fmt.Sprint(got) != "map[sum:5]" {
		t.Errorf("output = %#v", got)
	}
	s, _ := r.Sessions().Get(context.Background(), key, nil)
	if v, _ := s.Get("sum"); v != 5 && v != 5.0 {
		t.Errorf("state sum = %v", v)
	}
}

// TestAgentNode: an LLM agent node gets the previous output as a message
// and its final text is its output.
//
// (CONFORMANCE G3)
func TestAgentNode(t *testing.T) {
	model := scripted.NewSequence("m", scripted.Text("a haiku about KITES"))
	poet := llm(t, "poet", model.Recording())
	w := mustNew(t, graph.Config{Name: "wf", Nodes: []*graph.Node{upper("shout"), graph.FromAgent(poet), upper("final")},
		Edges: []graph.Edge{{From: "shout", To: "poet"}, {From: "poet", To: "final"}}})
	r, key := setup(t, w, nil)
	evs := collect(t, r.Run(context.Background(), userID, key.SessionID, text("kites"), nil))
	if got := outputOf(t, evs, "wf"); got != "A HAIKU ABOUT KITES" {
		t.Errorf("output = %v", got)
	}
	reqs := model.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model calls", len(reqs))
	}
	last := reqs[0].Contents[len(reqs[0].Contents)-1]
	var seen string
	for _, p := range last.Parts {
		seen += p.Text
	}
	if !strings.Contains(seen, "KITES") {
		t.Errorf("the poet's last message is %q, want the shouted input", seen)
	}
	for _, ev := range evs {
		if ev.Author == "poet" && ev.Content != nil && (ev.NodeInfo == nil || ev.NodeInfo.Path != "wf/poet@1") {
			t.Errorf("poet's event has node info %+v", ev.NodeInfo)
		}
	}
}

// TestNestedWorkflow: a workflow node gets its input directly and hands on
// the nested workflow's output; paths nest.
// (CONFORMANCE A11)
func TestNestedWorkflow(t *testing.T) {
	inner := mustNew(t, graph.Config{Name: "inner", Nodes: []*graph.Node{
		graph.Func("twice", func(_ context.Context, _ *graph.Context, in string) (string, error) { return in + in, nil })}})
	outer := mustNew(t, graph.Config{Name: "outer", Nodes: []*graph.Node{upper("up"), graph.FromAgent(inner), upper("again")},
		Edges: []graph.Edge{{From: "up", To: "inner"}, {From: "inner", To: "again"}}})
	r, key := setup(t, outer, nil)
	evs := collect(t, r.Run(context.Background(), userID, key.SessionID, text("ab"), nil))
	if got := outputOf(t, evs, "outer"); got != "ABAB" {
		t.Errorf("output = %v", got)
	}
	if got := ended(evs); !slices.Equal(got, []string{"outer/up@1", "outer/inner@1/twice@1", "outer/inner@1", "outer/again@1"}) {
		t.Errorf("ended = %v", got)
	}
}

// TestDynamicNode: a node runs another node chosen at run time and awaits
// its output.
// (CONFORMANCE A11)
func TestDynamicNode(t *testing.T) {
	double := graph.Func("double", func(_ context.Context, _ *graph.Context, n int) (int, error) { return 2 * n, nil })
	inc := graph.Func("inc", func(_ context.Context, _ *graph.Context, n int) (int, error) { return n + 1, nil })
	pick := graph.Func("pick", func(ctx context.Context, nc *graph.Context, in string) (int, error) {
		n := 5
		for _, op := range strings.Split(in, " ") {
			node := inc
			if op == "double" {
				node = double
			}
			out, err := nc.RunNode(ctx, node, n)
			if err != nil {
				return 0, err
			}
			if n, err = graph.Convert[int](out); err != nil {
				return 0, err
			}
		}
		return n, nil
	})
	w := mustNew(t, graph.Config{Name: "wf", Nodes: []*graph.Node{pick}})
	r, key := setup(t, w, nil)
	evs := collect(t, r.Run(context.Background(), userID, key.SessionID, text("double inc double"), nil))
	if got := outputOf(t, evs, "wf"); got != 22.0 {
		t.Errorf("output = %#v, want 22", got)
	}
	want := []string{"wf/pick@1/double@1", "wf/pick@1/inc@1", "wf/pick@1/double@2", "wf/pick@1"}
	if got := ended(evs); !slices.Equal(got, want) {
		t.Errorf("ended = %v, want %v", got, want)
	}
}

// TestConfigErrors: malformed graphs are refused.
func TestConfigErrors(t *testing.T) {
	a := upper("a")
	for name, cfg := range map[string]graph.Config{
		"no name":      {Nodes: []*graph.Node{a}},
		"no nodes":     {Name: "w"},
		"duplicate":    {Name: "w", Nodes: []*graph.Node{a, upper("a")}},
		"unknown edge": {Name: "w", Nodes: []*graph.Node{a}, Edges: []graph.Edge{{From: "a", To: "zz"}}},
		"bad start":    {Name: "w", Nodes: []*graph.Node{a}, Start: "zz"},
		"lonely join":  {Name: "w", Nodes: []*graph.Node{a, graph.Join("j")}},
		"nil node":     {Name: "w", Nodes: []*graph.Node{nil}},
	} {
		if _, err := graph.New(cfg); !errors.Is(err, graph.ErrInvalidConfig) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

// TestConcurrentInvocations: one workflow serves many invocations at once.
//
// (CONFORMANCE G2)
func TestConcurrentInvocations(t *testing.T) {
	w := mustNew(t, graph.Config{Name: "fan",
		Nodes: []*graph.Node{upper("start"), upper("a"), upper("b"), graph.Join("all")},
		Edges: []graph.Edge{{From: "start", To: "a"}, {From: "start", To: "b"}, {From: "a", To: "all"}, {From: "b", To: "all"}}})
	r, _ := setup(t, w, nil)
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			sid := fmt.Sprint("c", i)
			if _, err := r.Sessions().Create(context.Background(), keyOf(sid), nil); err != nil {
				errs <- err
				return
			}
			var out any
			for ev, err := range r.Run(context.Background(), userID, sid, text(sid), nil) {
				if err != nil {
					errs <- err
					return
				}
				if ev.Author == "fan" && ev.Actions.EndOfAgent {
					out = ev.Output
				}
			}
			want := map[string]any{"a": strings.ToUpper(sid), "b": strings.ToUpper(sid)}
			if !reflect.DeepEqual(out, want) {
				errs <- fmt.Errorf("%s: output %v", sid, out)
				return
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestHumanInputResumesAfterRestart: a node asks for input; the invocation
// pauses; a new runner over the same SQLite file receives the answer, which
// resumes exactly that node, once; no finished node runs again.
// (CONFORMANCE A12)
func TestHumanInputResumesAfterRestart(t *testing.T) {
	var before, ask, after atomic.Int32
	prep := graph.Func("prep", func(_ context.Context, _ *graph.Context, in string) (string, error) {
		before.Add(1)
		return "order " + in, nil
	})
	approve := graph.Func("approve", func(_ context.Context, nc *graph.Context, in string) (string, error) {
		ask.Add(1)
		resp, err := nc.RequestInput(graph.InputRequest{Message: "approve " + in + "?", Payload: map[string]any{"order": in}})
		if err != nil {
			return "", err
		}
		if resp["approved"] == true {
			return in + " approved", nil
		}
		return in + " rejected", nil
	})
	ship := graph.Func("ship", func(_ context.Context, _ *graph.Context, in string) (string, error) {
		after.Add(1)
		return in + ", shipped", nil
	})
	w := mustNew(t, graph.Config{Name: "orders", Nodes: []*graph.Node{prep, approve, ship},
		Edges: []graph.Edge{{From: "prep", To: "approve"}, {From: "approve", To: "ship"}}})

	dsn := "sqlite://" + filepath.Join(t.TempDir(), "s.db")
	ctx := context.Background()
	svc1, err := sqlsession.NewService(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	r1, key := setup(t, w, svc1)
	evs := collect(t, r1.Run(ctx, userID, key.SessionID, text("42"), nil))
	ev, fc := inputCall(t, evs)
	if !slices.Contains(ev.LongRunningToolIDs, fc.ID) || ev.Author != "approve" || ev.NodeInfo == nil || ev.NodeInfo.Path != "orders/approve@1" {
		t.Fatalf("input request event = %+v", ev)
	}
	if fc.Args["message"] != "approve order 42?" || fc.Args["interrupt_id"] != fc.ID {
		t.Errorf("request args = %v", fc.Args)
	}
	if after.Load() != 0 {
		t.Fatal("ship ran before the answer")
	}
	// The request's JSON round-trips through the event codec.
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"nodeInfo":{"path":"orders/approve@1"}`) {
		t.Errorf("wire JSON lacks nodeInfo: %s", b)
	}
	var back event.Event
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.NodeInfo, ev.NodeInfo) {
		t.Errorf("decoded node info %+v, err %v", back.NodeInfo, err)
	}
	svc1.Close() // the process stops

	svc2, err := sqlsession.NewService(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer svc2.Close()
	r2, _ := setup(t, w, svc2)
	msg := text("")
	msg.Parts = []*genai.Part{graph.InputResponse(fc.ID, map[string]any{"approved": true})}
	evs = collect(t, r2.Run(ctx, userID, key.SessionID, msg, nil))
	if got := outputOf(t, evs, "orders"); got != "order 42 approved, shipped" {
		t.Errorf("output = %v", got)
	}
	if before.Load() != 1 || ask.Load() != 2 || after.Load() != 1 {
		t.Errorf("prep ran %d, approve %d, ship %d times; want 1, 2 (asked, then answered), 1", before.Load(), ask.Load(), after.Load())
	}
	if got := ended(evs); !slices.Equal(got, []string{"orders/approve@1", "orders/ship@1"}) {
		t.Errorf("ended on resume = %v", got)
	}
	// The answer is applied once: a second copy is refused, nothing runs.
	for _, err := range r2.Run(ctx, userID, key.SessionID, msg, nil) {
		if err == nil {
			t.Fatal("a second answer to the same request was accepted")
		}
		break
	}
	if before.Load() != 1 || ask.Load() != 2 || after.Load() != 1 {
		t.Errorf("a repeated answer ran nodes again")
	}
	// Resume after the end does nothing.
	evs = collect(t, r2.Resume(ctx, userID, key.SessionID, ev.InvocationID, nil))
	if len(evs) != 0 || after.Load() != 1 {
		t.Errorf("resuming a finished invocation gave %d events", len(evs))
	}
}

// TestNodeAsksTwice: a node asks for input twice in one run. When the
// second answer resumes it, the node runs again from its start, and its
// first request finds the first answer in the log, where the invocation
// committed it. (CONFORMANCE A12)
func TestNodeAsksTwice(t *testing.T) {
	var runs atomic.Int32
	var got []string
	ask := graph.Func("ask", func(_ context.Context, nc *graph.Context, in string) (string, error) {
		runs.Add(1)
		first, err := nc.RequestInput(graph.InputRequest{Message: "name?"})
		if err != nil {
			return "", err
		}
		second, err := nc.RequestInput(graph.InputRequest{Message: "city?"})
		if err != nil {
			return "", err
		}
		got = append(got, fmt.Sprint(first["v"], "/", second["v"]))
		return fmt.Sprint(first["v"], " from ", second["v"]), nil
	})
	w := mustNew(t, graph.Config{Name: "form", Nodes: []*graph.Node{ask}})
	r, key := setup(t, w, memsession.NewService())
	ctx := context.Background()
	answer := func(id, v string) []*event.Event {
		msg := text("")
		msg.Parts = []*genai.Part{graph.InputResponse(id, map[string]any{"v": v})}
		return collect(t, r.Run(ctx, userID, key.SessionID, msg, nil))
	}
	_, fc := inputCall(t, collect(t, r.Run(ctx, userID, key.SessionID, text("go"), nil)))
	if fc.Args["message"] != "name?" {
		t.Fatalf("first request %v", fc.Args)
	}
	_, fc = inputCall(t, answer(fc.ID, "Ada"))
	if fc.Args["message"] != "city?" {
		t.Fatalf("second request %v", fc.Args)
	}
	evs := answer(fc.ID, "London")
	if out := outputOf(t, evs, "form"); out != "Ada from London" {
		t.Errorf("output = %v", out)
	}
	if runs.Load() != 3 || !slices.Equal(got, []string{"Ada/London"}) {
		t.Errorf("node ran %d times and finished with %v; want 3 and [Ada/London]", runs.Load(), got)
	}
}

// TestPanickingNodeEndsWithError: a node that panics, alone or on a branch
// of a fan-out, fails like a node that returns an error: the workflow ends
// with an error event naming the node and the panic, and the next message
// runs the workflow again.
//
// (CONFORMANCE G2)
func TestPanickingNodeEndsWithError(t *testing.T) {
	boom := func(name string) *graph.Node {
		return graph.Func(name, func(_ context.Context, nc *graph.Context, in string) (string, error) {
			if in == "boom" && strings.HasPrefix(nc.Path(), "wf/p@") {
				panic("out of cheese")
			}
			return in, nil
		})
	}
	for _, tc := range []struct {
		name string
		cfg  graph.Config
		path string
	}{
		{"inline", graph.Config{Name: "wf", Nodes: []*graph.Node{boom("p"), upper("next")}, Edges: []graph.Edge{{From: "p", To: "next"}}}, "wf/p@1"},
		{"branch", graph.Config{Name: "wf", Nodes: []*graph.Node{boom("start"), boom("calm"), boom("p"), graph.Join("j")},
			Edges: []graph.Edge{{From: "start", To: "calm"}, {From: "start", To: "p"}, {From: "calm", To: "j"}, {From: "p", To: "j"}}}, "wf/p@1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, key := setup(t, mustNew(t, tc.cfg), nil)
			ctx := context.Background()
			evs := collect(t, r.Run(ctx, userID, key.SessionID, text("boom"), nil))
			ev := errorEvent(evs)
			if ev == nil || ev.ErrorCode != graph.ErrorCodeNodeFailed {
				t.Fatalf("no node-failed error event among %d events", len(evs))
			}
			for _, want := range []string{tc.path, "panic", "out of cheese"} {
				if !strings.Contains(ev.ErrorMessage, want) {
					t.Errorf("error message %q lacks %q", ev.ErrorMessage, want)
				}
			}
			evs = collect(t, r.Run(ctx, userID, key.SessionID, text("calm"), nil))
			if errorEvent(evs) != nil {
				t.Errorf("the next message failed: %v", errorEvent(evs).ErrorMessage)
			}
		})
	}
}

// TestNestedWorkflowFailureReportedOnce: a nested workflow whose node fails
// is a failed attempt of its workflow node: when the node's retry then
// succeeds, no error event was emitted; when every attempt fails, one
// error event ends the outer workflow, naming both nodes.
//
// (CONFORMANCE G2)
func TestNestedWorkflowFailureReportedOnce(t *testing.T) {
	var calls atomic.Int32
	flaky := graph.Func("flaky", func(_ context.Context, _ *graph.Context, in string) (string, error) {
		if calls.Add(1) == 1 || in == "never" {
			return "", errors.New("boom")
		}
		return in + "!", nil
	})
	inner := mustNew(t, graph.Config{Name: "inner", Nodes: []*graph.Node{flaky}})
	outer := mustNew(t, graph.Config{Name: "outer", Nodes: []*graph.Node{
		graph.FromAgent(inner).With(graph.NodeOptions{Retry: graph.Retry{MaxAttempts: 2}}), upper("after")},
		Edges: []graph.Edge{{From: "inner", To: "after"}}})
	r, key := setup(t, outer, nil)
	ctx := context.Background()
	evs := collect(t, r.Run(ctx, userID, key.SessionID, text("ok"), nil))
	if ev := errorEvent(evs); ev != nil {
		t.Errorf("a retried failure emitted an error event: %s", ev.ErrorMessage)
	}
	if got := outputOf(t, evs, "outer"); got != "OK!" {
		t.Errorf("output = %v", got)
	}
	evs = collect(t, r.Run(ctx, userID, key.SessionID, text("never"), nil))
	var failed []*event.Event
	for _, ev := range evs {
		if ev.ErrorCode != "" {
			failed = append(failed, ev)
		}
	}
	if len(failed) != 1 {
		t.Fatalf("%d error events, want 1", len(failed))
	}
	for _, want := range []string{"outer/inner@1", "outer/inner@1/flaky@1", "boom"} {
		if !strings.Contains(failed[0].ErrorMessage, want) {
			t.Errorf("error message %q lacks %q", failed[0].ErrorMessage, want)
		}
	}
}

// TestNodeWithCopies checks that options give a new node and leave the
// one they were set on as it was, so a node shared by workflows keeps its
// settings.
func TestNodeWithCopies(t *testing.T) {
	base := graph.Func("step", func(_ context.Context, _ *graph.Context, in string) (string, error) { return in, nil })
	retried := base.With(graph.NodeOptions{Retry: graph.Retry{MaxAttempts: 3}, Description: "retried"})
	if retried == base {
		t.Fatal("With returned the node it was called on")
	}
	if retried.Name() != "step" || retried.Kind() != graph.KindFunc {
		t.Errorf("copy = %s (%s), want step (function)", retried.Name(), retried.Kind())
	}
	if d := base.Description(); d != "" {
		t.Errorf("the original node's description = %q, want none", d)
	}
	if d := retried.Description(); d != "retried" {
		t.Errorf("the copy's description = %q, want retried", d)
	}
}

// TestG4EntryEdges: edges from Entry (ADK's START) make start nodes, which
// all get the input and run at once; a join after them gets both outputs;
// entry edges with a route, into a join, or beside Start are refused.
//
// (CONFORMANCE G4)
func TestG4EntryEdges(t *testing.T) {
	w := mustNew(t, graph.Config{Name: "two",
		Nodes: []*graph.Node{upper("a"), upper("b"), graph.Join("both")},
		Edges: []graph.Edge{{From: graph.Entry, To: "a"}, {From: graph.Entry, To: "b"},
			{From: "a", To: "both"}, {From: "b", To: "both"}}})
	if got := w.Starts(); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("starts = %v, want [a b]", got)
	}
	if len(w.Edges()) != 2 {
		t.Errorf("edges between nodes = %v, want the two into the join", w.Edges())
	}
	r, key := setup(t, w, nil)
	evs := collect(t, r.Run(context.Background(), userID, key.SessionID, text("x"), nil))
	if got, want := outputOf(t, evs, "two"), map[string]any{"a": "X", "b": "X"}; !reflect.DeepEqual(got, want) {
		t.Errorf("output = %#v, want %#v", got, want)
	}
	for name, cfg := range map[string]graph.Config{
		"route":      {Nodes: []*graph.Node{upper("a")}, Edges: []graph.Edge{{From: graph.Entry, To: "a", Route: "r"}}},
		"join":       {Nodes: []*graph.Node{upper("a"), graph.Join("j")}, Edges: []graph.Edge{{From: graph.Entry, To: "j"}, {From: "a", To: "j"}}},
		"and start":  {Nodes: []*graph.Node{upper("a")}, Start: "a", Edges: []graph.Edge{{From: graph.Entry, To: "a"}}},
		"unknown":    {Nodes: []*graph.Node{upper("a")}, Edges: []graph.Edge{{From: graph.Entry, To: "b"}}},
		"node START": {Nodes: []*graph.Node{upper(graph.Entry)}},
	} {
		cfg.Name = "w"
		if _, err := graph.New(cfg); !errors.Is(err, graph.ErrInvalidConfig) {
			t.Errorf("%s: New = %v, want ErrInvalidConfig", name, err)
		}
	}
}

// TestNodeNamed: a function node renamed runs under its new name; an agent
// node cannot be renamed.
func TestNodeNamed(t *testing.T) {
	n, err := upper("a").Named("b")
	if err != nil || n.Name() != "b" {
		t.Fatalf("Named = %v, %v", n, err)
	}
	w := mustNew(t, graph.Config{Name: "w", Nodes: []*graph.Node{n}})
	r, key := setup(t, w, nil)
	evs := collect(t, r.Run(context.Background(), userID, key.SessionID, text("x"), nil))
	if got := outputOf(t, evs, "w"); got != "X" {
		t.Errorf("output = %v", got)
	}
	for _, ev := range evs {
		if ev.NodeInfo != nil && strings.HasPrefix(ev.NodeInfo.Path, "w/a@") {
			t.Errorf("an event of the old name: %s", ev.NodeInfo.Path)
		}
	}
	inner := mustNew(t, graph.Config{Name: "inner", Nodes: []*graph.Node{upper("x")}})
	if _, err := graph.FromAgent(inner).Named("other"); err == nil {
		t.Error("an agent node was renamed")
	}
}
