package ui_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
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
