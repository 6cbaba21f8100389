package graph_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// everyKindGraph is a workflow with a node of every kind: a fan-out to two
// function nodes, a join, a bounded loop that counts in state, a node with
// three dynamic children (two function nodes and an LLM agent), a nested
// workflow, an LLM agent node and a last function node; the model calls of
// the LLM agents are counted.
func everyKindGraph(t *testing.T, calls *atomic.Int32) *graph.Workflow {
	t.Helper()
	a := graph.Func("a", func(_ context.Context, nc *graph.Context, in string) (string, error) {
		nc.State().Set("a", in)
		return in + "a", nil
	})
	b := graph.Func("b", func(_ context.Context, nc *graph.Context, in string) (string, error) {
		nc.State().Set("b", in)
		return in + "b", nil
	})
	c := graph.Func("c", func(_ context.Context, _ *graph.Context, in string) (string, error) {
		return in + "c", nil
	})
	loop := graph.Func("loop", func(_ context.Context, nc *graph.Context, _ any) (string, error) {
		v, _ := nc.State().Get("n")
		n, _ := graph.Convert[int](v)
		n++
		nc.State().Set("n", n)
		if n < 3 {
			nc.SetRoute("again")
		} else {
			nc.SetRoute("done")
		}
		return fmt.Sprint("loop", n), nil
	})
	child := upper("child")
	helper := graph.FromAgent(llm(t, "helper", scripted.New("h", func(context.Context, *model.Request) (scripted.Turn, error) {
		calls.Add(1)
		return scripted.Text("helped"), nil
	})))
	dyn := graph.Func("dyn", func(ctx context.Context, nc *graph.Context, in string) (string, error) {
		x, err := nc.RunNode(ctx, child, in+"-1")
		if err != nil {
			return "", err
		}
		y, err := nc.RunNode(ctx, child, in+"-2")
		if err != nil {
			return "", err
		}
		z, err := nc.RunNode(ctx, helper, in)
		if err != nil {
			return "", err
		}
		return fmt.Sprint(x, "+", y, "+", z), nil
	})
	inner := mustNew(t, graph.Config{Name: "inner", Nodes: []*graph.Node{upper("x"), graph.Func("y", func(_ context.Context, _ *graph.Context, in string) (string, error) {
		return in + "y", nil
	})}, Edges: []graph.Edge{{From: "x", To: "y"}}})
	m := scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		calls.Add(1)
		return scripted.Text("bot heard " + scripted.LastUserText(req)), nil
	})
	return mustNew(t, graph.Config{Name: "wf",
		Nodes: []*graph.Node{a, b, c, graph.Join("j"), loop, dyn, graph.FromAgent(inner), graph.FromAgent(llm(t, "bot", m)), upper("fin")},
		Edges: []graph.Edge{{From: "a", To: "b"}, {From: "a", To: "c"}, {From: "b", To: "j"}, {From: "c", To: "j"}, {From: "j", To: "loop"},
			{From: "loop", To: "loop", Route: "again", Max: 5}, {From: "loop", To: "dyn", Route: "done"},
			{From: "dyn", To: "inner"}, {From: "inner", To: "bot"}, {From: "bot", To: "fin"}}})
}

// outcome is what an invocation left in its session: the state, the node
// runs that ended (one entry per end event, sorted), the workflow's output
// and its error events.
type outcome struct {
	state  string
	ends   []string
	output any
	errors []string
}

func outcomeOf(t *testing.T, svc *session.Service, key session.Key) outcome {
	t.Helper()
	sess, err := svc.Get(context.Background(), key, nil)
	if err != nil {
		t.Fatal(err)
	}
	o := outcome{state: fmt.Sprint(sess.State())}
	for _, ev := range sess.Events() {
		if ev.Actions.EndOfAgent && ev.NodeInfo != nil && len(ev.NodeInfo.OutputFor) > 0 {
			o.ends = append(o.ends, ev.NodeInfo.Path)
			if ev.NodeInfo.Path == "wf" {
				o.output = ev.Output
			}
		}
		if ev.ErrorCode != "" {
			o.errors = append(o.errors, ev.ErrorMessage)
		}
	}
	slices.Sort(o.ends)
	return o
}

// TestResumeAfterCrashAtEveryEvent: an invocation of a workflow with a node
// of every kind stops after its k-th event, for every k, and
// Runner.Resume continues it from the log; each run ends with the state,
// the node ends (each once) and the output of the uninterrupted run, and
// each LLM agent's model is called once.
// (CONFORMANCE A12)
func TestResumeAfterCrashAtEveryEvent(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	w := everyKindGraph(t, &calls)
	svc := memsession.NewService()
	r, key := setup(t, w, svc)
	full := collect(t, r.Run(ctx, userID, key.SessionID, text("go"), nil))
	want := outcomeOf(t, svc, key)
	if out, _ := want.output.(string); !strings.HasPrefix(out, "BOT HEARD") || !strings.HasSuffix(out, "LOOP3-1+LOOP3-2+HELPEDY") || len(want.errors) > 0 || calls.Load() != 2 {
		t.Fatalf("uninterrupted run: %+v, %d model calls", want, calls.Load())
	}
	for k := 1; k < len(full); k++ {
		calls.Store(0)
		svc := memsession.NewService()
		r, key := setup(t, w, svc)
		n := 0
		var inv string
		for ev, err := range r.Run(ctx, userID, key.SessionID, text("go"), nil) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Partial {
				continue
			}
			inv = ev.InvocationID
			if n++; n == k {
				break // the process stops after the k-th event was committed
			}
		}
		collect(t, r.Resume(ctx, userID, key.SessionID, inv, nil))
		got := outcomeOf(t, svc, key)
		if got.state != want.state || !slices.Equal(got.ends, want.ends) || got.output != want.output || len(got.errors) > 0 || calls.Load() != 2 {
			ev := full[k-1]
			t.Errorf("stopped after event %d (%s, %+v): resumed to %+v with %d model calls; want %+v",
				k, ev.Author, ev.NodeInfo, got, calls.Load(), want)
		}
	}
}

