package exampletool_test

import (
	"context"
	"fmt"
	"github.com/loomkit/loom/tool"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/tool/exampletool"
)

// TestT11ExampleText pins ADK's few-shot text for a Gemini 2 model, whose
// calls are fenced plainly, and checks that a user message that does not
// start with text gets no examples, as in ADK (CONFORMANCE T11).
func TestT11ExampleText(t *testing.T) {
	ex := []exampletool.Example{{
		Input: genai.NewContentFromText("Add 1 and 2", genai.RoleUser),
		Output: []*genai.Content{
			{Role: genai.RoleModel, Parts: []*genai.Part{{Text: "Adding."}, {FunctionCall: &genai.FunctionCall{Name: "add", Args: map[string]any{"a": 1.0, "b": 2.0}}}}},
			{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: "c1", Name: "add", Response: map[string]any{"result": 3.0}}}}},
			{Role: genai.RoleModel, Parts: []*genai.Part{{Text: "3"}}},
		},
	}}
	want := "<EXAMPLES>\nBegin few-shot\nThe following are examples of user queries and model responses using the available tools.\n\n" +
		"EXAMPLE 1:\nBegin example\n[user]\nAdd 1 and 2\n[model]\nAdding.\n```\nadd(a=1, b=2)\n```\n" +
		"[user]\n```\n{'id': 'c1', 'name': 'add', 'response': {'result': 3}}\n```\n[model]\n3\nEnd example\n\nEnd few-shot\n<EXAMPLES>"
	if got := exampletool.Text(ex, "gemini-2.5-flash"); got != want {
		t.Errorf("text:\n got %q\nwant %q", got, want)
	}

	tl := exampletool.New(ex)
	inv := agent.NewInvocation(agent.InvocationConfig{UserContent: &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{InlineData: &genai.Blob{MIMEType: "image/png", Data: []byte{1}}}}}})
	req := &model.Request{Model: "gemini-2.5-flash"}
	if err := tl.ProcessRequest(context.Background(), agent.NewToolContext(inv, ""), req); err != nil {
		t.Fatal(err)
	}
	if req.Config != nil && req.Config.SystemInstruction != nil {
		t.Errorf("examples added for a message without text: %+v", req.Config.SystemInstruction)
	}
	if _, ok := any(tl).(tool.Function); ok {
		t.Error("the example tool is a function the model can call")
	}
}

// An ExampleTool adds its examples to the system instruction of every
// request whose user message starts with text.
func Example() {
	tl := exampletool.New([]exampletool.Example{{
		Input:  genai.NewContentFromText("Is this review positive? 'Great phone.'", genai.RoleUser),
		Output: []*genai.Content{genai.NewContentFromText("Positive.", genai.RoleModel)},
	}})
	inv := agent.NewInvocation(agent.InvocationConfig{UserContent: genai.NewContentFromText("'Battery died.'", genai.RoleUser)})
	req := &model.Request{Model: "gemini-2.5-flash"}
	_ = tl.ProcessRequest(context.Background(), agent.NewToolContext(inv, ""), req)
	fmt.Println(req.Config.SystemInstruction.Parts[0].Text)
	// Output:
	// <EXAMPLES>
	// Begin few-shot
	// The following are examples of user queries and model responses using the available tools.
	//
	// EXAMPLE 1:
	// Begin example
	// [user]
	// Is this review positive? 'Great phone.'
	// [model]
	// Positive.
	// End example
	//
	// End few-shot
	// <EXAMPLES>
}
