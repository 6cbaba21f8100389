package agenttool_test

import (
	"context"
	"fmt"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/agenttool"
)

// A graph workflow used as a tool pauses the caller's call when a node asks
// for input, and the client's approval carries the answer.
func Example_workflowPauses() {
	ask := graph.Func("ask", func(ctx context.Context, nc *graph.Context, in string) (string, error) {
		answer, err := nc.RequestInput(graph.InputRequest{Message: "Refund " + in + "?"})
		if err != nil {
			return "", err // the caller's call pauses until the client answers
		}
		return in + ": " + answer["response"].(string), nc.Say("refund of " + in + " " + answer["response"].(string))
	})
	flow, err := graph.New(graph.Config{Name: "refund_flow", Description: "Refunds an order once approved.", Nodes: []*graph.Node{ask}})
	if err != nil {
		fmt.Println(err)
		return
	}
	refunds, err := agenttool.New(flow, nil)
	if err != nil {
		fmt.Println(err)
		return
	}

	llm := scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if frs := scripted.LastFunctionResponse(req); len(frs) > 0 && frs[0].Response["result"] != nil {
			return scripted.Text(fmt.Sprint(frs[0].Response["result"])), nil
		}
		return scripted.Call("refund_flow", map[string]any{"request": "order 7"}), nil
	})
	assistant, err := llmagent.New(llmagent.Config{Name: "assistant", Model: llm, Tools: []tool.Tool{refunds}})
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := runner.New(runner.Config{AppName: "shop", Agent: assistant, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	events, _ := r.RunSync(ctx, "u", "s", genai.NewContentFromText("refund order 7", genai.RoleUser), nil)
	var request *genai.FunctionCall
	for _, ev := range events {
		for _, fc := range ev.FunctionCalls() {
			if fc.Name == event.FunctionRequestConfirmation {
				request = fc
			}
		}
	}
	fmt.Println(request.Args["toolConfirmation"].(map[string]any)["hint"])

	answer := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: request.ID, Name: event.FunctionRequestConfirmation,
		Response: map[string]any{"confirmed": true, "payload": map[string]any{"response": "approved"}},
	}}}}
	events, _ = r.RunSync(ctx, "u", "s", answer, nil)
	fmt.Println(model.Text(events[len(events)-1].Content, ""))
	// Output:
	// Refund order 7?
	// refund of order 7 approved
}
