package graph_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/agent/workflowagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/session/sqlsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// TestWorkflowAsSubAgent: an LLM agent transfers to a workflow, which runs
// its graph and answers; the next message goes back to the LLM agent.
// (CONFORMANCE A11)
func TestWorkflowAsSubAgent(t *testing.T) {
	var runs atomic.Int32
	wf := mustNew(t, graph.Config{Name: "shouter", Description: "shouts", Nodes: []*graph.Node{
		graph.Func("shout", func(_ context.Context, nc *graph.Context, in string) (string, error) {
			runs.Add(1)
			out := strings.ToUpper(in)
			return out, nc.Say(out)
		})}})
	m := scripted.NewSequence("m",
		scripted.Call("transfer_to_agent", map[string]any{"agent_name": "shouter"}),
		scripted.Text("back with the coordinator"))
	root, err := llmagent.New(llmagent.Config{Name: "coordinator", Model: m, SubAgents: []agentType{wf}})
	if err != nil {
		t.Fatal(err)
	}
	r, key := setup(t, root, nil)
	ctx := context.Background()
	evs := collect(t, r.Run(ctx, userID, key.SessionID, text("hello"), nil))
	var said []string
	for _, ev := range evs {
		if s := ev.Text(); s != "" {
			said = append(said, ev.Author+":"+s)
		}
	}
	if !slices.Equal(said, []string{"shout:HELLO"}) || runs.Load() != 1 {
		t.Fatalf("said %v after %d runs", said, runs.Load())
	}
	if outputOf(t, evs, "shouter") != "HELLO" {
		t.Errorf("workflow output %v", outputOf(t, evs, "shouter"))
	}
	evs = collect(t, r.Run(ctx, userID, key.SessionID, text("thanks"), nil))
	if len(evs) == 0 || evs[len(evs)-1].Author != "coordinator" || evs[len(evs)-1].Text() != "back with the coordinator" {
		t.Fatalf("the next message went to %v", evs)
	}
	if runs.Load() != 1 {
		t.Errorf("the workflow ran again")
	}
}

// TestLongRunningToolInFanOutOnce: an LLM agent node in a fan-out calls a
// long-running tool; its branch pauses, the other finishes; the client's
// answer resumes only the paused agent, once, after a restart, and the join
// runs with both outputs.
// (CONFORMANCE A12)
func TestLongRunningToolInFanOutOnce(t *testing.T) {
	var toolRuns, otherRuns, joins atomic.Int32
	wait, err := functiontool.New(functiontool.Config{Name: "wait", LongRunning: true},
		func(context.Context, tool.Context, struct{}) (map[string]any, error) {
			toolRuns.Add(1)
			return map[string]any{"status": "pending"}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.NewSequence("m", scripted.Call("wait", nil), scripted.Text("waited"))
	waiter := llm(t, "waiter", m, wait)
	other := graph.Func("other", func(context.Context, *graph.Context, string) (string, error) {
		otherRuns.Add(1)
		return "other done", nil
	})
	join := graph.Func("report", func(_ context.Context, _ *graph.Context, in map[string]string) (string, error) {
		joins.Add(1)
		return in["waiter"] + " + " + in["other"], nil
	})
	wf := mustNew(t, graph.Config{Name: "wf",
		Nodes: []*graph.Node{upper("start"), graph.FromAgent(waiter), other, graph.Join("both"), join},
		Edges: []graph.Edge{{From: "start", To: "waiter"}, {From: "start", To: "other"},
			{From: "waiter", To: "both"}, {From: "other", To: "both"}, {From: "both", To: "report"}}})

	ctx := context.Background()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "s.db")
	svc1, err := sqlsession.NewService(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	r1, key := setup(t, wf, svc1)
	evs := collect(t, r1.Run(ctx, userID, key.SessionID, text("go"), nil))
	var callID string
	for _, ev := range evs {
		if len(ev.LongRunningToolIDs) > 0 {
			callID = ev.LongRunningToolIDs[0]
			if ev.Branch != "wf.waiter" {
				t.Errorf("the paused call is on branch %q", ev.Branch)
			}
		}
	}
	if callID == "" || toolRuns.Load() != 1 || otherRuns.Load() != 1 || joins.Load() != 0 {
		t.Fatalf("call %q, tool %d, other %d, join %d", callID, toolRuns.Load(), otherRuns.Load(), joins.Load())
	}
	svc1.Close()

	svc2, err := sqlsession.NewService(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer svc2.Close()
	r2, _ := setup(t, wf, svc2)
	answer := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: callID, Name: "wait", Response: map[string]any{"status": "done"}}}}}
	evs = collect(t, r2.Run(ctx, userID, key.SessionID, answer, nil))
	if got := outputOf(t, evs, "wf"); got != "waited + other done" {
		t.Errorf("output = %v", got)
	}
	if toolRuns.Load() != 1 || otherRuns.Load() != 1 || joins.Load() != 1 {
		t.Errorf("tool %d, other %d, join %d runs; want 1 each", toolRuns.Load(), otherRuns.Load(), joins.Load())
	}
}

