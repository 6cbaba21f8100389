package llmagent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

type transferArgs struct {
	Amount int    `json:"amount"`
	To     string `json:"to"`
}

// gatedFixture builds an agent whose transfer tool needs confirmation
// (always, or per call when fn is set) and counts its runs.
func gatedFixture(t *testing.T, cfg functiontool.Config, turns ...scripted.Turn) (*fixture, *scripted.Model, *int) {
	t.Helper()
	runs := new(int)
	cfg.Name, cfg.Description = "send_money", "Sends money."
	tl, err := functiontool.New(cfg, func(ctx context.Context, tc tool.Context, args transferArgs) (map[string]any, error) {
		*runs++
		return map[string]any{"sent": args.Amount}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.NewSequence("m", turns...)
	return newFixture(t, mustAgent(t, llmagent.Config{Name: "bank", Model: m, Tools: []tool.Tool{tl}}), nil, nil), m, runs
}

func answer(id string, confirmed bool) *genai.Content {
	return &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: id, Name: event.FunctionRequestConfirmation, Response: map[string]any{"confirmed": confirmed}}}}}
}

// confirmationCall returns the adk_request_confirmation call of a run.
func confirmationCall(t *testing.T, evs []*event.Event) *genai.FunctionCall {
	t.Helper()
	last := evs[len(evs)-1]
	calls := last.FunctionCalls()
	if len(calls) != 1 || calls[0].Name != event.FunctionRequestConfirmation {
		t.Fatalf("last event is not a confirmation request: %+v", last.Content)
	}
	if len(last.LongRunningToolIDs) != 1 || last.LongRunningToolIDs[0] != calls[0].ID {
		t.Fatalf("confirmation call id not long-running: %v", last.LongRunningToolIDs)
	}
	return calls[0]
}

// TestT2ConfirmationApproved checks the approval path: the gated tool
// never runs before approval; approval runs it and the model continues.
func TestT2ConfirmationApproved(t *testing.T) {
	f, m, runs := gatedFixture(t, functiontool.Config{RequireConfirmation: true, ConfirmationHint: "Send money?"},
		scripted.Call("send_money", map[string]any{"amount": 50, "to": "bob"}), scripted.Text("Sent 50 to bob."))
	evs := f.run(t, "send 50 to bob", nil)
	req := confirmationCall(t, evs)
	if *runs != 0 {
		t.Fatal("gated tool ran before approval")
	}
	orig, _ := req.Args["originalFunctionCall"].(map[string]any)
	conf, _ := req.Args["toolConfirmation"].(map[string]any)
	if orig["name"] != "send_money" || orig["id"] != evs[0].FunctionCalls()[0].ID || conf["hint"] != "Send money?" || conf["confirmed"] != false {
		t.Fatalf("request args %v", req.Args)
	}
	b, _ := json.Marshal(evs[len(evs)-1])
	if !strings.Contains(string(b), `"name":"adk_request_confirmation"`) || !strings.Contains(string(b), `"longRunningToolIds":[`) {
		t.Fatalf("wire form %s", b)
	}
	evs, err := f.r.RunSync(context.Background(), user, sid, answer(req.ID, true), nil)
	if err != nil {
		t.Fatal(err)
	}
	if *runs != 1 {
		t.Fatalf("tool ran %d times after approval, want 1", *runs)
	}
	if resp := evs[0].FunctionResponses(); len(resp) != 1 || resp[0].Response["sent"] != 50.0 && resp[0].Response["sent"] != 50 {
		t.Fatalf("response after approval %+v", evs[0].Content)
	}
	if evs[len(evs)-1].Text() != "Sent 50 to bob." {
		t.Fatalf("model did not continue: %q", evs[len(evs)-1].Text())
	}
	// The model never sees the runtime's own confirmation calls.
	for _, c := range m.Requests()[1].Contents {
		for _, p := range c.Parts {
			if p.FunctionCall != nil && p.FunctionCall.Name == event.FunctionRequestConfirmation {
				t.Fatal("confirmation call leaked into the model history")
			}
		}
	}
}

// TestT2ConfirmationRejected checks that a rejection returns the rejection
// error to the model and the tool never runs.
func TestT2ConfirmationRejected(t *testing.T) {
	f, m, runs := gatedFixture(t, functiontool.Config{RequireConfirmation: true},
		scripted.Call("send_money", map[string]any{"amount": 50, "to": "bob"}), scripted.Text("Cancelled."))
	req := confirmationCall(t, f.run(t, "send 50", nil))
	evs, err := f.r.RunSync(context.Background(), user, sid, answer(req.ID, false), nil)
	if err != nil {
		t.Fatal(err)
	}
	if *runs != 0 {
		t.Fatal("rejected tool ran")
	}
	if got := evs[0].FunctionResponses()[0].Response["error"]; got != llmagent.RejectedMessage {
		t.Fatalf("rejection response %v", got)
	}
	last := m.Requests()[1].Contents
	if fr := last[len(last)-1].Parts[0].FunctionResponse; fr == nil || fr.Response["error"] != "This tool call is rejected." {
		t.Fatalf("model did not receive the rejection: %+v", last[len(last)-1].Parts[0])
	}
}

