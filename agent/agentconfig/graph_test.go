package agentconfig_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/agent/agentconfig"
	"github.com/loomkit/loom/agent/workflow"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// graphRegistry registers what testdata/graph names: the classify node and
// the faq tool.
func graphRegistry(t *testing.T) *agentconfig.Registry {
	t.Helper()
	classify := workflow.Func("classify", func(_ context.Context, nc *workflow.Context, in string) (map[string]any, error) {
		if strings.Contains(in, "refund") {
			nc.SetRoute("refund")
		} else {
			nc.SetRoute("question")
		}
		return map[string]any{"question": in}, nil
	})
	type question struct {
		Question string `json:"question"`
	}
	faq, err := functiontool.New(functiontool.Config{Name: "faq", Description: "Answers questions."},
		func(_ context.Context, _ tool.Context, q question) (map[string]any, error) {
			return map[string]any{"answer": "We open at nine."}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return agentconfig.NewRegistry().Node(classify).Tool("faq", faq)
}

// TestY3GraphWorkflow loads a graph workflow from YAML (nodes of every
// kind, chains, a route map and a single edge) and runs both routes.
//
// (CONFORMANCE Y3)
func TestY3GraphWorkflow(t *testing.T) {
	m := newModels(echo)
	app := load(t, "graph", &agentconfig.Options{Registry: graphRegistry(t), Model: m.open})
	w, ok := app.Root.(*workflow.Workflow)
	if !ok {
		t.Fatalf("root is %T, want *workflow.Workflow", app.Root)
	}
	if w.Start() != "classify" || len(w.Nodes()) != 4 || len(w.Edges()) != 4 {
		t.Fatalf("start %q, %d nodes, %d edges; want classify, 4, 4", w.Start(), len(w.Nodes()), len(w.Edges()))
	}
	for _, n := range w.Nodes() {
		if n.Name() == "faq" && n.Description() != "Answers questions." {
			t.Errorf("faq node description %q", n.Description())
		}
	}
	var routes []string
	for _, e := range w.Edges() {
		if e.From == "classify" {
			routes = append(routes, e.Route+"→"+e.To)
		}
	}
	if strings.Join(routes, " ") != "refund→refunds question→faq" {
		t.Errorf("routes out of classify = %v", routes)
	}

	events := run(t, app.Root, "I want a refund")
	if got := lastOutput(events); got == nil || !strings.Contains(got.(map[string]any)["refunds"].(string), "I want a refund") {
		t.Errorf("refund route output = %#v, want the refunds agent's answer", got)
	}
	events = run(t, app.Root, "when do you open?")
	got, _ := lastOutput(events).(map[string]any)
	if faq, _ := got["faq"].(map[string]any); faq["answer"] != "We open at nine." {
		t.Errorf("question route output = %#v, want the faq tool's result", got)
	}
}

// lastOutput returns the output of the last event that records one.
func lastOutput(events []*event.Event) any {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Output != nil {
			return events[i].Output
		}
	}
	return nil
}

// TestY4GraphWorkflowErrors: a mistake in a YAML workflow is refused with
// the file, line and field that make it, as for every agent config.
//
// (CONFORMANCE Y4)
func TestY4GraphWorkflowErrors(t *testing.T) {
	head := "agent_class: Workflow\nname: w\nnodes:\n  - function: classify\n  - join: j\n"
	cases := []struct {
		name, yaml string
		line       int
		field, msg string
	}{
		{"no nodes", "agent_class: Workflow\nname: w\nnodes: []\n", 3, "nodes", "at least one node"},
		{"missing nodes", "agent_class: Workflow\nname: w\n", 1, "", "missing the required key nodes"},
		{"node key typo", head + "  - functon: x\n", 6, "nodes[2].functon", "is not a known key"},
		{"two kinds", head + "  - function: classify\n    join: k\n", 6, "nodes[2]", "exactly one of"},
		{"unknown function", head + "  - function: clasify\n", 6, "nodes[2].function", `no node named "clasify"`},
		{"unknown tool", head + "  - tool: {name: nope}\n", 6, "nodes[2].tool.name", `no tool named "nope"`},
		{"bad inline agent", head + "  - agent:\n      name: a\n      instructions: x\n", 8, "nodes[2].agent.instructions", "is not a known key"},
		{"duplicate node", head + "  - join: j\n", 6, "nodes[2]", `a second node named "j" (the first is at line 5)`},
		{"node named START", head + "  - join: START\n", 6, "nodes[2].join", "names the workflow's entry"},
		{"bad retry", head + "  - join: k\n    retry: {max_attempts: 0}\n", 7, "nodes[2].retry.max_attempts", "below the minimum 1"},
		{"negative timeout", head + "  - join: k\n    timeout: -1\n", 7, "nodes[2].timeout", "below the minimum 0"},
		{"unknown node in chain", head + "edges:\n  - [START, classify, jj]\n", 7, "edges[0][2]", "names no node (nodes: classify, j)"},
		{"unknown node in routes", head + "edges:\n  - [classify, {a: j, b: x}]\n", 7, "edges[0][1].b", "names no node"},
		{"routes not last", head + "edges:\n  - [classify, {a: j}, j]\n", 7, "edges[0][1]", "comes last in a chain"},
		{"edge to START", head + "edges:\n  - [classify, START]\n", 7, "edges[0][1]", "START comes first"},
		{"two entries", head + "edges:\n  - [START, classify]\n  - [START, j]\n", 8, "edges[1][0]", "a second edge from START"},
		{"edge key typo", head + "edges:\n  - {from: classify, to: j, rout: a}\n", 7, "edges[0].rout", "is not a known key (known: from, max, route, to)"},
		{"edge unknown to", head + "edges:\n  - from: classify\n    to: k\n", 8, "edges[0].to", "names no node"},
		{"short chain", head + "edges:\n  - [classify]\n", 7, "edges[0]", "a chain names at least two nodes"},
		{"join without edge", head, 0, "", "join \"j\" has no incoming edge"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "root_agent.yaml"), []byte(c.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			app, err := agentconfig.Load(dir, &agentconfig.Options{Registry: graphRegistry(t), Model: func(string) (model.LLM, error) { return nil, errors.New("no models") }})
			if err == nil {
				app.Close()
				t.Fatal("loaded")
			}
			if !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), "root_agent.yaml") {
				t.Errorf("error %q does not name the file and say %q", err, c.msg)
			}
			var ce *agentconfig.Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T %q is not an *agentconfig.Error", err, err)
			}
			if c.line != 0 && (ce.Line != c.line || ce.Field != c.field) {
				t.Errorf("error at line %d field %q, want line %d field %q (%v)", ce.Line, ce.Field, c.line, c.field, err)
			}
		})
	}
}
