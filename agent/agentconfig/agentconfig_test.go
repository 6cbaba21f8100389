package agentconfig_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/agentconfig"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/agent/workflowagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// models hands out one recording scripted model per name asked for,
// answering with respond.
type models struct {
	mu      sync.Mutex
	asked   []string
	respond scripted.Responder
	byName  map[string]*scripted.Model
}

func newModels(respond scripted.Responder) *models {
	return &models{respond: respond, byName: map[string]*scripted.Model{}}
}

func (m *models) open(name string) (model.LLM, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked = append(m.asked, name)
	if m.byName[name] == nil {
		m.byName[name] = scripted.New(name, m.respond).Recording()
	}
	return m.byName[name], nil
}

// echo answers "<agent>: <user text>", naming the agent from the system
// instruction's first word-free marker: the agent name is not in the
// request, so the instruction is echoed instead.
func echo(_ context.Context, req *model.Request) (scripted.Turn, error) {
	return scripted.Text("echo: " + scripted.LastUserText(req)), nil
}

func load(t *testing.T, dir string, opts *agentconfig.Options) *agentconfig.App {
	t.Helper()
	app, err := agentconfig.Load(filepath.Join("testdata", dir), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	return app
}

func run(t *testing.T, root agent.Agent, text string) []*event.Event {
	t.Helper()
	r, err := runner.New(runner.Config{AppName: "app", Agent: root, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	events, err := r.RunSync(context.Background(), "u", "s", genai.NewContentFromText(text, genai.RoleUser), nil)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func texts(events []*event.Event) []string {
	var out []string
	for _, ev := range events {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.Text != "" {
				out = append(out, ev.Author+"> "+p.Text)
			}
		}
	}
	return out
}

// (CONFORMANCE Y1)
func TestSingleAgent(t *testing.T) {
	m := newModels(echo)
	app := load(t, "single", &agentconfig.Options{Model: m.open})
	a, ok := app.Root.(*llmagent.Agent)
	if !ok {
		t.Fatalf("root is %T", app.Root)
	}
	if a.Name() != "assistant" || a.Description() != "A helpful assistant for user questions." {
		t.Errorf("name %q description %q", a.Name(), a.Description())
	}
	if want := []string{"gemini-2.5-flash"}; !slices.Equal(m.asked, want) {
		t.Errorf("models asked for %v, want %v", m.asked, want)
	}
	if len(app.Files) != 1 || filepath.Base(app.Files[0]) != "root_agent.yaml" {
		t.Errorf("files = %v", app.Files)
	}
	events := run(t, app.Root, "hello")
	if got := texts(events); !slices.Equal(got, []string{"assistant> echo: hello"}) {
		t.Errorf("texts = %q", got)
	}
	if got := events[len(events)-1].Actions.StateDelta["last_answer"]; got != "echo: hello" {
		t.Errorf("output_key stored %v", got)
	}
	req := m.byName["gemini-2.5-flash"].Requests()[0]
	c := req.Config
	if c.Temperature == nil || *c.Temperature != 0.2 || c.MaxOutputTokens != 256 || !slices.Equal(c.StopSequences, []string{"END"}) {
		t.Errorf("generate config = %+v", c)
	}
	if !strings.Contains(c.SystemInstruction.Parts[0].Text, "Answer user questions") {
		t.Errorf("instruction = %q", c.SystemInstruction.Parts[0].Text)
	}
}

func TestMultiAgentConfigPaths(t *testing.T) {
	m := newModels(func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if strings.Contains(instruction(req), "math tutor") {
			return scripted.Text("x²/2"), nil
		}
		return scripted.Call("transfer_to_agent", map[string]any{"agent_name": "math_tutor_agent"}), nil
	})
	app := load(t, "multi", &agentconfig.Options{Model: m.open})
	subs := agent.SubAgents(app.Root)
	if len(subs) != 2 || subs[0].Name() != "code_tutor_agent" || subs[1].Name() != "math_tutor_agent" {
		t.Fatalf("sub-agents = %v", subs)
	}
	// The code tutor inherits the root's model; the math tutor names its own.
	if got := subs[0].(*llmagent.Agent).Model().Name(); got != "gemini-2.5-flash" {
		t.Errorf("code tutor model = %s", got)
	}
	if got := subs[1].(*llmagent.Agent).Model().Name(); got != "other-model" {
		t.Errorf("math tutor model = %s", got)
	}
	if len(app.Files) != 3 {
		t.Errorf("files = %v", app.Files)
	}
	got := texts(run(t, app.Root, "what is the integral of x?"))
	if !slices.Equal(got, []string{"math_tutor_agent> x²/2"}) {
		t.Errorf("texts = %q", got)
	}
}

func instruction(req *model.Request) string {
	if req.Config == nil || req.Config.SystemInstruction == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range req.Config.SystemInstruction.Parts {
		b.WriteString(p.Text)
	}
	// The agent's own instruction: what precedes the identity line every
	// request carries.
	own, _, _ := strings.Cut(b.String(), "\n\nYou are an agent. Your internal name is ")
	return own
}

// (CONFORMANCE Y1)
func TestSequential(t *testing.T) {
	m := newModels(func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if strings.Contains(instruction(req), "Review this code") {
			return scripted.Text("reviewed: " + strings.TrimSpace(strings.TrimPrefix(instruction(req), "Review this code:"))), nil
		}
		return scripted.Text("print('hi')"), nil
	})
	app := load(t, "sequential", &agentconfig.Options{Model: m.open})
	if _, ok := app.Root.(*workflowagent.Sequential); !ok {
		t.Fatalf("root is %T", app.Root)
	}
	got := texts(run(t, app.Root, "write hello world"))
	want := []string{"CodeWriterAgent> print('hi')", "CodeReviewerAgent> reviewed: print('hi')"}
	if len(got) != 2 || got[0] != want[0] || !strings.HasPrefix(got[1], want[1]) {
		t.Errorf("texts = %q, want %q", got, want)
	}
}

func TestParallelInlineSubAgents(t *testing.T) {
	m := newModels(func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		return scripted.Text("done: " + instruction(req)), nil
	})
	app := load(t, "parallel", &agentconfig.Options{Model: m.open})
	if _, ok := app.Root.(*workflowagent.Parallel); !ok {
		t.Fatalf("root is %T", app.Root)
	}
	got := texts(run(t, app.Root, "go"))
	slices.Sort(got)
	want := []string{"energy> done: Research renewable energy.", "transport> done: Research electric transport."}
	if !slices.Equal(got, want) {
		t.Errorf("texts = %q, want %q", got, want)
	}
}

