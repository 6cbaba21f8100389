package graph_test

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// TestToolNodeConfirmationThroughRequestInput: a tool node whose tool needs
// approval asks with an adk_request_input call and runs only once the answer
// confirms; a refusal outputs the rejection without running the tool.
// (CONFORMANCE A12)
func TestToolNodeConfirmationThroughRequestInput(t *testing.T) {
	for _, confirmed := range []bool{true, false} {
		var paid atomic.Int32
		pay, err := functiontool.New(functiontool.Config{Name: "pay", Description: "pays", RequireConfirmation: true},
			func(_ context.Context, _ tool.Context, args struct {
				Amount int `json:"amount"`
			}) (map[string]any, error) {
				paid.Add(1)
				return map[string]any{"paid": args.Amount}, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		w := mustNew(t, graph.Config{Name: "wf", Nodes: []*graph.Node{
			graph.Func("bill", func(_ context.Context, _ *graph.Context, _ string) (map[string]any, error) {
				return map[string]any{"amount": 5}, nil
			}),
			graph.FromTool(pay)},
			Edges: []graph.Edge{{From: "bill", To: "pay"}}})
		r, key := setup(t, w, nil)
		var id string
		var args map[string]any
		for _, ev := range collect(t, r.Run(context.Background(), userID, key.SessionID, text("go"), nil)) {
			for _, fc := range ev.FunctionCalls() {
				if fc.Name == graph.FunctionRequestInput {
					id, args = fc.ID, fc.Args
				}
			}
		}
		if id == "" {
			t.Fatal("no input request for the confirmation")
		}
		if paid.Load() != 0 {
			t.Fatal("the tool ran before it was approved")
		}
		if p, _ := args["payload"].(map[string]any); p == nil || p["tool"] != "pay" {
			t.Errorf("request payload = %#v, want the tool and its arguments", args["payload"])
		}
		answer := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{graph.InputResponse(id, map[string]any{"confirmed": confirmed})}}
		evs := collect(t, r.Run(context.Background(), userID, key.SessionID, answer, nil))
		got := outputOf(t, evs, "wf")
		if confirmed {
			if paid.Load() != 1 || !reflect.DeepEqual(got, map[string]any{"paid": 5.0}) {
				t.Errorf("approved: ran %d times, output %#v", paid.Load(), got)
			}
		} else if paid.Load() != 0 || !reflect.DeepEqual(got, map[string]any{"error": "This tool call is rejected."}) {
			t.Errorf("refused: ran %d times, output %#v", paid.Load(), got)
		}
	}
}
