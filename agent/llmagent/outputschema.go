package llmagent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/tool"
)

// SetModelResponseName is the name of the final-answer tool an agent with
// both tools and an output schema gives a model that cannot combine them
// in one request.
const SetModelResponseName = "set_model_response"

// combinesToolsAndSchema reports whether m takes function tools and a
// response schema in one request.
func combinesToolsAndSchema(m model.LLM) bool {
	c, ok := m.(model.ToolsWithSchema)
	return ok && c.ToolsWithSchema()
}

// setModelResponseTool receives the agent's structured final answer as
// its arguments. Values that are not objects are wrapped in a "result"
// property, since function arguments are always an object.
type setModelResponseTool struct {
	schema  *jsonschema.Resolved
	params  *jsonschema.Schema
	wrapped bool
}

func newSetModelResponseTool(s *jsonschema.Schema, r *jsonschema.Resolved) *setModelResponseTool {
	if s.Type == "object" {
		return &setModelResponseTool{schema: r, params: s}
	}
	params := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"result": s}, Required: []string{"result"}}
	return &setModelResponseTool{schema: r, params: params, wrapped: true}
}

func (*setModelResponseTool) Name() string { return SetModelResponseName }

func (*setModelResponseTool) Description() string {
	return "Gives your final answer in the required structured format. Call it once, when you are done, instead of answering in text."
}

func (t *setModelResponseTool) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{Name: SetModelResponseName, Description: t.Description(), ParametersJsonSchema: t.params}
}

// Run validates the answer; an invalid one is an error the model reads
// and can correct.
func (t *setModelResponseTool) Run(_ context.Context, _ tool.Context, args map[string]any) (map[string]any, error) {
	v := t.value(args)
	// Validate a JSON round trip, so values have JSON's types.
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("the answer is not JSON: %w", err)
	}
	var generic any
	if err := json.Unmarshal(b, &generic); err != nil {
		return nil, fmt.Errorf("the answer is not JSON: %w", err)
	}
	if err := t.schema.Validate(generic); err != nil {
		return nil, fmt.Errorf("the answer does not match the required format: %w", err)
	}
	return args, nil
}

func (t *setModelResponseTool) value(args map[string]any) any {
	if t.wrapped {
		return args["result"]
	}
	return args
}

const setModelResponseInstruction = "When you have the final answer, you must give it by calling the tool `" + SetModelResponseName +
	"` with the answer as its arguments, in the required structured format. Use the other tools as needed before that; " +
	"do not answer in plain text."

// structuredAnswer returns the final event holding the answer given
// through the final-answer tool in resEv, or nil if resEv has none (or
// only a failed call).
func (a *Agent) structuredAnswer(inv *agent.Invocation, tools map[string]tool.Tool, resEv *event.Event) (*event.Event, error) {
	t, ok := tools[SetModelResponseName].(*setModelResponseTool)
	if !ok || resEv == nil || resEv.Content == nil {
		return nil, nil
	}
	for _, p := range resEv.Content.Parts {
		fr := p.FunctionResponse
		if fr == nil || fr.Name != SetModelResponseName {
			continue
		}
		if _, failed := fr.Response["error"]; failed && len(fr.Response) == 1 {
			continue
		}
		b, err := json.Marshal(t.value(fr.Response))
		if err != nil {
			return nil, fmt.Errorf("llmagent: %s: structured answer: %w", a.Name(), err)
		}
		ev := inv.NewEvent()
		ev.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{Text: string(b)}}}
		if err := a.setOutput(ev); err != nil {
			return nil, err
		}
		return ev, nil
	}
	return nil, nil
}
