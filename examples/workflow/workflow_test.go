package workflow_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/examples/workflow"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
)

func newRunner(t testing.TB) *runner.Runner {
	t.Helper()
	ag, err := workflow.New(workflow.Offline())
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "workflow", Agent: ag, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func run(t *testing.T, r *runner.Runner, msg *genai.Content) []*event.Event {
	t.Helper()
	var out []*event.Event
	for ev, err := range r.Run(context.Background(), "u", "s1", msg, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if !ev.Partial {
			out = append(out, ev)
		}
	}
	return out
}

func TestQuestionGoesToAgent(t *testing.T) {
	evs := run(t, newRunner(t), genai.NewContentFromText("when do you open?", genai.RoleUser))
	found := false
	for _, ev := range evs {
		if ev.Author == "answerer" && strings.Contains(ev.Text(), "when do you open?") {
			found = true
		}
	}
	if !found {
		t.Fatal("the answerer did not answer")
	}
}

func TestRefundRetriesPausesAndSettles(t *testing.T) {
	r := newRunner(t)
	evs := run(t, r, genai.NewContentFromText("I want a refund for order 77", genai.RoleUser))
	var callID string
	retried := false
	for _, ev := range evs {
		for _, fc := range ev.FunctionCalls() {
			if fc.Name == graph.FunctionRequestInput {
				callID = fc.ID
				if !strings.Contains(fc.Args["message"].(string), "A-77") {
					t.Errorf("request message %q", fc.Args["message"])
				}
			}
		}
		if ev.NodeInfo != nil && strings.HasSuffix(ev.NodeInfo.Path, "lookup_order@1") && ev.Actions.EndOfAgent {
			retried = true
		}
		if ev.ErrorCode != "" {
			t.Errorf("error event: %s", ev.ErrorMessage)
		}
	}
	if callID == "" || !retried {
		t.Fatalf("no input request (%q) or lookup did not finish after its retry", callID)
	}
	answer := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{graph.InputResponse(callID, map[string]any{"result": "yes"})}}
	evs = run(t, r, answer)
	got := ""
	for _, ev := range evs {
		if ev.Author == "settle" && ev.Text() != "" {
			got = ev.Text()
		}
	}
	if got != "Your refund of $42.50 for order A-77 is on its way." {
		t.Errorf("reply %q", got)
	}
}

func TestRefundDeclined(t *testing.T) {
	r := newRunner(t)
	var callID string
	for _, ev := range run(t, r, genai.NewContentFromText("refund please", genai.RoleUser)) {
		for _, fc := range ev.FunctionCalls() {
			if fc.Name == graph.FunctionRequestInput {
				callID = fc.ID
			}
		}
	}
	answer := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{graph.InputResponse(callID, map[string]any{"result": "no"})}}
	got := ""
	for _, ev := range run(t, r, answer) {
		if ev.Author == "decline" && ev.Text() != "" {
			got = ev.Text()
		}
	}
	if got != "Sorry, order A-1001 cannot be refunded." {
		t.Errorf("reply %q", got)
	}
}
