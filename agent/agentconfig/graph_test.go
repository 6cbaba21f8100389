package agentconfig_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/agentconfig"
	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// graphRegistry registers what testdata/graph names: the classify node and
// the faq tool.
func graphRegistry(t *testing.T) *agentconfig.Registry {
	t.Helper()
	classify := graph.Func("classify", func(_ context.Context, nc *graph.Context, in string) (map[string]any, error) {
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

// TestY3GraphWorkflow loads a graph workflow in ADK's form (chains from
// START, a route map, an agent file, a ToolNode and a JoinNode file named
// twice) and runs both routes.
//
// (CONFORMANCE Y3)
func TestY3GraphWorkflow(t *testing.T) {
	m := newModels(echo)
	app := load(t, "graph", &agentconfig.Options{Registry: graphRegistry(t), Model: m.open})
	w, ok := app.Root.(*graph.Workflow)
	if !ok {
		t.Fatalf("root is %T, want *graph.Workflow", app.Root)
	}
	if w.Start() != "classify" || len(w.Nodes()) != 4 || len(w.Edges()) != 4 {
		t.Fatalf("start %q, %d nodes, %d edges; want classify, 4, 4", w.Start(), len(w.Nodes()), len(w.Edges()))
	}
	if len(app.Files) != 4 {
		t.Errorf("files read = %v, want the root and three node files, each once", app.Files)
	}
	var routes []string
	for _, e := range w.Edges() {
		if e.From == "classify" {
			routes = append(routes, e.Route+"→"+e.To)
		}
	}
	slices.Sort(routes)
	if strings.Join(routes, " ") != "question→faq refund→refunds" {
		t.Errorf("routes out of classify = %v", routes)
	}

	events := run(t, app.Root, "I want a refund")
	if got, _ := lastOutput(events).(map[string]any); got == nil || !strings.Contains(fmt.Sprint(got["refunds"]), "I want a refund") {
		t.Errorf("refund route output = %#v, want the refunds agent's answer", got)
	}
	events = run(t, app.Root, "when do you open?")
	got, _ := lastOutput(events).(map[string]any)
	if faq, _ := got["faq"].(map[string]any); faq["answer"] != "We open at nine." {
		t.Errorf("question route output = %#v, want the faq tool's result", got)
	}
}

// TestY3ADKWorkflowFile: a Workflow file as ADK writes it: START fanning
// out to two registered functions and a join, a FunctionNode file naming a
// registered function under another name, and a default route.
//
// (CONFORMANCE Y3)
func TestY3ADKWorkflowFile(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"root_agent.yaml": `name: join_wf
agent_class: Workflow
edges:
  - - START
    - alpha_fn
    - aggregate_join.yaml
  - - START
    - router_fn
    - ALPHA: agent_alpha.yaml
      default: aggregate_join.yaml
  - [agent_alpha.yaml, aggregate_join.yaml]
`,
		"aggregate_join.yaml": "name: aggregate_join\nagent_class: JoinNode\n",
		"agent_alpha.yaml":    "name: agent_alpha\nagent_class: FunctionNode\nfunc_code: alpha_fn\nrerun_on_resume: true\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	alpha := graph.Func("alpha_fn", func(_ context.Context, _ *graph.Context, in string) (string, error) { return "alpha: " + in, nil })
	router := graph.Func("router_fn", func(_ context.Context, nc *graph.Context, in string) (string, error) {
		nc.SetRoute(strings.ToUpper(in))
		return strings.ToUpper(in), nil
	})
	reg := agentconfig.NewRegistry().Node(alpha).Node(router)
	app, err := agentconfig.Load(dir, &agentconfig.Options{Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	w := app.Root.(*graph.Workflow)
	if got := w.Starts(); !slices.Equal(got, []string{"alpha_fn", "router_fn"}) {
		t.Errorf("starts = %v", got)
	}
	got, _ := lastOutput(run(t, app.Root, "alpha")).(map[string]any)
	want := map[string]any{"alpha_fn": "alpha: alpha", "agent_alpha": "alpha: ALPHA"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ALPHA route: join output = %#v, want %#v", got, want)
	}
	got, _ = lastOutput(run(t, app.Root, "beta")).(map[string]any)
	want = map[string]any{"alpha_fn": "alpha: beta", "router_fn": "BETA"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("default route: join output = %#v, want %#v", got, want)
	}
}

// TestY3InlineNodes: the Loom key nodes defines nodes in the workflow's
// file (an inline agent, a tool with a retry policy, a registered node, a
// join), which edges name, also with one edge written as a mapping.
//
// (CONFORMANCE Y3)
func TestY3InlineNodes(t *testing.T) {
	dir := t.TempDir()
	text := `agent_class: Workflow
name: support
nodes:
  - function: classify
  - agent: {name: refunds, model: m, instruction: Refunds.}
  - tool: {name: faq}
    retry_config: {max_attempts: 3, initial_delay: 0.01, backoff_factor: 2}
    timeout: 2.5
    description: Answers questions.
  - join: done
edges:
  - [START, classify, {refund: refunds, question: faq}]
  - [refunds, done]
  - {from: faq, to: done}
`
	if err := os.WriteFile(filepath.Join(dir, "root_agent.yaml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newModels(echo)
	app, err := agentconfig.Load(dir, &agentconfig.Options{Registry: graphRegistry(t), Model: m.open})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	w := app.Root.(*graph.Workflow)
	for _, n := range w.Nodes() {
		if n.Name() == "faq" && n.Description() != "Answers questions." {
			t.Errorf("faq node description %q", n.Description())
		}
	}
	got, _ := lastOutput(run(t, app.Root, "when do you open?")).(map[string]any)
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
	files := map[string]string{
		"fn.yaml":      "agent_class: FunctionNode\nname: fn\nfunc_code: classify\n",
		"badfn.yaml":   "agent_class: FunctionNode\nname: fn\nfunc_code: clasify\n",
		"typo.yaml":    "agent_class: FunctionNode\nname: fn\nfuncode: classify\n",
		"handoff.yaml": "agent_class: FunctionNode\nname: fn\nfunc_code: classify\nrerun_on_resume: false\n",
		"tool.yaml":    "agent_class: ToolNode\nname: t\ntool_code: nope\n",
		"join.yaml":    "agent_class: JoinNode\nname: j2\nretry_config: {}\n",
		"agent.yaml":   "name: a\ninstructions: x\n",
		"factor.yaml":  "agent_class: FunctionNode\nname: fn\nfunc_code: classify\nretry_config: {backoff_factor: 3}\n",
	}
	cases := []struct {
		name, yaml string
		file       string // the file the error names, root_agent.yaml when empty
		line       int
		field, msg string
	}{
		{"no nodes", "agent_class: Workflow\nname: w\n", "", 1, "", "at least one node"},
		{"concurrency", "agent_class: Workflow\nname: w\nmax_concurrency: 2\n", "", 3, "max_concurrency", "is not supported: a graph workflow starts every node"},
		{"node key typo", head + "  - functon: x\n", "", 6, "nodes[2].functon", "is not a known key"},
		{"two kinds", head + "  - function: classify\n    join: k\n", "", 6, "nodes[2]", "exactly one of"},
		{"unknown function", head + "  - function: clasify\n", "", 6, "nodes[2].function", `no node named "clasify"`},
		{"unknown tool", head + "  - tool: {name: nope}\n", "", 6, "nodes[2].tool.name", `no tool named "nope"`},
		{"request-only tool", head + "  - tool: {name: google_search}\n", "", 6, "nodes[2].tool", "only changes model requests; a tool node runs a function"},
		{"bad inline agent", head + "  - agent:\n      name: a\n      instructions: x\n", "", 8, "nodes[2].agent.instructions", "is not a known key"},
		{"duplicate node", head + "  - join: j\n", "", 6, "nodes[2]", `a second node named "j" (the first is at line 5)`},
		{"node named START", head + "  - join: START\n", "", 6, "nodes[2].join", "names the workflow's entry"},
		{"bad retry", head + "  - join: k\n    retry_config: {max_attempts: 0}\n", "", 7, "nodes[2].retry_config.max_attempts", "below the minimum 1"},
		{"negative timeout", head + "  - join: k\n    timeout: -1\n", "", 7, "nodes[2].timeout", "below the minimum 0"},
		{"unknown node in chain", head + "edges:\n  - [START, classify, jj]\n", "", 7, "edges[0][2]", "names no node (nodes: classify, j; registered: classify)"},
		{"unknown node in routes", head + "edges:\n  - [classify, {a: j, b: x}]\n", "", 7, "edges[0][1].b", "names no node"},
		{"node after routes", head + "edges:\n  - [classify, {a: j}, j]\n", "", 7, "edges[0][2]", "the maps come last in a chain"},
		{"routes first", head + "edges:\n  - [{a: j}, j]\n", "", 7, "edges[0][0]", "follows the node that chooses"},
		{"routes from START", head + "edges:\n  - [START, {a: j}]\n", "", 7, "edges[0][1]", "START takes no routes"},
		{"edge to START", head + "edges:\n  - [classify, START]\n", "", 7, "edges[0][1]", "no edge leads to START"},
		{"edge key typo", head + "edges:\n  - {from: classify, to: j, rout: a}\n", "", 7, "edges[0].rout", "is not a known key (known: from, max, route, to)"},
		{"edge unknown to", head + "edges:\n  - from: classify\n    to: k\n", "", 8, "edges[0].to", "names no node"},
		{"short chain", head + "edges:\n  - [classify]\n", "", 7, "edges[0]", "a chain names at least two nodes"},
		{"join without edge", head, "", 0, "", "join \"j\" has no incoming edge"},
		{"missing node file", "agent_class: Workflow\nname: w\nedges:\n  - [START, nope.yaml]\n", "", 4, "edges[0][1]", "no such file"},
		{"node file outside", "agent_class: Workflow\nname: w\nedges:\n  - [START, ../x.yaml]\n", "", 4, "edges[0][1]", "outside the app's directory"},
		{"unknown func_code", "agent_class: Workflow\nname: w\nedges:\n  - [START, badfn.yaml]\n", "badfn.yaml", 3, "func_code", `no node named "clasify"`},
		{"node file typo", "agent_class: Workflow\nname: w\nedges:\n  - [START, typo.yaml]\n", "typo.yaml", 3, "funcode", "is not a known key"},
		{"handoff", "agent_class: Workflow\nname: w\nedges:\n  - [START, handoff.yaml]\n", "handoff.yaml", 4, "rerun_on_resume", "runs again with the answer"},
		{"unknown tool_code", "agent_class: Workflow\nname: w\nedges:\n  - [START, tool.yaml]\n", "tool.yaml", 3, "tool_code", `no tool named "nope"`},
		{"join with retries", "agent_class: Workflow\nname: w\nedges:\n  - [START, fn.yaml, join.yaml]\n", "join.yaml", 3, "retry_config", "is not a known key"},
		{"bad agent file", "agent_class: Workflow\nname: w\nedges:\n  - [START, agent.yaml]\n", "agent.yaml", 2, "instructions", "is not a known key"},
		{"backoff factor", "agent_class: Workflow\nname: w\nedges:\n  - [START, factor.yaml]\n", "factor.yaml", 4, "retry_config.backoff_factor", "the delay between attempts doubles"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			files["root_agent.yaml"] = c.yaml
			for name, text := range files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			app, err := agentconfig.Load(dir, &agentconfig.Options{Registry: graphRegistry(t), Model: func(string) (model.LLM, error) { return nil, errors.New("no models") }})
			if err == nil {
				app.Close()
				t.Fatal("loaded")
			}
			file := c.file
			if file == "" {
				file = "root_agent.yaml"
			}
			if !strings.Contains(err.Error(), c.msg) || !strings.Contains(err.Error(), file) {
				t.Errorf("error %q does not name %s and say %q", err, file, c.msg)
			}
			var ce *agentconfig.Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T %q is not an *agentconfig.Error", err, err)
			}
			if c.line != 0 && (ce.Line != c.line || ce.Field != c.field || filepath.Base(ce.File) != file) {
				t.Errorf("error at line %d field %q, want line %d field %q (%v)", ce.Line, ce.Field, c.line, c.field, err)
			}
		})
	}
}

// TestY5WorkflowAsAgentTool: an LLM agent's config names a Workflow file
// as an AgentTool; the workflow's question pauses the agent's call and the
// approval carrying the answer resumes the workflow once.
//
// (CONFORMANCE Y5)
func TestY5WorkflowAsAgentTool(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"root_agent.yaml": "name: assistant\nmodel: m\ninstruction: Help.\ntools:\n  - name: AgentTool\n    args:\n      agent: {config_path: flow.yaml}\n",
		"flow.yaml":       "agent_class: Workflow\nname: refund_flow\ndescription: Refunds an order once approved.\nedges:\n  - [START, ask]\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var settled int
	ask := graph.Func("ask", func(_ context.Context, nc *graph.Context, in string) (string, error) {
		resp, err := nc.RequestInput(graph.InputRequest{Message: "Refund " + in + "?"})
		if err != nil {
			return "", err
		}
		settled++
		return in, nc.Say("refunded " + in + ": " + fmt.Sprint(resp["response"]))
	})
	llm := func(name string) (model.LLM, error) {
		return scripted.New(name, func(_ context.Context, req *model.Request) (scripted.Turn, error) {
			if frs := scripted.LastFunctionResponse(req); len(frs) > 0 {
				return scripted.Text(fmt.Sprintf("tool said %v", frs[0].Response["result"])), nil
			}
			return scripted.Call("refund_flow", map[string]any{"request": "order 7"}), nil
		}), nil
	}
	app, err := agentconfig.Load(dir, &agentconfig.Options{Registry: agentconfig.NewRegistry().Node(ask), Model: llm})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	r, err := runner.New(runner.Config{AppName: "app", Agent: app.Root, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	events, err := r.RunSync(ctx, "u", "s", genai.NewContentFromText("refund order 7", genai.RoleUser), nil)
	if err != nil {
		t.Fatal(err)
	}
	var req *genai.FunctionCall
	for _, ev := range events {
		for _, fc := range ev.FunctionCalls() {
			if fc.Name == event.FunctionRequestConfirmation {
				req = fc
			}
		}
	}
	if req == nil {
		t.Fatal("the workflow's question did not pause the call")
	}
	answer := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: req.ID, Name: event.FunctionRequestConfirmation, Response: map[string]any{"confirmed": true, "payload": "yes"}}}}}
	events, err = r.RunSync(ctx, "u", "s", answer, nil)
	if err != nil {
		t.Fatal(err)
	}
	last := events[len(events)-1]
	if got := model.Text(last.Content, ""); got != "tool said refunded order 7: yes" {
		t.Errorf("final answer %q", got)
	}
	if settled != 1 {
		t.Errorf("the workflow settled %d times, want once", settled)
	}
}
