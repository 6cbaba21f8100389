package ui_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// TestGraphTabTools runs the Graph tab's graphOf (static/graph.js) with
// node over an agent tree whose agents have tools: each tool is a node of
// kind "tool" with an edge from its agent, a tool two agents share is one
// node, and a tool named like an agent of the tree is not drawn twice.
func TestGraphTabTools(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is needed to run the UI's modules:", err)
	}
	src, err := os.ReadFile("static/graph.js")
	if err != nil {
		t.Fatal(err)
	}
	info := `{"name":"assistant","sub_agents":[{"name":"billing","sub_agents":[],"tools":[{"name":"lookup_order","type":"tool"},{"name":"refund","type":"tool"}]}],
		"tools":[{"name":"lookup_order","type":"tool"},{"name":"billing","type":"tool"}]}`
	script := `import { graphOf } from 'data:text/javascript;base64,` + base64.StdEncoding.EncodeToString(src) + `';
console.log(JSON.stringify(graphOf(` + info + `)));`
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "node", "--input-type=module", "-e", script).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var g struct {
		Start string
		Nodes []struct{ Name, Kind string }
		Edges []struct{ From, To string }
	}
	if err := json.Unmarshal(out, &g); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	kinds := map[string]string{}
	for _, n := range g.Nodes {
		if _, dup := kinds[n.Name]; dup {
			t.Errorf("node %s drawn twice", n.Name)
		}
		kinds[n.Name] = n.Kind
	}
	want := map[string]string{"assistant": "agent", "billing": "agent", "lookup_order": "tool", "refund": "tool"}
	if len(kinds) != len(want) {
		t.Errorf("nodes %v, want %v", kinds, want)
	}
	for name, k := range want {
		if kinds[name] != k {
			t.Errorf("node %s: kind %q, want %q", name, kinds[name], k)
		}
	}
	edges := map[string]bool{}
	for _, e := range g.Edges {
		edges[e.From+"->"+e.To] = true
	}
	for _, e := range []string{"assistant->billing", "assistant->lookup_order", "billing->lookup_order", "billing->refund"} {
		if !edges[e] {
			t.Errorf("no edge %s in %v", e, edges)
		}
	}
	if g.Start != "assistant" {
		t.Errorf("start %q", g.Start)
	}
}

// TestTraceTabSpanNotes runs the Trace tab's spanNote (static/render.js)
// with node: a retried node's attempt, a route, a pause, a failure and a
// resumed agent are said beside the span's name; a plain span gets nothing.
func TestTraceTabSpanNotes(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is needed to run the UI's modules:", err)
	}
	src, err := os.ReadFile("static/render.js")
	if err != nil {
		t.Fatal(err)
	}
	spans := `[
		{"attributes": {"loom.node.attempt": 1, "loom.node.max_attempts": 3, "error.type": "*errors.errorString"}},
		{"attributes": {"loom.node.attempt": 2, "loom.node.max_attempts": 3}},
		{"attributes": {"loom.node.attempt": 1, "loom.node.max_attempts": 1, "loom.node.route": "refund"}},
		{"attributes": {"loom.node.attempt": 1, "loom.node.max_attempts": 1, "loom.node.paused": true}},
		{"attributes": {"loom.resumed": true}},
		{"attributes": {"gen_ai.tool.name": "add"}}
	]`
	script := `import { spanNote } from 'data:text/javascript;base64,` + base64.StdEncoding.EncodeToString(src) + `';
console.log(JSON.stringify(` + spans + `.map(spanNote)));`
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "node", "--input-type=module", "-e", script).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got []string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := []string{"attempt 1/3 · failed: *errors.errorString", "attempt 2/3", "→ refund", "paused", "resumed", ""}
	if !slices.Equal(got, want) {
		t.Errorf("notes %q, want %q", got, want)
	}
}

// TestGraphTabTakenEdges runs the Graph tab's nodeRoutes and takenEdges
// (static/graph.js) with node: the edges a finished node took are those of
// its route, without a route, or its default when no other edge has the
// route; a node that has not ended took none.
func TestGraphTabTakenEdges(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is needed to run the UI's modules:", err)
	}
	src, err := os.ReadFile("static/graph.js")
	if err != nil {
		t.Fatal(err)
	}
	node := func(name string) string { return `{"name":"` + name + `","type":"function"}` }
	edge := func(from, to, route string) string {
		return `{"from_node":` + node(from) + `,"to_node":` + node(to) + `,"route":"` + route + `"}`
	}
	info := `{"name":"desk","graph":{"nodes":[{"name":"__START__","type":"start"},` + node("classify") + `,` + node("answer") + `,` +
		node("lookup") + `,` + node("facts") + `,` + node("other") + `],"edges":[` +
		`{"from_node":{"name":"__START__","type":"start"},"to_node":` + node("classify") + `},` +
		edge("classify", "answer", "question") + `,` + edge("classify", "lookup", "refund") + `,` + edge("lookup", "facts", "") + `,` +
		edge("facts", "other", "__DEFAULT__") + `,` + edge("facts", "answer", "again") + `]}}`
	end := func(path, route string) string {
		return `{"author":"desk","nodeInfo":{"path":"` + path + `","outputFor":["` + path + `"]},"actions":{"endOfAgent":true,"route":"` + route + `"}}`
	}
	events := `[` + end("desk/classify@1", "refund") + `,` + end("desk/lookup@1", "") + `,` + end("desk/facts@1", "later") + `]`
	script := `import { graphOf, nodeRoutes, takenEdges } from 'data:text/javascript;base64,` + base64.StdEncoding.EncodeToString(src) + `';
const g = graphOf(` + info + `);
console.log(JSON.stringify([...takenEdges(g, nodeRoutes(` + events + `))].map((e) => e.from + '->' + e.to)));`
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "node", "--input-type=module", "-e", script).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	var got []string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if want := []string{"classify->lookup", "lookup->facts", "facts->other"}; !slices.Equal(got, want) {
		t.Errorf("taken edges %q, want %q", got, want)
	}
}