// TestNodeInputSameAfterResume: a node gets its predecessor's output in
// the form the log gives back (JSON values), whether or not the invocation
// was interrupted between them, so an untyped node computes the same.
// (CONFORMANCE A12)
func TestNodeInputSameAfterResume(t *testing.T) {
	type count struct{ N int }
	first := graph.Func("first", func(context.Context, *graph.Context, string) (count, error) {
		return count{N: 3}, nil
	})
	second := graph.Func("second", func(_ context.Context, _ *graph.Context, in any) (string, error) {
		return fmt.Sprintf("%T %v", in, in), nil
	})
	w := mustNew(t, graph.Config{Name: "wf", Nodes: []*graph.Node{first, second}, Edges: []graph.Edge{{From: "first", To: "second"}}})
	ctx := context.Background()
	r, key := setup(t, w, nil)
	want := outputOf(t, collect(t, r.Run(ctx, userID, key.SessionID, text("go"), nil)), "wf")
	if want != "map[string]interface {} map[N:3]" {
		t.Errorf("uninterrupted output = %v, want the JSON form of first's output", want)
	}
	r, key = setup(t, w, memsession.NewService())
	var inv string
	for ev, err := range r.Run(ctx, userID, key.SessionID, text("go"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		inv = ev.InvocationID
		if ev.NodeInfo != nil && ev.NodeInfo.Path == "wf/first@1" {
			break
		}
	}
	if got := outputOf(t, collect(t, r.Resume(ctx, userID, key.SessionID, inv, nil)), "wf"); got != want {
		t.Errorf("resumed output = %v, uninterrupted %v", got, want)
	}
}

// TestInputAskedOnceWhileItWaits: two concurrent nodes ask for input.
// Runner.Resume while both wait (as after a crash right after the calls
// were committed, or a durable engine's next step) commits nothing, and
// the answer to one branch resumes the invocation without the other node
// asking again: each call is made once, and each answer finishes its node.
// (CONFORMANCE A12)
func TestInputAskedOnceWhileItWaits(t *testing.T) {
	asker := func(name string) *graph.Node {
		return graph.Func(name, func(_ context.Context, nc *graph.Context, _ any) (string, error) {
			resp, err := nc.RequestInput(graph.InputRequest{Message: name + "?"})
			if err != nil {
				return "", err
			}
			return fmt.Sprint(name, "=", resp["v"]), nil
		})
	}
	start := graph.Func("start", func(_ context.Context, _ *graph.Context, in string) (string, error) { return in, nil })
	w := mustNew(t, graph.Config{Name: "form", Nodes: []*graph.Node{start, asker("a"), asker("b"), graph.Join("both")},
		Edges: []graph.Edge{{From: "start", To: "a"}, {From: "start", To: "b"}, {From: "a", To: "both"}, {From: "b", To: "both"}}})
	svc := memsession.NewService()
	r, key := setup(t, w, svc)
	ctx := context.Background()
	calls := func() map[string]*event.Event { // by node
		sess, err := svc.Get(ctx, key, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]*event.Event{}
		for _, ev := range sess.Events() {
			for _, fc := range ev.FunctionCalls() {
				if fc.Name != graph.FunctionRequestInput {
					continue
				}
				if out[ev.Author] != nil {
					t.Fatalf("node %s asked twice", ev.Author)
				}
				out[ev.Author] = ev
			}
		}
		return out
	}
	evs := collect(t, r.Run(ctx, userID, key.SessionID, text("go"), nil))
	asked := calls()
	if len(asked) != 2 {
		t.Fatalf("asked %d times, want once by a and once by b", len(asked))
	}
	if again := collect(t, r.Resume(ctx, userID, key.SessionID, evs[0].InvocationID, nil)); len(again) != 0 {
		t.Fatalf("Resume while both wait committed %d events, want none", len(again))
	}
	answer := func(node, v string) []*event.Event {
		msg := text("")
		msg.Parts = []*genai.Part{graph.InputResponse(asked[node].FunctionCalls()[0].ID, map[string]any{"v": v})}
		return collect(t, r.Run(ctx, userID, key.SessionID, msg, nil))
	}
	answer("a", "1")
	calls() // fails if b asked again
	out := outputOf(t, answer("b", "2"), "form")
	if m, _ := out.(map[string]any); m["a"] != "a=1" || m["b"] != "b=2" {
		t.Fatalf("output = %v, want both answers", out)
	}
	if n := len(calls()); n != 2 {
		t.Fatalf("%d requests in the log, want 2", n)
	}
}
