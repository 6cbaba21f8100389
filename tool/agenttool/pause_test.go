package agenttool_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/agent/workflow"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/sqlsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/agenttool"
)

// approvalFlow is a workflow that asks a person before it settles, and
// counts how often it settles.
func approvalFlow(t *testing.T, settled *atomic.Int32) *workflow.Workflow {
	t.Helper()
	ask := workflow.Func("ask", func(_ context.Context, nc *workflow.Context, in string) (string, error) {
		resp, err := nc.RequestInput(workflow.InputRequest{Message: "Refund " + in + "?"})
		if err != nil {
			return "", err
		}
		return in + ": " + resp["response"].(string), nil
	})
	settle := workflow.Func("settle", func(_ context.Context, nc *workflow.Context, in string) (string, error) {
		settled.Add(1)
		return in, nc.Say("settled " + in)
	})
	w, err := workflow.New(workflow.Config{Name: "refund_flow", Description: "Settles a refund once a person approves it.",
		Nodes: []*workflow.Node{ask, settle}, Edges: []workflow.Edge{{From: "ask", To: "settle"}}})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// caller is an LLM agent whose model calls the workflow tool once, then
// repeats the tool's result.
func caller(t *testing.T, wt tool.Tool) *llmagent.Agent {
	t.Helper()
	m := scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if frs := scripted.LastFunctionResponse(req); len(frs) > 0 {
			if r, ok := frs[0].Response["result"].(string); ok {
				return scripted.Text("done: " + r), nil
			}
			return scripted.Text("waiting"), nil
		}
		return scripted.Call("refund_flow", map[string]any{"request": "order 7"}), nil
	})
	a, err := llmagent.New(llmagent.Config{Name: "assistant", Model: m, Instruction: "Help.", Tools: []tool.Tool{wt}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// pausedRequest returns the confirmation request that pauses the tool's
// call.
func pausedRequest(t *testing.T, events []*event.Event) *genai.FunctionCall {
	t.Helper()
	for _, ev := range events {
		for _, fc := range ev.FunctionCalls() {
			if fc.Name == event.FunctionRequestConfirmation && len(ev.LongRunningToolIDs) > 0 {
				return fc
			}
		}
	}
	t.Fatalf("no pausing confirmation request among %d events", len(events))
	return nil
}

func approve(id string, answer any) *genai.Content {
	return &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: id, Name: event.FunctionRequestConfirmation, Response: map[string]any{"confirmed": true, "payload": answer}}}}}
}

func finalText(events []*event.Event) string {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].IsFinalResponse() {
			if s := model.Text(events[i].Content, ""); s != "" {
				return s
			}
		}
	}
	return ""
}

// TestT15WorkflowToolPausesAndResumes: a workflow used as a tool asks for
// input; the caller's call pauses with one request showing the question;
// the answer resumes the workflow, which settles once; a second answer to
// the same request is refused.
//
// (CONFORMANCE T15)
func TestT15WorkflowToolPausesAndResumes(t *testing.T) {
	var settled atomic.Int32
	wt, err := agenttool.New(approvalFlow(t, &settled), nil)
	if err != nil {
		t.Fatal(err)
	}
	sessions := sessionsOn(t, "")
	r := newRunner(t, caller(t, wt), sessions)
	ctx := context.Background()
	events, err := r.RunSync(ctx, "u", "s", genai.NewContentFromText("refund order 7", genai.RoleUser), nil)
	if err != nil {
		t.Fatal(err)
	}
	req := pausedRequest(t, events)
	conf, _ := req.Args["toolConfirmation"].(map[string]any)
	if hint, _ := conf["hint"].(string); hint != "Refund order 7?" {
		t.Errorf("the request's hint = %q, want the workflow's question", hint)
	}
	if settled.Load() != 0 {
		t.Fatal("the workflow settled before the answer")
	}
	events, err = r.RunSync(ctx, "u", "s", approve(req.ID, map[string]any{"response": "yes"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := finalText(events); got != "done: settled order 7: yes" {
		t.Errorf("final answer = %q", got)
	}
	if settled.Load() != 1 {
		t.Errorf("settled %d times, want once", settled.Load())
	}
	if _, err := r.RunSync(ctx, "u", "s", approve(req.ID, map[string]any{"response": "yes"}), nil); err == nil {
		t.Error("a second answer to the same request was taken")
	}
	if settled.Load() != 1 {
		t.Errorf("settled %d times after a second answer, want once", settled.Load())
	}
}

// TestT16WorkflowToolResumesAfterRestart: the answer reaches a new runner
// over the same SQLite store (the process restarted while the call was
// paused); the workflow resumes from the log its request holds and settles
// once.
//
// (CONFORMANCE T16)
func TestT16WorkflowToolResumesAfterRestart(t *testing.T) {
	dir := t.TempDir()
	var settled atomic.Int32
	ctx := context.Background()
	var id string
	{
		wt, err := agenttool.New(approvalFlow(t, &settled), nil)
		if err != nil {
			t.Fatal(err)
		}
		r := newRunner(t, caller(t, wt), sessionsOn(t, dir))
		events, err := r.RunSync(ctx, "u", "s", genai.NewContentFromText("refund order 7", genai.RoleUser), nil)
		if err != nil {
			t.Fatal(err)
		}
		id = pausedRequest(t, events).ID
	}
	// A new process: new agents, a new runner, the same store.
	wt, err := agenttool.New(approvalFlow(t, &settled), nil)
	if err != nil {
		t.Fatal(err)
	}
	r := newRunner(t, caller(t, wt), sessionsOn(t, dir))
	events, err := r.RunSync(ctx, "u", "s", approve(id, "yes"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := finalText(events); got != "done: settled order 7: yes" {
		t.Errorf("final answer = %q", got)
	}
	if settled.Load() != 1 {
		t.Errorf("settled %d times, want once", settled.Load())
	}
}

// sessionsOn returns a session service over SQLite in dir (a fresh
// directory when dir is empty).
func sessionsOn(t *testing.T, dir string) *session.Service {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	store, err := sqlsession.Open(context.Background(), "sqlite://"+filepath.Join(dir, "sessions.db"), &sqlsession.Options{LeaseTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return session.NewService(store, nil)
}

func newRunner(t *testing.T, root *llmagent.Agent, sessions *session.Service) *runner.Runner {
	t.Helper()
	r, err := runner.New(runner.Config{AppName: "app", Agent: root, Sessions: sessions, AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
