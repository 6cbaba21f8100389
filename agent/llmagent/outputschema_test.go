package llmagent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/tool"
)

var citySchema = &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
	"city": {Type: "string"}, "population": {Type: "integer"}}, Required: []string{"city", "population"}}

func lookupTool() tool.Tool {
	return fnTool{name: "lookup", run: func(context.Context, tool.Context, map[string]any) (map[string]any, error) {
		return map[string]any{"population": 2100000}, nil
	}}
}

// combining is a scripted model that takes tools and a schema together.
type combining struct{ *scripted.Model }

func (combining) ToolsWithSchema() bool { return true }

// TestOutputSchemaWithTools checks that an agent with tools and an output
// schema, on a model that cannot combine them, offers set_model_response
// instead of the response schema; that an invalid answer is returned to the
// model as an error; and that a valid one ends the agent with a model event
// holding the JSON answer, stored under the output key.
func TestOutputSchemaWithTools(t *testing.T) {
	m := scripted.NewSequence("m",
		scripted.Turn{Calls: []*genai.FunctionCall{{Name: "lookup", Args: map[string]any{}}}},
		scripted.Turn{Calls: []*genai.FunctionCall{{Name: llmagent.SetModelResponseName, Args: map[string]any{"city": "Paris"}}}},
		scripted.Turn{Calls: []*genai.FunctionCall{{Name: llmagent.SetModelResponseName, Args: map[string]any{"city": "Paris", "population": 2100000}}}},
	)
	a := mustAgent(t, llmagent.Config{Name: "a", Model: m, OutputSchema: citySchema, OutputKey: "out", Tools: []tool.Tool{lookupTool()}})
	f := newFixture(t, a, nil, nil)
	evs := f.run(t, "Paris?", nil)

	req := m.Requests()[0]
	if req.Config.ResponseJsonSchema != nil || req.Config.ResponseMIMEType != "" {
		t.Error("the response schema was sent with tools")
	}
	var names []string
	for _, d := range req.Config.Tools[0].FunctionDeclarations {
		names = append(names, d.Name)
	}
	if strings.Join(names, ",") != "set_model_response,lookup" { // the runtime's tool first, as ADK lists it
		t.Errorf("tools = %v", names)
	}
	if sys := strings.Join(systemTexts(req), "\n"); !strings.Contains(sys, llmagent.SetModelResponseName) {
		t.Errorf("no final-answer instruction in %q", sys)
	}
	if len(m.Requests()) != 3 {
		t.Fatalf("%d model calls, want 3 (the invalid answer retried)", len(m.Requests()))
	}
	invalid := evs[3].Content.Parts[0].FunctionResponse
	if invalid == nil || invalid.Response["error"] == nil {
		t.Errorf("invalid answer response = %+v", evs[3].Content.Parts[0])
	}
	last := evs[len(evs)-1]
	if last.Author != "a" || last.Content.Role != genai.RoleModel || last.Text() != `{"city":"Paris","population":2100000}` {
		t.Fatalf("final event = %s %q", last.Author, last.Text())
	}
	if v, _ := f.session(t).Get("out"); v.(map[string]any)["city"] != "Paris" {
		t.Errorf("output key = %v", v)
	}
}

// TestOutputSchemaWithToolsCombined checks that a model that combines tools
// and a schema gets the schema and no final-answer tool.
func TestOutputSchemaWithToolsCombined(t *testing.T) {
	m := combining{scripted.NewSequence("m", scripted.Turn{Text: `{"city":"Paris","population":1}`})}
	a := mustAgent(t, llmagent.Config{Name: "a", Model: m, OutputSchema: citySchema, Tools: []tool.Tool{lookupTool()}})
	newFixture(t, a, nil, nil).run(t, "Paris?", nil)
	req := m.Requests()[0]
	if req.Config.ResponseJsonSchema == nil || len(req.Config.Tools[0].FunctionDeclarations) != 1 {
		t.Errorf("schema %v, tools %d", req.Config.ResponseJsonSchema, len(req.Config.Tools[0].FunctionDeclarations))
	}
}

// TestOutputSchemaNonObject checks that a schema that is not an object is
// wrapped in a result property, and the final answer is the bare value.
func TestOutputSchemaNonObject(t *testing.T) {
	m := scripted.NewSequence("m",
		scripted.Turn{Calls: []*genai.FunctionCall{{Name: llmagent.SetModelResponseName, Args: map[string]any{"result": []any{"a", "b"}}}}})
	a := mustAgent(t, llmagent.Config{Name: "a", Model: m, OutputSchema: &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Type: "string"}},
		Tools: []tool.Tool{lookupTool()}})
	evs := newFixture(t, a, nil, nil).run(t, "list", nil)
	if got := evs[len(evs)-1].Text(); got != `["a","b"]` {
		t.Fatalf("final = %q", got)
	}
}