// TestT2ConfirmationFailsClosed checks that an answer without an explicit
// approval counts as a rejection.
func TestT2ConfirmationFailsClosed(t *testing.T) {
	f, _, runs := gatedFixture(t, functiontool.Config{RequireConfirmation: true},
		scripted.Call("send_money", map[string]any{"amount": 1, "to": "x"}), scripted.Text("ok"))
	req := confirmationCall(t, f.run(t, "go", nil))
	msg := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: req.ID, Name: event.FunctionRequestConfirmation, Response: map[string]any{"confirmed": "yes"}}}}}
	if _, err := f.r.RunSync(context.Background(), user, sid, msg, nil); err != nil {
		t.Fatal(err)
	}
	if *runs != 0 {
		t.Fatal("tool ran on an ambiguous answer")
	}
}

// TestT2ConfirmationAnsweredTwiceOrUnknown checks the clear errors, and
// that the session is unchanged by them (CONFORMANCE T6).
func TestT2ConfirmationAnsweredTwiceOrUnknown(t *testing.T) {
	f, _, runs := gatedFixture(t, functiontool.Config{RequireConfirmation: true},
		scripted.Call("send_money", map[string]any{"amount": 1, "to": "x"}), scripted.Text("ok"))
	req := confirmationCall(t, f.run(t, "go", nil))
	ctx := context.Background()
	if _, err := f.r.RunSync(ctx, user, sid, answer(req.ID, true), nil); err != nil {
		t.Fatal(err)
	}
	before := f.session(t).Len()
	_, err := f.r.RunSync(ctx, user, sid, answer(req.ID, true), nil)
	if !errors.Is(err, runner.ErrInvalid) || !strings.Contains(err.Error(), "already answered") {
		t.Fatalf("second answer: err = %v", err)
	}
	_, err = f.r.RunSync(ctx, user, sid, answer("adk-unknown", true), nil)
	if !errors.Is(err, runner.ErrInvalid) || !strings.Contains(err.Error(), "no pending function call") {
		t.Fatalf("unknown id: err = %v", err)
	}
	if f.session(t).Len() != before || *runs != 1 {
		t.Fatalf("bad answers changed the session (%d → %d events) or ran the tool (%d)", before, f.session(t).Len(), *runs)
	}
}

// TestT2ConfirmationPerCall checks a confirmation decided from the
// arguments: small amounts run at once, large ones wait (answered for now
// by the pending error).
func TestT2ConfirmationPerCall(t *testing.T) {
	large := func(args map[string]any) bool { a, _ := args["amount"].(float64); return a > 100 }
	f, _, runs := gatedFixture(t, functiontool.Config{ConfirmationFunc: func(args map[string]any) bool { return large(args) }},
		scripted.Turn{Calls: []*genai.FunctionCall{
			{Name: "send_money", Args: map[string]any{"amount": 5.0, "to": "a"}},
			{Name: "send_money", Args: map[string]any{"amount": 500.0, "to": "b"}},
		}}, scripted.Text("done"))
	evs := f.run(t, "pay both", nil)
	if *runs != 1 {
		t.Fatalf("runs before approval = %d, want 1 (only the small one)", *runs)
	}
	// The small one's result, and ADK's pending error for the large one.
	if resp := evs[1].FunctionResponses(); len(resp) != 2 || resp[0].ID != evs[0].FunctionCalls()[0].ID || resp[0].Response["sent"] == nil ||
		resp[1].ID != evs[0].FunctionCalls()[1].ID || resp[1].Response["error"] != llmagent.PendingConfirmationMessage {
		t.Fatalf("responses before approval: %+v", evs[1].Content)
	}
	if _, ok := evs[1].Actions.RequestedToolConfirmations[evs[0].FunctionCalls()[1].ID]; !ok {
		t.Fatalf("requested confirmations %v", evs[1].Actions.RequestedToolConfirmations)
	}
	confirmationCall(t, evs)
}

// TestT2ConfirmationFromInsideTool checks a tool that asks for approval
// itself through its context.
func TestT2ConfirmationFromInsideTool(t *testing.T) {
	runs := 0
	tl := fnTool{name: "delete_all", run: func(ctx context.Context, tc tool.Context, args map[string]any) (map[string]any, error) {
		if tc.ToolConfirmation() == nil {
			tc.RequestConfirmation("Really delete everything?", map[string]any{"count": 3})
			return nil, nil
		}
		runs++
		return map[string]any{"deleted": 3}, nil
	}}
	m := scripted.NewSequence("m", scripted.Call("delete_all", nil), scripted.Text("All gone."))
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, Tools: []tool.Tool{tl}}), nil, nil)
	req := confirmationCall(t, f.run(t, "delete", nil))
	if conf := req.Args["toolConfirmation"].(map[string]any); conf["hint"] != "Really delete everything?" || conf["payload"] == nil {
		t.Fatalf("confirmation %v", conf)
	}
	evs, err := f.r.RunSync(context.Background(), user, sid, answer(req.ID, true), nil)
	if err != nil || runs != 1 || evs[len(evs)-1].Text() != "All gone." {
		t.Fatalf("err %v runs %d", err, runs)
	}
}