// TestConfirmationInWorkflowOnce: a tool that needs approval, called by an
// LLM agent node, runs exactly once after the approval; the nodes before it
// do not run again.
// (CONFORMANCE A12)
func TestConfirmationInWorkflowOnce(t *testing.T) {
	var pays, prep atomic.Int32
	pay, err := functiontool.New(functiontool.Config{Name: "pay", RequireConfirmation: true},
		func(context.Context, tool.Context, struct{}) (map[string]any, error) {
			pays.Add(1)
			return map[string]any{"paid": true}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	cashier := llm(t, "cashier", scripted.NewSequence("m", scripted.Call("pay", nil), scripted.Text("paid")), pay)
	first := graph.Func("prep", func(_ context.Context, _ *graph.Context, in string) (string, error) {
		prep.Add(1)
		return in, nil
	})
	wf := mustNew(t, graph.Config{Name: "wf", Nodes: []*graph.Node{first, graph.FromAgent(cashier), upper("done")},
		Edges: []graph.Edge{{From: "prep", To: "cashier"}, {From: "cashier", To: "done"}}})
	r, key := setup(t, wf, nil)
	ctx := context.Background()
	evs := collect(t, r.Run(ctx, userID, key.SessionID, text("pay the bill"), nil))
	var reqID string
	for _, ev := range evs {
		for _, fc := range ev.FunctionCalls() {
			if fc.Name == event.FunctionRequestConfirmation {
				reqID = fc.ID
			}
		}
	}
	if reqID == "" || pays.Load() != 0 {
		t.Fatalf("no confirmation request (pays %d)", pays.Load())
	}
	ok := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: reqID, Name: event.FunctionRequestConfirmation, Response: map[string]any{"confirmed": true}}}}}
	evs = collect(t, r.Run(ctx, userID, key.SessionID, ok, nil))
	if got := outputOf(t, evs, "wf"); got != "PAID" {
		t.Errorf("output = %v", got)
	}
	if pays.Load() != 1 || prep.Load() != 1 {
		t.Errorf("pay ran %d times, prep %d; want 1 and 1", pays.Load(), prep.Load())
	}
	// Resuming again changes nothing.
	collect(t, r.Resume(ctx, userID, key.SessionID, evs[0].InvocationID, nil))
	if pays.Load() != 1 || prep.Load() != 1 {
		t.Errorf("a second resume ran nodes again: pay %d, prep %d", pays.Load(), prep.Load())
	}
}

