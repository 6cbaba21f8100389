package task_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/agent/task"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
)

func run(t *testing.T, r *runner.Runner, msg string) []*event.Event {
	t.Helper()
	var out []*event.Event
	for ev, err := range r.Run(context.Background(), "u", "s1", genai.NewContentFromText(msg, genai.RoleUser), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if !ev.Partial {
			out = append(out, ev)
		}
	}
	return out
}

func newRunner(t *testing.T, root agent.Agent) *runner.Runner {
	t.Helper()
	r, err := runner.New(runner.Config{AppName: "app", Agent: root, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func state(t *testing.T, r *runner.Runner, key string) any {
	t.Helper()
	s, err := r.Sessions().Get(context.Background(), sessionKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := s.Get(key)
	return v
}

// TestSingleTurnStructured: the coordinator delegates with structured
// input; the delegate, with an output schema, answers once in JSON, and the
// coordinator gets the parsed output as the tool's result.
// (CONFORMANCE A13)
func TestSingleTurnStructured(t *testing.T) {
	dm := scripted.NewSequence("dm", scripted.Text(`{"city":"Paris","population":2100000}`)).Recording()
	delegate, err := llmagent.New(llmagent.Config{Name: "geo", Description: "Knows cities.", Model: dm,
		OutputSchema: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
			"city": {Type: "string"}, "population": {Type: "integer"}}, Required: []string{"city"}}})
	if err != nil {
		t.Fatal(err)
	}
	input := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"country": {Type: "string"}}, Required: []string{"country"}}
	geo, err := task.NewTool(delegate, task.Config{InputSchema: input})
	if err != nil {
		t.Fatal(err)
	}
	cm := scripted.NewSequence("cm", scripted.Call("geo", map[string]any{"country": "France"}), scripted.Text("The capital is Paris.")).Recording()
	coord, err := llmagent.New(llmagent.Config{Name: "coordinator", Model: cm, Tools: []tool.Tool{geo}})
	if err != nil {
		t.Fatal(err)
	}
	r := newRunner(t, coord)
	evs := run(t, r, "capital of France?")
	var resp map[string]any
	for _, ev := range evs {
		for _, fr := range ev.FunctionResponses() {
			if fr.Name == "geo" {
				resp = fr.Response
			}
		}
	}
	want := map[string]any{"city": "Paris", "population": 2100000.0}
	if !reflect.DeepEqual(resp["output"], want) {
		t.Fatalf("tool result %v, want output %v", resp, want)
	}
	if got := dm.Requests()[0].Contents; !strings.Contains(got[len(got)-1].Parts[0].Text, `"country":"France"`) {
		t.Errorf("the delegate did not get the structured input: %v", got[len(got)-1].Parts[0].Text)
	}
	if !reflect.DeepEqual(state(t, r, task.OutputKey("geo")), want) {
		t.Errorf("output state = %v", state(t, r, task.OutputKey("geo")))
	}
	// Bad input is refused before the delegate runs.
	if _, err := geo.Run(context.Background(), nil, map[string]any{"country": 3}); err == nil {
		t.Error("input against the schema accepted")
	}
}

// TestMultiTurnTask: the coordinator hands a task to the delegate, which
// asks the user a question (human input inside the task), gets the answer
// on the next turn, finishes with structured output, and hands back to the
// coordinator, whose model sees the output.
// (CONFORMANCE A13)
func TestMultiTurnTask(t *testing.T) {
	finish, err := task.NewFinishTool(&jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"city": {Type: "string"}}, Required: []string{"city"}})
	if err != nil {
		t.Fatal(err)
	}
	dm := scripted.NewSequence("dm",
		scripted.Text("Which country do you mean?"),
		scripted.Call(task.FinishTaskName, map[string]any{"city": "Paris"}))
	delegate, err := llmagent.New(llmagent.Config{Name: "researcher", Description: "Finds cities.", Model: dm,
		Instruction: "Work on: {task_researcher_input?}", Tools: []tool.Tool{finish}})
	if err != nil {
		t.Fatal(err)
	}
	researcher, err := task.NewTool(delegate, task.Config{Mode: task.MultiTurn})
	if err != nil {
		t.Fatal(err)
	}
	cm := scripted.NewSequence("cm", scripted.Call("researcher", map[string]any{"goal": "find the capital"}), scripted.Text("Your city is Paris.")).Recording()
	coord, err := llmagent.New(llmagent.Config{Name: "coordinator", Model: cm, Tools: []tool.Tool{researcher}, SubAgents: []agent.Agent{delegate}})
	if err != nil {
		t.Fatal(err)
	}
	r := newRunner(t, coord)

	evs := run(t, r, "find me a capital")
	if last := evs[len(evs)-1]; last.Author != "researcher" || last.Text() != "Which country do you mean?" {
		t.Fatalf("first turn ended with %s: %q", last.Author, last.Text())
	}
	if in, _ := state(t, r, task.InputKey("researcher")).(map[string]any); in["goal"] != "find the capital" {
		t.Errorf("task input state = %v", in)
	}
	evs = run(t, r, "France")
	if last := evs[len(evs)-1]; last.Author != "coordinator" || last.Text() != "Your city is Paris." {
		t.Fatalf("second turn ended with %s: %q", last.Author, last.Text())
	}
	if out, _ := state(t, r, task.OutputKey("researcher")).(map[string]any); out["city"] != "Paris" {
		t.Errorf("task output state = %v", out)
	}
	if v := state(t, r, task.InputKey("researcher")); v != nil {
		t.Errorf("task input still set: %v", v)
	}
	reqs := cm.Requests()
	seen := ""
	for _, c := range reqs[len(reqs)-1].Contents {
		for _, p := range c.Parts {
			seen += p.Text
			if p.FunctionResponse != nil {
				seen += p.FunctionResponse.Name
			}
		}
	}
	if !strings.Contains(seen, "Paris") {
		t.Errorf("the coordinator's model did not see the task output: %q", seen)
	}
}

// TestTaskAgentAsWorkflowNode: a delegate that finishes with finish_task,
// as a workflow node, outputs the call's arguments.
// (CONFORMANCE A13)
func TestTaskAgentAsWorkflowNode(t *testing.T) {
	finish, err := task.NewFinishTool(nil)
	if err != nil {
		t.Fatal(err)
	}
	dm := scripted.NewSequence("dm", scripted.Call(task.FinishTaskName, map[string]any{"result": "drafted"}), scripted.Text("done"))
	delegate, err := llmagent.New(llmagent.Config{Name: "drafter", Model: dm, Tools: []tool.Tool{finish}})
	if err != nil {
		t.Fatal(err)
	}
	wf, err := graph.New(graph.Config{Name: "wf", Nodes: []*graph.Node{graph.FromAgent(delegate),
		graph.Func("after", func(_ context.Context, _ *graph.Context, in map[string]string) (string, error) {
			return "got " + in["result"], nil
		})}, Edges: []graph.Edge{{From: "drafter", To: "after"}}})
	if err != nil {
		t.Fatal(err)
	}
	evs := run(t, newRunner(t, wf), "draft it")
	var out any
	for _, ev := range evs {
		if ev.Author == "wf" && ev.Actions.EndOfAgent {
			out = ev.Output
		}
	}
	if out != "got drafted" {
		t.Errorf("workflow output %v", out)
	}
}

var sessionKey = sessionKeyOf("app", "u", "s1")