func TestLoop(t *testing.T) {
	calls := 0
	var mu sync.Mutex
	m := newModels(func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 3 {
			return scripted.Call("exit_loop", nil), nil
		}
		return scripted.Text(fmt.Sprintf("critique %d", calls)), nil
	})
	app := load(t, "loop", &agentconfig.Options{Model: m.open})
	l, ok := app.Root.(*workflowagent.Loop)
	if !ok || l.MaxIterations() != 5 {
		t.Fatalf("root is %T", app.Root)
	}
	got := texts(run(t, app.Root, "draft"))
	if want := []string{"critic> critique 1", "critic> critique 2"}; !slices.Equal(got, want) {
		t.Errorf("texts = %q, want %q", got, want)
	}
	if calls != 3 {
		t.Errorf("model calls = %d, want 3 (the loop ends at exit_loop)", calls)
	}
}

// (CONFORMANCE Y1)
func TestToolsAndCallbacksByName(t *testing.T) {
	type args struct {
		City string `json:"city"`
	}
	lookup, err := functiontool.New(functiontool.Config{Name: "lookup", Description: "Looks the weather up."},
		func(_ context.Context, _ tool.Context, a args) (map[string]any, error) {
			return map[string]any{"forecast": "sunny in " + a.City}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	var tagged, done int
	reg := agentconfig.NewRegistry().
		Tool("weather.lookup", lookup).
		Callback("callbacks.tag_request", agent.BeforeModelCallback(func(context.Context, *agent.CallbackContext, *model.Request) (*model.Response, error) {
			tagged++
			return nil, nil
		})).
		Callback("callbacks.note_done", func(context.Context, *agent.CallbackContext) (*genai.Content, error) {
			done++
			return nil, nil
		})
	m := newModels(func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if fr := scripted.LastFunctionResponse(req); len(fr) > 0 {
			return scripted.Text(fmt.Sprint(fr[0].Response["forecast"])), nil
		}
		return scripted.Call("lookup", map[string]any{"city": "Oslo"}), nil
	})
	app := load(t, "tools", &agentconfig.Options{Registry: reg, Model: m.open})
	a := app.Root.(*llmagent.Agent)
	var names []string
	for _, tl := range a.Tools() {
		names = append(names, tl.Name())
	}
	if want := []string{"lookup", "load_memory", "summarizer"}; !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
	got := texts(run(t, app.Root, "weather?"))
	if !slices.Equal(got, []string{"weather_agent> sunny in Oslo"}) {
		t.Errorf("texts = %q", got)
	}
	if tagged != 2 || done != 1 {
		t.Errorf("callbacks ran %d (before model), %d (after agent); want 2, 1", tagged, done)
	}
}

// TestErrors checks that bad files are refused with errors naming the file,
// line and field.
//
// (CONFORMANCE Y2)
func TestErrors(t *testing.T) {
	reg := agentconfig.NewRegistry().Callback("cb.model", agent.BeforeModelCallback(nil))
	reg.Callback("cb.agent", func(context.Context, *agent.CallbackContext) (*genai.Content, error) { return nil, nil })
	cases := []struct {
		name, yaml string
		line       int
		field, msg string
	}{
		{"unknown key", "name: a\ninstruction: x\nmodle: m\n", 3, "modle", "is not a known key"},
		{"missing name", "instruction: x\n", 1, "", "missing the required key name"},
		{"missing instruction", "name: a\n", 1, "", "missing the required key instruction"},
		{"wrong type", "name: a\ninstruction: x\ndisallow_transfer_to_parent: maybe\n", 3, "disallow_transfer_to_parent", "is a string, want boolean"},
		{"bad enum", "name: a\ninstruction: x\ninclude_contents: some\n", 3, "include_contents", "want one of"},
		{"unknown class", "agent_class: GraphAgent\nname: a\n", 1, "agent_class", `no agent class named "GraphAgent"`},
		{"unknown tool", "name: a\ninstruction: x\ntools:\n  - name: google_serch\n", 4, "tools[0].name", `no tool named "google_serch"`},
		{"tool key typo", "name: a\ninstruction: x\ntools:\n  - nmae: exit_loop\n", 4, "tools[0].nmae", "is not a known key"},
		{"mcp without connection", "name: a\ninstruction: x\ntools:\n  - name: McpToolset\n    args:\n      tool_filter: [echo]\n", 6, "tools[0].args", "set exactly one of"},
		{"mcp bad key", "name: a\ninstruction: x\ntools:\n  - name: MCPToolset\n    args:\n      stdio_server_params:\n        comand: npx\n", 7, "tools[0].args.stdio_server_params.comand", "is not a known key"},
		{"mcp sse", "name: a\ninstruction: x\ntools:\n  - name: McpToolset\n    args:\n      sse_connection_params:\n        url: http://x\n", 6, "tools[0].args.sse_connection_params", "is not supported"},
		{"unsupported key", "name: a\ninstruction: x\nstatic_instruction: hi\n", 3, "static_instruction", "is not supported"},
		{"loop iterations", "agent_class: LoopAgent\nname: l\nmax_iterations: -1\n", 3, "max_iterations", "below the minimum 0"},
		{"sub-agent outside", "name: a\ninstruction: x\nsub_agents:\n  - config_path: ../single/root_agent.yaml\n", 4, "sub_agents[0].config_path", "outside the app's directory"},
		{"sub-agent absolute", "name: a\ninstruction: x\nsub_agents:\n  - config_path: /etc/passwd\n", 4, "sub_agents[0].config_path", "must be a path relative"},
		{"sub-agent missing", "name: a\ninstruction: x\nsub_agents:\n  - config_path: nope.yaml\n", 4, "sub_agents[0].config_path", "no such file"},
		{"inline sub-agent bad", "agent_class: SequentialAgent\nname: s\nsub_agents:\n  - name: b\n    instructions: x\n", 5, "sub_agents[0].instructions", "is not a known key"},
		{"callback of the wrong kind", "name: a\ninstruction: x\nbefore_agent_callbacks:\n  - name: cb.model\n", 4, "before_agent_callbacks[0]", "before_agent_callbacks takes agent.BeforeAgentCallback"},
		{"unknown callback", "name: a\ninstruction: x\nafter_model_callbacks:\n  - name: cb.nope\n", 4, "after_model_callbacks[0]", `no callback named "cb.nope"`},
		{"generate config key", "name: a\ninstruction: x\ngenerate_content_config:\n  temprature: 1\n", 4, "generate_content_config.temprature", "not a key of generate_content_config"},
		{"generate config tools", "name: a\ninstruction: x\ngenerate_content_config:\n  tools: []\n", 4, "generate_content_config.tools", "set by the agent's tools key"},
		{"alias", "name: &n a\ninstruction: *n\n", 1, "", "anchors and aliases"},
		{"not a mapping", "- a\n", 1, "", "want an object"},
		{"duplicate agent", "agent_class: SequentialAgent\nname: s\nsub_agents:\n  - {name: b, instruction: x}\n  - {name: b, instruction: y}\n", 0, "", "duplicate"},
		{"sub-agent ref typo", "agent_class: SequentialAgent\nname: s\nsub_agents:\n  - config_pth: b.yaml\n", 4, "sub_agents[0].config_pth", "is not a known key (known: code, config_path)"},
		{"sub-agent empty ref", "agent_class: SequentialAgent\nname: s\nsub_agents:\n  - {}\n", 4, "sub_agents[0]", "needs config_path, code, or an inline config"},
		{"yaml syntax", "name: [a\n", 0, "", "yaml"},
		{"output schema", "name: a\ninstruction: x\noutput_schema:\n  name: schemas.Nope\n", 4, "output_schema", `no schema named "schemas.Nope"`},
		{"second document", "name: a\ninstruction: x\n---\nname: b\ninstruction: y\n", 3, "", "holds more than one YAML document"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "root_agent.yaml")
			if err := os.WriteFile(file, []byte(c.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			m := newModels(echo)
			app, err := agentconfig.Load(dir, &agentconfig.Options{Registry: reg, Model: m.open})
			if err == nil {
				app.Close()
				t.Fatal("loaded")
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not say %q", err, c.msg)
			}
			if !strings.Contains(err.Error(), "root_agent.yaml") {
				t.Errorf("error %q does not name the file", err)
			}
			if c.line == 0 {
				return
			}
			var ce *agentconfig.Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T %q is not an *agentconfig.Error", err, err)
			}
			if ce.Line != c.line || ce.Field != c.field {
				t.Errorf("error at line %d field %q, want line %d field %q (%v)", ce.Line, ce.Field, c.line, c.field, err)
			}
		})
	}
}

