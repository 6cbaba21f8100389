package graph_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
)

// TestFailedNodeRunsAgainOnResume: a node that failed ended the invocation
// with an error event; Runner.Resume runs that node again (it is not
// complete) without running the node before it, and the workflow finishes.
// (CONFORMANCE A12)
func TestFailedNodeRunsAgainOnResume(t *testing.T) {
	var a, b atomic.Int32
	nodeA := graph.Func("a", func(_ context.Context, _ *graph.Context, in string) (string, error) {
		a.Add(1)
		return in + "a", nil
	})
	nodeB := graph.Func("b", func(_ context.Context, _ *graph.Context, in string) (string, error) {
		if b.Add(1) == 1 {
			return "", errFlaky
		}
		return in + "b", nil
	})
	wf := mustNew(t, graph.Config{Name: "wf", Nodes: []*graph.Node{nodeA, nodeB}, Edges: []graph.Edge{{From: "a", To: "b"}}})
	ctx := context.Background()
	r, key := setup(t, wf, nil)
	var invID string
	failed := false
	for _, ev := range collect(t, r.Run(ctx, userID, key.SessionID, text("x"), nil)) {
		invID = ev.InvocationID
		if ev.ErrorCode == graph.ErrorCodeNodeFailed {
			failed = true
		}
	}
	if !failed {
		t.Fatal("the first run did not fail")
	}
	evs := collect(t, r.Resume(ctx, userID, key.SessionID, invID, nil))
	if got := outputOf(t, evs, "wf"); got != "xab" {
		t.Errorf("output = %v", got)
	}
	if a.Load() != 1 || b.Load() != 2 {
		t.Errorf("a ran %d, b %d times; want 1 and 2", a.Load(), b.Load())
	}
	for _, ev := range evs {
		if ev.ErrorCode != "" {
			t.Errorf("resumed run has error event %s: %s", ev.ErrorCode, ev.ErrorMessage)
		}
	}
}

var errFlaky = errors.New("flaky")

// TestFailedNestedNodeRunsAgainOnResume: a node of a nested workflow that
// failed runs again when the invocation is resumed; the nested workflow's
// finished node and the outer one before it do not.
// (CONFORMANCE A12)
func TestFailedNestedNodeRunsAgainOnResume(t *testing.T) {
	var x, y, up atomic.Int32
	nodeX := graph.Func("x", func(_ context.Context, _ *graph.Context, in string) (string, error) {
		x.Add(1)
		return in + "x", nil
	})
	nodeY := graph.Func("y", func(_ context.Context, _ *graph.Context, in string) (string, error) {
		if y.Add(1) == 1 {
			return "", errFlaky
		}
		return in + "y", nil
	})
	nodeUp := graph.Func("up", func(_ context.Context, _ *graph.Context, in string) (string, error) {
		up.Add(1)
		return in + "u", nil
	})
	inner := mustNew(t, graph.Config{Name: "inner", Nodes: []*graph.Node{nodeX, nodeY}, Edges: []graph.Edge{{From: "x", To: "y"}}})
	outer := mustNew(t, graph.Config{Name: "outer", Nodes: []*graph.Node{nodeUp, graph.FromAgent(inner)},
		Edges: []graph.Edge{{From: "up", To: "inner"}}})
	ctx := context.Background()
	r, key := setup(t, outer, nil)
	var invID string
	failed := false
	for _, ev := range collect(t, r.Run(ctx, userID, key.SessionID, text("s"), nil)) {
		invID = ev.InvocationID
		if ev.ErrorCode == graph.ErrorCodeNodeFailed {
			failed = true
		}
	}
	if !failed {
		t.Fatal("the first run did not fail")
	}
	evs := collect(t, r.Resume(ctx, userID, key.SessionID, invID, nil))
	if got := outputOf(t, evs, "outer"); got != "suxy" {
		t.Errorf("output = %v", got)
	}
	if up.Load() != 1 || x.Load() != 1 || y.Load() != 2 {
		t.Errorf("up ran %d, x %d, y %d times; want 1, 1 and 2", up.Load(), x.Load(), y.Load())
	}
}

// TestFailedAgentNodeRunsAgainOnResume: an LLM agent node whose model call
// failed runs again when the invocation is resumed, with its input.
// (CONFORMANCE A12)
func TestFailedAgentNodeRunsAgainOnResume(t *testing.T) {
	var calls atomic.Int32
	m := scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if calls.Add(1) == 1 {
			return scripted.Turn{}, errFlaky
		}
		return scripted.Text("heard " + scripted.LastUserText(req)), nil
	})
	bot := llm(t, "bot", m)
	wf := mustNew(t, graph.Config{Name: "wf", Nodes: []*graph.Node{upper("up"), graph.FromAgent(bot)},
		Edges: []graph.Edge{{From: "up", To: "bot"}}})
	ctx := context.Background()
	r, key := setup(t, wf, nil)
	var invID string
	for ev, err := range r.Run(ctx, userID, key.SessionID, text("hi"), nil) {
		if ev != nil {
			invID = ev.InvocationID
		}
		_ = err
	}
	evs := collect(t, r.Resume(ctx, userID, key.SessionID, invID, nil))
	if got, _ := outputOf(t, evs, "wf").(string); !strings.HasPrefix(got, "heard ") || !strings.HasSuffix(got, "HI") {
		t.Errorf("output = %v", got)
	}
	s, _ := r.Sessions().Get(ctx, key, nil)
	inputs := 0
	for _, ev := range s.InvocationEvents(invID) {
		if ev.Author == "wf" && ev.Content != nil && ev.NodeInfo != nil && ev.NodeInfo.Path == "wf/bot@1" {
			inputs++
		}
	}
	if inputs != 1 {
		t.Errorf("the node's input was given %d times, want once", inputs)
	}
	if calls.Load() != 2 {
		t.Errorf("%d model calls, want 2", calls.Load())
	}
}

// TestNestedWorkflowRetry: a nested workflow node with a retry policy is
// run again when a node inside it fails, and its output is the second
// attempt's.
// (CONFORMANCE A11)
func TestNestedWorkflowRetry(t *testing.T) {
	var y atomic.Int32
	nodeY := graph.Func("y", func(_ context.Context, _ *graph.Context, in string) (string, error) {
		if y.Add(1) == 1 {
			return "", errFlaky
		}
		return in + "y", nil
	})
	inner := mustNew(t, graph.Config{Name: "inner", Nodes: []*graph.Node{upper("x"), nodeY}, Edges: []graph.Edge{{From: "x", To: "y"}}})
	outer := mustNew(t, graph.Config{Name: "outer", Nodes: []*graph.Node{graph.FromAgent(inner).With(graph.NodeOptions{Retry: graph.Retry{MaxAttempts: 2}})}})
	r, key := setup(t, outer, nil)
	evs := collect(t, r.Run(context.Background(), userID, key.SessionID, text("s"), nil))
	if got := outputOf(t, evs, "outer"); got != "Sy" {
		t.Errorf("output = %v", got)
	}
	for _, ev := range evs {
		if ev.ErrorCode != "" {
			t.Errorf("error event %s: %s", ev.ErrorCode, ev.ErrorMessage)
		}
	}
	if y.Load() != 2 {
		t.Errorf("y ran %d times, want 2", y.Load())
	}
}
