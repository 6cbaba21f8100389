package graph_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/event"
)

// TestParallelWorkerBound: a parallel worker runs its node over every item
// of a list, never more than its bound at once (and reaching it), each on a
// branch of its own, and outputs the results in the input's order.
// (CONFORMANCE A11)
func TestParallelWorkerBound(t *testing.T) {
	var running, peak atomic.Int32
	sq := graph.Func("sq", func(ctx context.Context, _ *graph.Context, n int) (int, error) {
		k := running.Add(1)
		defer running.Add(-1)
		for p := peak.Load(); k > p && !peak.CompareAndSwap(p, k); p = peak.Load() {
		}
		// Later items finish first.
		time.Sleep(time.Duration(10-n) * 3 * time.Millisecond)
		return n * n, nil
	})
	list := graph.Func("list", func(_ context.Context, _ *graph.Context, _ string) ([]int, error) {
		return []int{1, 2, 3, 4, 5, 6}, nil
	})
	w := mustNew(t, graph.Config{Name: "pw",
		Nodes: []*graph.Node{list, graph.ParallelWorker(sq, 2)},
		Edges: []graph.Edge{{From: "list", To: "sq"}}})
	r, key := setup(t, w, nil)
	evs := collect(t, r.Run(context.Background(), userID, key.SessionID, text("go"), nil))
	want := []any{1.0, 4.0, 9.0, 16.0, 25.0, 36.0}
	if got := outputOf(t, evs, "pw"); !reflect.DeepEqual(got, want) {
		t.Errorf("output = %#v, want %#v", got, want)
	}
	if p := peak.Load(); p != 2 {
		t.Errorf("at most %d items ran at once, want 2", p)
	}
	branches := map[string]bool{}
	for _, ev := range evs {
		if ev.NodeInfo != nil && strings.HasPrefix(ev.NodeInfo.Path, "pw/sq@1/sq@") {
			branches[ev.Branch] = true
		}
	}
	if len(branches) != 6 || !branches["pw.sq.sq@3"] {
		t.Errorf("items ran on branches %v, want one each", branches)
	}
}

// TestParallelWorkerFailure: an item that fails fails the worker node, and
// the workflow ends with the error event naming it.
// (CONFORMANCE A11)
func TestParallelWorkerFailure(t *testing.T) {
	check := graph.Func("check", func(_ context.Context, _ *graph.Context, n int) (int, error) {
		if n == 3 {
			return 0, fmt.Errorf("three is not allowed")
		}
		return n, nil
	})
	w := mustNew(t, graph.Config{Name: "pw", Nodes: []*graph.Node{
		graph.Func("list", func(_ context.Context, _ *graph.Context, _ string) ([]int, error) { return []int{1, 2, 3, 4}, nil }),
		graph.ParallelWorker(check, 0)},
		Edges: []graph.Edge{{From: "list", To: "check"}}})
	r, key := setup(t, w, nil)
	var failed *event.Event
	for _, ev := range collect(t, r.Run(context.Background(), userID, key.SessionID, text("go"), nil)) {
		if ev.ErrorCode == graph.ErrorCodeNodeFailed {
			failed = ev
		}
	}
	if failed == nil || !strings.Contains(failed.ErrorMessage, "item 3") || !strings.Contains(failed.ErrorMessage, "three is not allowed") {
		t.Fatalf("error event = %+v", failed)
	}
}

// TestParallelWorkerResumesWaitingItem: an item that asks for input pauses
// the worker; the answer runs that item again and not the ones that had
// finished.
// (CONFORMANCE A12)
func TestParallelWorkerResumesWaitingItem(t *testing.T) {
	var runs [4]atomic.Int32
	ask := graph.Func("ask", func(_ context.Context, nc *graph.Context, n int) (string, error) {
		runs[n].Add(1)
		if n != 2 {
			return fmt.Sprint(n), nil
		}
		ans, err := nc.RequestInput(graph.InputRequest{Message: "two?"})
		if err != nil {
			return "", err
		}
		return fmt.Sprint(ans["v"]), nil
	})
	w := mustNew(t, graph.Config{Name: "pw", Nodes: []*graph.Node{
		graph.Func("list", func(_ context.Context, _ *graph.Context, _ string) ([]int, error) { return []int{1, 2, 3}, nil }),
		graph.ParallelWorker(ask, 0)},
		Edges: []graph.Edge{{From: "list", To: "ask"}}})
	r, key := setup(t, w, nil)
	var id string
	for _, ev := range collect(t, r.Run(context.Background(), userID, key.SessionID, text("go"), nil)) {
		for _, fc := range ev.FunctionCalls() {
			if fc.Name == graph.FunctionRequestInput {
				id = fc.ID
			}
		}
	}
	if id == "" {
		t.Fatal("no input request")
	}
	answer := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{graph.InputResponse(id, map[string]any{"v": "deux"})}}
	evs := collect(t, r.Run(context.Background(), userID, key.SessionID, answer, nil))
	if got := outputOf(t, evs, "pw"); !reflect.DeepEqual(got, []any{"1", "deux", "3"}) {
		t.Errorf("output = %#v", got)
	}
	if runs[1].Load() != 1 || runs[2].Load() != 2 || runs[3].Load() != 1 {
		t.Errorf("items ran %d, %d, %d times; want 1, 2, 1", runs[1].Load(), runs[2].Load(), runs[3].Load())
	}
}
