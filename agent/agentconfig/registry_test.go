package agentconfig_test

import (
	"context"
	"iter"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/agentconfig"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// TestExtensionPoints registers an agent class and a tool kind of its own
// and loads a file using both: the class's schema checks its keys, the
// kind's args are validated and decoded, and sub-agents by code come from
// the registry.
func TestExtensionPoints(t *testing.T) {
	greeter := agentconfig.ToolKind{
		Args: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"greeting": {Type: "string"}},
			Required: []string{"greeting"}, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}},
		New: func(spec *agentconfig.ToolSpec) (tool.Tool, tool.Toolset, error) {
			var args struct{ Greeting string }
			if err := spec.Decode(&args); err != nil {
				return nil, nil, err
			}
			tl, err := functiontool.New(functiontool.Config{Name: "greet", Description: "Greets."},
				func(context.Context, tool.Context, struct{}) (map[string]string, error) {
					return map[string]string{"text": args.Greeting}, nil
				})
			return tl, nil, err
		},
	}
	say := agentconfig.AgentClass{
		Schema: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
			"agent_class": {Type: "string"}, "name": {Type: "string"}, "text": {Type: "string"},
			"sub_agents": {Type: "array"},
		}, Required: []string{"name", "text"}, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}},
		New: func(spec *agentconfig.Spec) (agent.Agent, error) {
			var text string
			if _, err := spec.Decode("text", &text); err != nil {
				return nil, err
			}
			subs, err := spec.SubAgents()
			if err != nil {
				return nil, err
			}
			return agent.New(agent.Config{Name: spec.Name(), SubAgents: subs, Run: func(_ context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
				return func(yield func(*event.Event, error) bool) {
					ev := event.New(inv.ID(), spec.Name())
					ev.Content = genai.NewContentFromText(text, genai.RoleModel)
					yield(ev, nil)
				}
			}})
		},
	}
	reg := agentconfig.NewRegistry().ToolKind("Greeter", greeter).AgentClass("SayAgent", say).
		Agent("agents.helper", func() (agent.Agent, error) {
			return agent.New(agent.Config{Name: "helper", Run: func(context.Context, *agent.Invocation) iter.Seq2[*event.Event, error] {
				return func(func(*event.Event, error) bool) {}
			}})
		})
	dir := t.TempDir()
	write(t, dir, "root_agent.yaml", "agent_class: SayAgent\nname: sayer\ntext: hi there\nsub_agents:\n  - config_path: llm.yaml\n  - code: agents.helper\n")
	write(t, dir, "llm.yaml", "name: llm\ninstruction: x\ntools:\n  - name: Greeter\n    args: {greeting: hello}\n")
	m := newModels(echo)
	app, err := agentconfig.Load(dir, &agentconfig.Options{Registry: reg, Model: m.open})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if got := texts(run(t, app.Root, "go")); len(got) != 1 || got[0] != "sayer> hi there" {
		t.Errorf("texts = %q", got)
	}
	subs := agent.SubAgents(app.Root)
	if len(subs) != 2 || subs[0].Name() != "llm" || subs[1].Name() != "helper" {
		t.Fatalf("sub-agents = %v", subs)
	}
	tools := subs[0].(interface{ Tools() []tool.Tool }).Tools()
	if len(tools) != 1 || tools[0].Name() != "greet" {
		t.Errorf("tools = %v", tools)
	}

	// The kind's args and the class's keys are checked.
	write(t, dir, "llm.yaml", "name: llm\ninstruction: x\ntools:\n  - name: Greeter\n    args: {greting: hello}\n")
	if _, err := agentconfig.Load(dir, &agentconfig.Options{Registry: reg, Model: m.open}); err == nil || !strings.Contains(err.Error(), "llm.yaml:5:12: tools[0].args.greting: is not a known key") {
		t.Errorf("bad args: %v", err)
	}
	write(t, dir, "root_agent.yaml", "agent_class: SayAgent\nname: sayer\n")
	if _, err := agentconfig.Load(dir, &agentconfig.Options{Registry: reg, Model: m.open}); err == nil || !strings.Contains(err.Error(), "missing the required key text") {
		t.Errorf("missing key: %v", err)
	}
}
