package task_test

import (
	"context"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/agent/task"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
)

// A coordinator delegates a task with structured input to an agent with an
// output schema, and gets the structured output back as the tool's result.
func ExampleNewTool() {
	delegate, _ := llmagent.New(llmagent.Config{
		Name: "geo", Description: "Knows capitals.",
		Model: scripted.NewSequence("geo-model", scripted.Text(`{"capital":"Lisbon"}`)),
		OutputSchema: &jsonschema.Schema{Type: "object",
			Properties: map[string]*jsonschema.Schema{"capital": {Type: "string"}}, Required: []string{"capital"}},
	})
	geo, _ := task.NewTool(delegate, task.Config{Mode: task.SingleTurn, InputSchema: &jsonschema.Schema{Type: "object",
		Properties: map[string]*jsonschema.Schema{"country": {Type: "string"}}, Required: []string{"country"}}})
	coordinator, _ := llmagent.New(llmagent.Config{
		Name:  "coordinator",
		Model: scripted.NewSequence("model", scripted.Call("geo", map[string]any{"country": "Portugal"}), scripted.Text("Lisbon.")),
		Tools: []tool.Tool{geo},
	})
	r, _ := runner.New(runner.Config{AppName: "docs", Agent: coordinator, Sessions: memsession.NewService(), AutoCreateSession: true})
	for ev, err := range r.Run(context.Background(), "ada", "s1", genai.NewContentFromText("capital of Portugal?", genai.RoleUser), nil) {
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, fr := range ev.FunctionResponses() {
			fmt.Println(fr.Name, fr.Response["output"])
		}
	}
	// Output:
	// geo map[capital:Lisbon]
}
