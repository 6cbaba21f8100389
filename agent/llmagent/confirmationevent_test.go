package llmagent_test

import (
	"context"
	"testing"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

func requested[V any](m map[string]V, id string) bool { _, ok := m[id]; return ok }

// TestT2ConfirmationPendingResponse: as in ADK, a call waiting for approval
// is answered by a function response, in the event that records the
// request (requestedToolConfirmations): ADK's pending error for a gated
// tool, the tool's own result for a tool that asked from inside Run. The
// model, once the call has run, sees only its final response.
func TestT2ConfirmationPendingResponse(t *testing.T) {
	f, m, _ := gatedFixture(t, functiontool.Config{RequireConfirmation: true},
		scripted.Call("send_money", map[string]any{"amount": 50, "to": "bob"}), scripted.Text("Sent."))
	evs := f.run(t, "send 50 to bob", nil)
	if len(evs) != 3 {
		t.Fatalf("%d events, want the call, the pending response and the request", len(evs))
	}
	pending := evs[1]
	frs := pending.FunctionResponses()
	callID := evs[0].FunctionCalls()[0].ID
	if len(frs) != 1 || frs[0].ID != callID || frs[0].Name != "send_money" || frs[0].Response["error"] != llmagent.PendingConfirmationMessage ||
		pending.Content.Role != "user" || !requested(pending.Actions.RequestedToolConfirmations, callID) {
		t.Fatalf("pending event content %+v, actions %+v", pending.Content, pending.Actions)
	}
	if llmagent.PendingConfirmationMessage != "This tool call requires confirmation, please approve or reject." {
		t.Errorf("pending message %q, want ADK's", llmagent.PendingConfirmationMessage)
	}
	req := confirmationCall(t, evs)
	if _, err := f.r.RunSync(context.Background(), user, sid, answer(req.ID, true), nil); err != nil {
		t.Fatal(err)
	}
	var responses []map[string]any
	for _, c := range m.Requests()[1].Contents {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil {
				responses = append(responses, p.FunctionResponse.Response)
			}
		}
	}
	if len(responses) != 1 || responses[0]["sent"] == nil {
		t.Errorf("model saw responses %v, want only the approved call's result", responses)
	}

	// A tool asking from inside Run: its own result is the interim response.
	tl := fnTool{name: "delete_all", run: func(ctx context.Context, tc tool.Context, args map[string]any) (map[string]any, error) {
		if tc.ToolConfirmation() == nil {
			tc.RequestConfirmation("Really?", nil)
			return map[string]any{"status": "waiting for approval"}, nil
		}
		return map[string]any{"deleted": 3}, nil
	}}
	m2 := scripted.NewSequence("m", scripted.Call("delete_all", nil), scripted.Text("All gone."))
	f2 := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m2, Tools: []tool.Tool{tl}}), nil, nil)
	evs = f2.run(t, "delete", nil)
	if frs := evs[1].FunctionResponses(); len(evs) != 3 || len(frs) != 1 || frs[0].Response["status"] != "waiting for approval" {
		t.Fatalf("pending event %+v", evs[1].Content)
	}
}
