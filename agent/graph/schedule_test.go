package graph_test

import (
	"context"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/loomkit/loom/agent/graph"
)

// TestJoinAfterRoutedBranch: a join after a node whose route skipped one of
// the join's predecessors runs with the outputs of the ones that ran.
// (CONFORMANCE A11)
func TestJoinAfterRoutedBranch(t *testing.T) {
	pick := graph.Func("pick", func(_ context.Context, nc *graph.Context, in string) (string, error) {
		nc.SetRoute("left")
		return in, nil
	})
	w := mustNew(t, graph.Config{Name: "routed",
		Nodes: []*graph.Node{pick, upper("left"), upper("right"), upper("always"), graph.Join("all")},
		Edges: []graph.Edge{
			{From: "pick", To: "left", Route: "left"}, {From: "pick", To: "right", Route: "right"},
			{From: "pick", To: "always"},
			{From: "left", To: "all"}, {From: "right", To: "all"}, {From: "always", To: "all"},
		}})
	r, key := setup(t, w, nil)
	evs := collect(t, r.Run(context.Background(), userID, key.SessionID, text("go"), nil))
	want := map[string]any{"left": "GO", "always": "GO"}
	if got := outputOf(t, evs, "routed"); !reflect.DeepEqual(got, want) {
		t.Errorf("join output = %#v, want %#v", got, want)
	}
}

// TestJoinWaitsForLongerPath: a join whose predecessor is still ahead on a
// longer path (reachable from a running node) waits for it.
// (CONFORMANCE A11)
func TestJoinWaitsForLongerPath(t *testing.T) {
	w := mustNew(t, graph.Config{Name: "paths",
		Nodes: []*graph.Node{upper("start"), upper("short"), upper("long1"), upper("long2"), graph.Join("all")},
		Edges: []graph.Edge{
			{From: "start", To: "short"}, {From: "start", To: "long1"}, {From: "long1", To: "long2"},
			{From: "short", To: "all"}, {From: "long2", To: "all"},
		}})
	r, key := setup(t, w, nil)
	evs := collect(t, r.Run(context.Background(), userID, key.SessionID, text("x"), nil))
	want := map[string]any{"short": "X", "long2": "X"}
	if got := outputOf(t, evs, "paths"); !reflect.DeepEqual(got, want) {
		t.Errorf("join output = %#v, want %#v", got, want)
	}
}

// TestSlowBranchDoesNotHoldBackOthers: in a fan-out where one branch sleeps,
// the other branches and the nodes after them finish first.
// (CONFORMANCE A11)
func TestSlowBranchDoesNotHoldBackOthers(t *testing.T) {
	var mu sync.Mutex
	var order []string
	note := func(name string) {
		mu.Lock()
		order = append(order, name)
		mu.Unlock()
	}
	node := func(name string, d time.Duration) *graph.Node {
		return graph.Func(name, func(ctx context.Context, _ *graph.Context, in string) (string, error) {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return "", ctx.Err()
			}
			note(name)
			return name, nil
		})
	}
	w := mustNew(t, graph.Config{Name: "fan",
		Nodes: []*graph.Node{upper("start"), node("slow", 300*time.Millisecond), node("fast", 0), node("fast2", 0),
			node("after", 0), graph.Join("all")},
		Edges: []graph.Edge{
			{From: "start", To: "slow"}, {From: "start", To: "fast"}, {From: "start", To: "fast2"},
			{From: "fast", To: "after"},
			{From: "slow", To: "all"}, {From: "after", To: "all"}, {From: "fast2", To: "all"},
		}})
	r, key := setup(t, w, nil)
	evs := collect(t, r.Run(context.Background(), userID, key.SessionID, text("x"), nil))
	want := map[string]any{"slow": "slow", "after": "after", "fast2": "fast2"}
	if got := outputOf(t, evs, "fan"); !reflect.DeepEqual(got, want) {
		t.Errorf("join output = %#v, want %#v", got, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(order) != 4 || order[3] != "slow" {
		t.Errorf("nodes finished in order %v, want the slow branch last (after the node after the fast one)", order)
	}
	// The events say the same: the slow branch's end is committed last.
	var ends []string
	for _, ev := range evs {
		if ev.Actions.EndOfAgent && ev.NodeInfo != nil && len(ev.NodeInfo.OutputFor) > 0 && ev.Author != "fan" && ev.Author != "all" && ev.Author != "start" {
			ends = append(ends, ev.Author)
		}
	}
	if len(ends) != 4 || ends[3] != "slow" {
		t.Errorf("node ends committed in order %v, want slow last", ends)
	}
}

// TestDefaultRoute: edges with DefaultRoute are taken (all of them: a
// fan-out) when the node's route matches no other edge, and only then.
// (CONFORMANCE A11)
func TestDefaultRoute(t *testing.T) {
	build := func() *graph.Workflow {
		pick := graph.Func("pick", func(_ context.Context, nc *graph.Context, in string) (string, error) {
			if in != "none" {
				nc.SetRoute(in)
			}
			return in, nil
		})
		return mustNew(t, graph.Config{Name: "router",
			Nodes: []*graph.Node{pick, upper("known"), upper("other1"), upper("other2"), graph.Join("all")},
			Edges: []graph.Edge{
				{From: "pick", To: "known", Route: "known"},
				{From: "pick", To: "other1", Route: graph.DefaultRoute},
				{From: "pick", To: "other2", Route: graph.DefaultRoute},
				{From: "known", To: "all"}, {From: "other1", To: "all"}, {From: "other2", To: "all"},
			}})
	}
	for _, c := range []struct {
		in   string
		want map[string]any
	}{
		{"known", map[string]any{"known": "KNOWN"}},
		{"strange", map[string]any{"other1": "STRANGE", "other2": "STRANGE"}},
		{"none", map[string]any{"other1": "NONE", "other2": "NONE"}},
	} {
		r, key := setup(t, build(), nil)
		evs := collect(t, r.Run(context.Background(), userID, key.SessionID, text(c.in), nil))
		if got := outputOf(t, evs, "router"); !reflect.DeepEqual(got, c.want) {
			t.Errorf("route %q: output = %#v, want %#v", c.in, got, c.want)
		}
	}
}