// TestResumeAfterCrashSkipsFinishedNodes: an invocation interrupted between
// two nodes continues with Runner.Resume from the log, without running the
// finished node again.
// (CONFORMANCE A12)
func TestResumeAfterCrashSkipsFinishedNodes(t *testing.T) {
	var a, b atomic.Int32
	nodeA := graph.Func("a", func(_ context.Context, _ *graph.Context, in string) (string, error) {
		a.Add(1)
		return in + "a", nil
	})
	nodeB := graph.Func("b", func(_ context.Context, _ *graph.Context, in string) (string, error) {
		b.Add(1)
		return in + "b", nil
	})
	wf := mustNew(t, graph.Config{Name: "wf", Nodes: []*graph.Node{nodeA, nodeB}, Edges: []graph.Edge{{From: "a", To: "b"}}})
	ctx := context.Background()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "s.db")
	svc1, err := sqlsession.NewService(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	r1, key := setup(t, wf, svc1)
	var invID string
	for ev, err := range r1.Run(ctx, userID, key.SessionID, text("x"), nil) {
		if err != nil {
			t.Fatal(err)
		}
		invID = ev.InvocationID
		if ev.NodeInfo != nil && ev.NodeInfo.Path == "wf/a@1" {
			break // the process stops after a's end was committed
		}
	}
	svc1.Close()
	svc2, err := sqlsession.NewService(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer svc2.Close()
	r2, _ := setup(t, wf, svc2)
	evs := collect(t, r2.Resume(ctx, userID, key.SessionID, invID, nil))
	if got := outputOf(t, evs, "wf"); got != "xab" {
		t.Errorf("output = %v", got)
	}
	if a.Load() != 1 || b.Load() != 1 {
		t.Errorf("a ran %d, b %d times", a.Load(), b.Load())
	}
}

// TestWorkflowInLoopAsksOnEveryPass: a workflow whose node asks for input
// runs in a loop agent; the answer of the first pass resumes that pass
// only, and the second pass asks again (with a request of its own) instead
// of taking the first pass's answer.
// (CONFORMANCE A12)
func TestWorkflowInLoopAsksOnEveryPass(t *testing.T) {
	var asked atomic.Int32
	ask := graph.Func("ask", func(_ context.Context, nc *graph.Context, _ string) (string, error) {
		asked.Add(1)
		resp, err := nc.RequestInput(graph.InputRequest{Message: "again?"})
		if err != nil {
			return "", err
		}
		return fmt.Sprint(resp["v"]), nil
	})
	wf := mustNew(t, graph.Config{Name: "wf", Nodes: []*graph.Node{ask}})
	loop, err := workflowagent.NewLoop(workflowagent.LoopConfig{Config: workflowagent.Config{Name: "loop", SubAgents: []agent.Agent{wf}}, MaxIterations: 2})
	if err != nil {
		t.Fatal(err)
	}
	r, key := setup(t, loop, nil)
	ctx := context.Background()
	_, fc := inputCall(t, collect(t, r.Run(ctx, userID, key.SessionID, text("go"), nil)))
	var outputs []any
	answer := func(id, v string) []*event.Event {
		msg := text("")
		msg.Parts = []*genai.Part{graph.InputResponse(id, map[string]any{"v": v})}
		evs := collect(t, r.Run(ctx, userID, key.SessionID, msg, nil))
		for _, ev := range evs {
			if ev.Author == "wf" && ev.Actions.EndOfAgent && ev.NodeInfo != nil && ev.NodeInfo.Path == "wf" {
				outputs = append(outputs, ev.Output)
			}
		}
		return evs
	}
	evs := answer(fc.ID, "first")
	if len(outputs) != 1 {
		t.Fatalf("the first pass ended %d times after its answer", len(outputs))
	}
	_, fc2 := inputCall(t, evs)
	if fc2.ID == fc.ID {
		t.Fatalf("the second pass asked with the first pass's request id %s", fc.ID)
	}
	answer(fc2.ID, "second")
	if !slices.Equal(outputs, []any{"first", "second"}) || asked.Load() != 4 {
		t.Errorf("passes output %v, ask ran %d times; want [first second] and 4", outputs, asked.Load())
	}
}

// TestWorkflowAfterPauseGetsUserMessage: in a sequence, a workflow that
// starts only after an earlier sub-agent's pause was answered gets the
// text of the message that started the invocation, as it would have
// without the pause, not the text of the answer.
// (CONFORMANCE A12)
func TestWorkflowAfterPauseGetsUserMessage(t *testing.T) {
	ask := graph.Func("ask", func(_ context.Context, nc *graph.Context, _ string) (string, error) {
		resp, err := nc.RequestInput(graph.InputRequest{Message: "sure?"})
		if err != nil {
			return "", err
		}
		return fmt.Sprint(resp["ok"]), nil
	})
	asker := mustNew(t, graph.Config{Name: "asker", Nodes: []*graph.Node{ask}})
	echo := mustNew(t, graph.Config{Name: "echo", Nodes: []*graph.Node{upper("shout")}})
	seq, err := workflowagent.NewSequential(workflowagent.Config{Name: "seq", SubAgents: []agent.Agent{asker, echo}})
	if err != nil {
		t.Fatal(err)
	}
	r, key := setup(t, seq, nil)
	ctx := context.Background()
	_, fc := inputCall(t, collect(t, r.Run(ctx, userID, key.SessionID, text("hello"), nil)))
	msg := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{Text: "here you go"}, graph.InputResponse(fc.ID, map[string]any{"ok": true})}}
	evs := collect(t, r.Run(ctx, userID, key.SessionID, msg, nil))
	if got := outputOf(t, evs, "echo"); got != "HELLO" {
		t.Errorf("echo's output = %q, want HELLO (the invocation's message)", got)
	}
}