// TestCycle refuses config files that include each other.
//
// (CONFORMANCE Y2)
func TestCycle(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "root_agent.yaml", "agent_class: SequentialAgent\nname: a\nsub_agents:\n  - config_path: b.yaml\n")
	write(t, dir, "b.yaml", "agent_class: SequentialAgent\nname: b\nsub_agents:\n  - config_path: root_agent.yaml\n")
	_, err := agentconfig.Load(dir, nil)
	if err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("err = %v", err)
	}
}

// TestConfigFileReadsAreBounded refuses an app whose config files
// reference each other so that the tree doubles at every file: 13 small
// files would build 2^12 copies of the last one. The load stops at the
// bound, naming the file and key, instead of running for minutes.
//
// (CONFORMANCE Y2)
func TestConfigFileReadsAreBounded(t *testing.T) {
	dir := t.TempDir()
	const n = 12
	write(t, dir, "root_agent.yaml", "agent_class: SequentialAgent\nname: r\nsub_agents:\n  - config_path: a0.yaml\n")
	for i := range n {
		write(t, dir, fmt.Sprintf("a%d.yaml", i), fmt.Sprintf("agent_class: SequentialAgent\nname: a%d\nsub_agents:\n"+
			"  - {name: b%d, agent_class: SequentialAgent, sub_agents: [{config_path: a%d.yaml}]}\n"+
			"  - {name: c%d, agent_class: SequentialAgent, sub_agents: [{config_path: a%d.yaml}]}\n", i, i, i+1, i, i+1))
	}
	write(t, dir, fmt.Sprintf("a%d.yaml", n), "agent_class: SequentialAgent\nname: leaf\n")
	_, err := agentconfig.Load(dir, nil)
	var ce *agentconfig.Error
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "more than 1000 config files") {
		t.Fatalf("err = %v, want an *agentconfig.Error about the number of config files", err)
	}
	if !strings.HasSuffix(ce.Field, "config_path") || !strings.HasPrefix(filepath.Base(ce.File), "a") {
		t.Errorf("error at %s field %q, want a config_path key of a sub-agent file", ce.File, ce.Field)
	}
}

func write(t *testing.T, dir, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSchemaIsValid checks that the published schema resolves and accepts
// the test apps' root files.
//
// (CONFORMANCE Y1)
func TestSchemaIsValid(t *testing.T) {
	for _, def := range []string{"LlmAgentConfig", "BaseAgentConfig", "LoopAgentConfig", "McpToolsetArgs", "AgentToolArgs", "AdvisorToolArgs"} {
		if _, err := agentconfig.Def(def).Resolve(nil); err != nil {
			t.Errorf("%s: %v", def, err)
		}
	}
	if len(agentconfig.Schema()) == 0 {
		t.Error("empty schema")
	}
}
