package a2aserver_test

import (
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/examples/workflow"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
)

// workflowRunner returns a runner of the support desk workflow example.
func workflowRunner(t testing.TB) *runner.Runner {
	t.Helper()
	ag, err := workflow.New(workflow.Offline())
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "assistant", Agent: ag, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A workflow node's request for input, whose payload is a Go struct,
// pauses the task with the payload in its JSON form; a text answer
// resumes the workflow, which completes the refund.
//
// (CONFORMANCE P1)
func TestWorkflowInputRequest(t *testing.T) {
	_, base := serve(t, workflowRunner(t))
	c := goClient(t, base)
	task := send(t, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "I want a refund for order 77"}))
	call := pendingCall(t, task)
	if call["name"] != graph.FunctionRequestInput {
		t.Fatalf("pausing call %v, want %s", call, graph.FunctionRequestInput)
	}
	args, _ := call["args"].(map[string]any)
	payload, _ := args["payload"].(map[string]any)
	order, _ := payload["lookup_order"].(map[string]any)
	if order["id"] != "A-77" || order["amount"] != 42.5 {
		t.Errorf("request payload %#v, want the facts in their JSON form (order A-77, 42.5)", args["payload"])
	}
	reply := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "yes"})
	reply.TaskID, reply.ContextID = task.ID, task.ContextID
	done := send(t, c, reply)
	if done.Status.State != a2a.TaskStateCompleted || !strings.Contains(artifactText(done), "Your refund of $42.50 for order A-77 is on its way.") {
		t.Errorf("answered task: %s %q, want completed with the refund", done.Status.State, artifactText(done))
	}
}
