package workflow_test

import (
	"context"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/examples/workflow"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/plugin/telemetry"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
)

// TestRefundTrace checks what the dev UI's Trace tab shows of a refund:
// the flaky lookup's two attempts (the first failed), the route classify
// chose, the approval node's pause, and, after the answer, the resumed
// workflow's agent span with the nodes that ran then under it.
func TestRefundTrace(t *testing.T) {
	ag, err := workflow.New(workflow.Offline())
	if err != nil {
		t.Fatal(err)
	}
	tel, err := telemetry.New(telemetry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "workflow", Agent: ag, Sessions: memsession.NewService(), AutoCreateSession: true,
		Plugins: []*plugin.Plugin{tel.Plugin()}})
	if err != nil {
		t.Fatal(err)
	}
	evs := run(t, r, genai.NewContentFromText("I want a refund for order 77", genai.RoleUser))
	var callID string
	for _, ev := range evs {
		for _, fc := range ev.FunctionCalls() {
			if fc.Name == graph.FunctionRequestInput {
				callID = fc.ID
			}
		}
	}
	if callID == "" {
		t.Fatal("no input request")
	}
	run(t, r, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{graph.InputResponse(callID, map[string]any{"result": "yes"})}})

	spans, err := tel.SessionSpans(context.Background(), telemetry.Owner{AppName: "workflow", UserID: "u", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]telemetry.Span{}
	for _, s := range spans {
		ids[s.SpanID] = s
	}
	var lookups []telemetry.Span
	var route any
	var paused, resumedSettle bool
	for _, s := range spans {
		switch s.Name {
		case "execute_node lookup_order":
			lookups = append(lookups, s)
		case "execute_node classify":
			route = s.Attributes["loom.node.route"]
		case "execute_node approve":
			if s.Attributes["loom.node.paused"] == true {
				paused = true
			}
		case "execute_node settle":
			p := ids[s.ParentSpanID]
			resumedSettle = p.Name == "invoke_agent "+workflow.Name && p.Attributes["loom.resumed"] == true
		}
	}
	if len(lookups) != 2 || lookups[0].Attributes["error.type"] == nil || lookups[1].Attributes["error.type"] != nil {
		var got []any
		for _, s := range lookups {
			got = append(got, s.Attributes["error.type"])
		}
		t.Errorf("lookup attempts' error types %v, want two attempts, the first failed", got)
	}
	if route != "refund" || !paused || !resumedSettle {
		t.Errorf("classify's route %v, approve paused %v, settle under the resumed workflow %v", route, paused, resumedSettle)
	}
}
