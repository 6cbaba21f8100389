package agentconfig_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/agentconfig"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/tool"
)

// TestT11ADKBuiltInTools loads ADK's ready-made tools by the names ADK's
// files give them and checks the request carries what ADK sends: the
// provider tools in config.tools, in the order listed, and ExampleTool's
// few-shot text after the identity (CONFORMANCE T11).
func TestT11ADKBuiltInTools(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "root_agent.yaml", `name: finder
model: m
instruction: Find things.
tools:
  - name: google_search
  - name: url_context
  - name: google_maps_grounding
  - name: enterprise_web_search
  - name: VertexAiSearchTool
    args:
      data_store_id: projects/p/locations/global/collections/default_collection/dataStores/ds
      max_results: 3
  - name: ExampleTool
    args:
      examples:
        - input:
            role: user
            parts:
              - text: "Weather in Paris?"
          output:
            - role: model
              parts:
                - function_call:
                    name: get_weather
                    args: {city_name: Paris, days: 2}
            - role: user
              parts:
                - function_response:
                    name: get_weather
                    response: {sky_state: sunny}
            - role: model
              parts:
                - text: "Sunny."
`)
	m := newModels(func(context.Context, *model.Request) (scripted.Turn, error) { return scripted.Text("ok"), nil })
	app, err := agentconfig.Load(dir, &agentconfig.Options{Model: m.open})
	if err != nil {
		t.Fatal(err)
	}
	run(t, app.Root, "Weather in Rome?")
	req := m.byName["m"].Requests()[0]
	got, _ := json.Marshal(req.Config.Tools)
	want := `[{"googleSearch":{}},{"urlContext":{}},{"googleMaps":{}},{"enterpriseWebSearch":{}},` +
		`{"retrieval":{"vertexAiSearch":{"datastore":"projects/p/locations/global/collections/default_collection/dataStores/ds","maxResults":3}}}]`
	if string(got) != want {
		t.Errorf("tools = %s\nwant    %s", got, want)
	}
	si := req.Config.SystemInstruction.Parts
	wantSI := "Find things.\n\nYou are an agent. Your internal name is \"finder\".\n\n" +
		"<EXAMPLES>\nBegin few-shot\nThe following are examples of user queries and model responses using the available tools.\n\n" +
		"EXAMPLE 1:\nBegin example\n[user]\nWeather in Paris?\n[model]\n```tool_code\nget_weather(city_name='Paris', days=2)\n```\n" +
		"[user]\n```tool_outputs\n{'id': None, 'name': 'get_weather', 'response': {'sky_state': 'sunny'}}\n```\n" +
		"[model]\nSunny.\nEnd example\n\nEnd few-shot\n<EXAMPLES>"
	if len(si) != 1 || si[0].Text != wantSI {
		t.Errorf("system instruction:\n got %q\nwant %q", si[0].Text, wantSI)
	}
}

// TestT11LongRunningFunctionTool wraps a registered tool as ADK's
// LongRunningFunctionTool: long-running, its description carrying ADK's
// note (CONFORMANCE T11).
func TestT11LongRunningFunctionTool(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "root_agent.yaml", "name: a\nmodel: m\ninstruction: Go.\ntools:\n  - name: LongRunningFunctionTool\n    args:\n      func: my.ask\n")
	reg := agentconfig.NewRegistry().Tool("my.ask", askTool{})
	m := newModels(func(context.Context, *model.Request) (scripted.Turn, error) { return scripted.Text("ok"), nil })
	app, err := agentconfig.Load(dir, &agentconfig.Options{Model: m.open, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	if lr, ok := app.Root.(*llmagent.Agent).Tools()[0].(tool.LongRunning); !ok || !lr.IsLongRunning() {
		t.Error("the tool is not long-running")
	}
	run(t, app.Root, "hi")
	d := m.byName["m"].Requests()[0].Config.Tools[0].FunctionDeclarations[0]
	want := "Ask for approval.\n\nNOTE: This is a long-running operation. Do not call this tool again if it has already returned some intermediate or pending status."
	if d.Name != "ask" || d.Description != want {
		t.Errorf("declaration = %q %q", d.Name, d.Description)
	}

	// An unregistered function is an error naming it.
	write(t, dir, "root_agent.yaml", "name: a\nmodel: m\ninstruction: Go.\ntools:\n  - name: LongRunningFunctionTool\n    args:\n      func: my.missing\n")
	if _, err := agentconfig.Load(filepath.Join(dir, "root_agent.yaml"), &agentconfig.Options{Model: m.open, Registry: reg}); err == nil || !strings.Contains(err.Error(), `"my.missing"`) {
		t.Errorf("err = %v", err)
	}
	// A Vertex AI Search tool needs exactly one of a data store and an engine.
	write(t, dir, "root_agent.yaml", "name: a\nmodel: m\ninstruction: Go.\ntools:\n  - name: VertexAiSearchTool\n    args: {}\n")
	if _, err := agentconfig.Load(dir, &agentconfig.Options{Model: m.open}); err == nil || !strings.Contains(err.Error(), "exactly one") {
		t.Errorf("err = %v", err)
	}
}

type askTool struct{}

func (askTool) Name() string        { return "ask" }
func (askTool) Description() string { return "Ask for approval." }
func (askTool) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{Name: "ask", Description: "Ask for approval."}
}
func (askTool) Run(context.Context, tool.Context, map[string]any) (map[string]any, error) {
	return map[string]any{"status": "pending"}, nil
}
