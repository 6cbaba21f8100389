package functiontool_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// runAgent runs one turn of an LLM agent with the given tools and scripted
// model turns and returns its events.
func runAgent(t *testing.T, tools []tool.Tool, turns ...scripted.Turn) []*event.Event {
	t.Helper()
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: scripted.NewSequence("m", turns...), Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	events, err := r.RunSync(context.Background(), "u1", "s1", genai.NewContentFromText("go", genai.RoleUser), nil)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

func functionResponse(t *testing.T, events []*event.Event) *genai.FunctionResponse {
	t.Helper()
	for _, ev := range events {
		if frs := ev.FunctionResponses(); len(frs) > 0 {
			return frs[0]
		}
	}
	t.Fatal("no function response")
	return nil
}

// TestR9ModelReceivesArgumentError runs a function tool under an LLM agent:
// arguments of the wrong type reach the model as an error function response
// naming the field, and the invocation goes on.
func TestR9ModelReceivesArgumentError(t *testing.T) {
	events := runAgent(t, []tool.Tool{newOrderTool(t)},
		scripted.Call("place_order", map[string]any{"customer": "Ann", "quantity": "many", "ship": map[string]any{"street": "s", "zip": 1.0}}),
		scripted.Text("Sorry, I sent a bad quantity."),
	)
	fr := functionResponse(t, events)
	msg, _ := fr.Response["error"].(string)
	if !strings.Contains(msg, `argument "quantity" must be of type integer`) {
		t.Errorf("error response = %v", fr.Response)
	}
	if last := events[len(events)-1]; !last.IsFinalResponse() || last.Content.Parts[0].Text != "Sorry, I sent a bad quantity." {
		t.Error("the invocation did not continue after the error response")
	}
}

// TestR8ModelReceivesPanic checks a panicking function under an LLM agent.
func TestR8ModelReceivesPanic(t *testing.T) {
	pt, err := functiontool.New(functiontool.Config{Name: "explode"}, func(context.Context, tool.Context, struct{}) (int, error) {
		var order []int
		return order[3], nil // index out of range
	})
	if err != nil {
		t.Fatal(err)
	}
	events := runAgent(t, []tool.Tool{pt}, scripted.Call("explode", nil), scripted.Text("It broke."))
	fr := functionResponse(t, events)
	if msg, _ := fr.Response["error"].(string); !strings.Contains(msg, "panicked") || !strings.Contains(msg, "index out of range") {
		t.Errorf("error response = %v", fr.Response)
	}
}

// TestLongRunningUnderAgent checks that a long-running function tool's call
// id is listed in the event's long-running tool ids.
func TestLongRunningUnderAgent(t *testing.T) {
	lt, err := functiontool.New(functiontool.Config{Name: "request_approval", LongRunning: true},
		func(context.Context, tool.Context, struct {
			Amount float64 `json:"amount"`
		}) (map[string]any, error) {
			return map[string]any{"status": "pending"}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	call := scripted.Turn{Calls: []*genai.FunctionCall{{ID: "fc-7", Name: "request_approval", Args: map[string]any{"amount": 10.0}}}}
	events := runAgent(t, []tool.Tool{lt}, call, scripted.Text("Waiting for approval."))
	var ids []string
	for _, ev := range events {
		ids = append(ids, ev.LongRunningToolIDs...)
	}
	if len(ids) != 1 || ids[0] != "fc-7" {
		t.Errorf("long-running tool ids = %v, want [fc-7]", ids)
	}
	if fr := functionResponse(t, events); fr.Response["status"] != "pending" {
		t.Errorf("response = %v", fr.Response)
	}
}
