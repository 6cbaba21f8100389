package runner_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/workflowagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// Pauses that combine: several pausing calls of one agent, answers to
// several branches, a tool that needs approval and credentials, pauses a
// plugin or a rewind comes between, and resuming after a crash.

// gatedCharge is charge_card gated by confirmation, counting its runs.
func gatedCharge(t *testing.T, runs *atomic.Int32) tool.Tool {
	return chargeTool(t, functiontool.Config{RequireConfirmation: true}, func(tool.Context) (map[string]any, error) {
		runs.Add(1)
		return map[string]any{"charged": true}, nil
	})
}

// sawResponse reports whether a request m received holds a function
// response of the named function.
func sawResponse(m *scripted.Model, name string) bool {
	for _, req := range m.Requests() {
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				if p.FunctionResponse != nil && p.FunctionResponse.Name == name {
					return true
				}
			}
		}
	}
	return false
}

// TestT6ConfirmationAndLongRunningInOneTurn checks that an agent whose model
// turn both needs an approval and calls a long-running tool stays paused
// until both are answered: the approval runs the tool once and does not call
// the model while the long-running call waits; the long-running result then
// resumes it (CONFORMANCE T6).
func TestT6ConfirmationAndLongRunningInOneTurn(t *testing.T) {
	var runs atomic.Int32
	both := scripted.Turn{Calls: []*genai.FunctionCall{{Name: "charge_card"}, {Name: "wait"}}}
	m := scripted.NewSequence("m", both, scripted.Text("all done")).Recording()
	r, _, key := setup(t, llm(t, "A", m, gatedCharge(t, &runs), waitTool(t)), runner.Config{Resumable: true})
	ctx := context.Background()
	ids := map[string]string{} // by function name
	for _, ev := range runAll(t, r.Run(ctx, user, key.SessionID, userText("charge and wait"), nil)) {
		for _, fc := range ev.FunctionCalls() {
			if slices.Contains(ev.LongRunningToolIDs, fc.ID) {
				ids[fc.Name] = fc.ID
			}
		}
	}
	if ids[event.FunctionRequestConfirmation] == "" || ids["wait"] == "" {
		t.Fatalf("want a confirmation request and a paused wait call, got %v", ids)
	}
	evs := runAll(t, r.Run(ctx, user, key.SessionID, answer(ids[event.FunctionRequestConfirmation], event.FunctionRequestConfirmation, map[string]any{"confirmed": true}), nil))
	if runs.Load() != 1 || len(m.Requests()) != 1 {
		t.Fatalf("after the approval: the tool ran %d times and the model was called %d times, want 1 and 1 (events %v)", runs.Load(), len(m.Requests()), answers(evs))
	}
	evs = runAll(t, r.Run(ctx, user, key.SessionID, answer(ids["wait"], "wait", map[string]any{"status": "done"}), nil))
	if got := strings.Join(answers(evs), ","); got != "A:all done" {
		t.Errorf("after the long-running result: %q, want the model's answer", got)
	}
	if runs.Load() != 1 || !sawResponse(m, "wait") || !sawResponse(m, "charge_card") {
		t.Errorf("the tool ran %d times; the model saw wait's result %v, charge_card's %v", runs.Load(), sawResponse(m, "wait"), sawResponse(m, "charge_card"))
	}
}

// TestT6AnswersToTwoBranchesRefused checks that a message answering paused
// calls of two parallel branches is refused, storing nothing (each branch
// sees only its own answers), and that answering each branch in a message of
// its own finishes both (CONFORMANCE T6).
func TestT6AnswersToTwoBranchesRefused(t *testing.T) {
	mA := scripted.NewSequence("mA", scripted.Call("wait", nil), scripted.Text("A done")).Recording()
	mB := scripted.NewSequence("mB", scripted.Call("wait", nil), scripted.Text("B done")).Recording()
	par, err := workflowagent.NewParallel(workflowagent.Config{Name: "par", SubAgents: []agent.Agent{llm(t, "A", mA, waitTool(t)), llm(t, "B", mB, waitTool(t))}})
	if err != nil {
		t.Fatal(err)
	}
	r, svc, key := setup(t, par, runner.Config{Resumable: true})
	ctx := context.Background()
	ids := map[string]string{} // by author
	for _, ev := range runAll(t, r.Run(ctx, user, key.SessionID, userText("go"), nil)) {
		for _, fc := range ev.FunctionCalls() {
			ids[ev.Author] = fc.ID
		}
	}
	n := stored(t, svc, key).Len()
	both := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
		{FunctionResponse: &genai.FunctionResponse{ID: ids["A"], Name: "wait", Response: map[string]any{"for": "A"}}},
		{FunctionResponse: &genai.FunctionResponse{ID: ids["B"], Name: "wait", Response: map[string]any{"for": "B"}}},
	}}
	var runErr error
	for _, err := range r.Run(ctx, user, key.SessionID, both, nil) {
		runErr = errors.Join(runErr, err)
	}
	if !errors.Is(runErr, runner.ErrInvalid) || !strings.Contains(runErr.Error(), "two branches") {
		t.Fatalf("answers to two branches in one message: %v, want ErrInvalid naming the branches", runErr)
	}
	if got := stored(t, svc, key).Len(); got != n {
		t.Fatalf("the refused message changed the log from %d to %d events", n, got)
	}
	var done []string
	for _, who := range []string{"A", "B"} {
		evs := runAll(t, r.Run(ctx, user, key.SessionID, answer(ids[who], "wait", map[string]any{"for": who}), nil))
		done = append(done, answers(evs)...)
	}
	if got := strings.Join(done, ","); got != "A:A done,B:B done" {
		t.Errorf("answered one branch at a time: %q", got)
	}
	for who, m := range map[string]*scripted.Model{"A": mA, "B": mB} {
		frs := scripted.LastFunctionResponse(m.Requests()[1])
		if len(frs) != 1 || frs[0].Response["for"] != who {
			t.Errorf("%s's model saw %v, want its own answer only", who, frs)
		}
	}
}

// TestT6ApprovalThenCredential checks that a tool that needs an approval
// and then asks for a credential runs once with the credential, without
// being gated for approval again (CONFORMANCE T6).
func TestT6ApprovalThenCredential(t *testing.T) {
	var runs, asked atomic.Int32
	tl := chargeTool(t, functiontool.Config{RequireConfirmation: true}, func(tc tool.Context) (map[string]any, error) {
		if tc.Credential() == nil {
			asked.Add(1)
			tc.RequestCredential(map[string]any{"authScheme": "apiKey"})
			return nil, nil
		}
		runs.Add(1)
		return map[string]any{"charged": true}, nil
	})
	m := scripted.NewSequence("m", scripted.Call("charge_card", nil), scripted.Text("charged"))
	r, _, key := setup(t, llm(t, "A", m, tl), runner.Config{Resumable: true})
	ctx := context.Background()
	evs := runAll(t, r.Run(ctx, user, key.SessionID, userText("charge"), nil))
	var asks []string
	for range 4 {
		_, id, name := pending(t, evs)
		asks = append(asks, name)
		resp := map[string]any{"confirmed": true}
		if name == event.FunctionRequestCredential {
			resp = map[string]any{"apiKey": "k"}
		}
		evs = runAll(t, r.Run(ctx, user, key.SessionID, answer(id, name, resp), nil))
		if runs.Load() > 0 {
			break
		}
	}
	want := []string{event.FunctionRequestConfirmation, event.FunctionRequestCredential}
	if !slices.Equal(asks, want) || runs.Load() != 1 || asked.Load() != 1 {
		t.Errorf("the client was asked %v; the tool ran %d times with a credential, asked for one %d times; want %v, 1, 1", asks, runs.Load(), asked.Load(), want)
	}
	if got := strings.Join(answers(evs), ","); got != "A:charged" {
		t.Errorf("answers %q", got)
	}
}

// TestT6PluginStateKeepsApproval checks that state a plugin's BeforeRun
// stages, committed before the resumed agent runs, does not count as the
// agent's use of the client's answer: the approved tool still runs, once
// (CONFORMANCE T6).
func TestT6PluginStateKeepsApproval(t *testing.T) {
	var runs atomic.Int32
	counter := &plugin.Plugin{Name: "counter", BeforeRun: func(ctx context.Context, cc *agent.CallbackContext) (*genai.Content, error) {
		n, _ := cc.State().Get("runs")
		k, _ := n.(float64)
		cc.State().Set("runs", k+1)
		return nil, nil
	}}
	m := scripted.NewSequence("m", scripted.Call("charge_card", nil), scripted.Text("charged"))
	r, _, key := setup(t, llm(t, "A", m, gatedCharge(t, &runs)), runner.Config{Plugins: []*plugin.Plugin{counter}})
	ctx := context.Background()
	_, id, name := pending(t, runAll(t, r.Run(ctx, user, key.SessionID, userText("charge"), nil)))
	evs := runAll(t, r.Run(ctx, user, key.SessionID, answer(id, name, map[string]any{"confirmed": true}), nil))
	if got := runs.Load(); got != 1 {
		t.Errorf("the approved tool ran %d times, want 1 (answers %v)", got, answers(evs))
	}
}

// TestT5AnswerToRewoundCallRefused checks that once a rewind takes back the
// invocation that asked for an approval, the approval is refused and stores
// nothing, and the tool never runs (CONFORMANCE T5, T6).
func TestT5AnswerToRewoundCallRefused(t *testing.T) {
	var runs atomic.Int32
	m := scripted.NewSequence("m", scripted.Call("charge_card", nil), scripted.Text("charged"))
	r, svc, key := setup(t, llm(t, "A", m, gatedCharge(t, &runs)), runner.Config{Resumable: true})
	ctx := context.Background()
	invID, id, name := pending(t, runAll(t, r.Run(ctx, user, key.SessionID, userText("charge"), nil)))
	if _, err := r.Rewind(ctx, user, key.SessionID, invID); err != nil {
		t.Fatal(err)
	}
	n := stored(t, svc, key).Len()
	var runErr error
	for _, err := range r.Run(ctx, user, key.SessionID, answer(id, name, map[string]any{"confirmed": true}), nil) {
		runErr = errors.Join(runErr, err)
	}
	if !errors.Is(runErr, runner.ErrInvalid) {
		t.Errorf("approval of a rewound call: %v, want ErrInvalid", runErr)
	}
	if got := stored(t, svc, key).Len(); got != n || runs.Load() != 0 {
		t.Errorf("the log went from %d to %d events and the tool ran %d times, want no change", n, got, runs.Load())
	}
}

// TestT3ResumeStartsInterruptedLongRunningTool checks that Resume runs a
// long-running call whose tool had not run when the process stopped, once,
// and that a long-running call whose tool had run (and returned nothing)
// is not run again (CONFORMANCE T3).
func TestT3ResumeStartsInterruptedLongRunningTool(t *testing.T) {
	for _, ran := range []bool{false, true} {
		t.Run(map[bool]string{false: "stopped-before-the-tool", true: "stopped-after-the-tool"}[ran], func(t *testing.T) {
			var runs atomic.Int32
			tl := chargeTool(t, functiontool.Config{LongRunning: true}, func(tool.Context) (map[string]any, error) {
				runs.Add(1)
				return nil, nil // the ticket is opened; the client answers later
			})
			r, svc, key := setup(t, llm(t, "A", scripted.NewSequence("m", scripted.Call("charge_card", nil)), tl), runner.Config{Resumable: true})
			ctx := context.Background()
			var invID string
			for ev, err := range r.Run(ctx, user, key.SessionID, userText("charge"), nil) {
				if err != nil {
					t.Fatal(err)
				}
				invID = ev.InvocationID
				if (!ran && len(ev.FunctionCalls()) > 0) || ev.StartedCalls() != nil {
					break // the process stops here
				}
			}
			before := runs.Load()
			n := stored(t, svc, key).Len()
			runAll(t, r.Resume(ctx, user, key.SessionID, invID, nil))
			if got := runs.Load(); got != 1 {
				t.Errorf("the tool ran %d times in all (%d before the stop), want 1", got, before)
			}
			if ran && stored(t, svc, key).Len() != n {
				t.Errorf("resuming a paused call stored %d events", stored(t, svc, key).Len()-n)
			}
		})
	}
}

// TestT3ResumeRefusesAgentThatCannotResume checks that Resume refuses,
// running nothing, an invocation whose root agent cannot continue from the
// log (a custom agent), rather than running it again (CONFORMANCE T3).
func TestT3ResumeRefusesAgentThatCannotResume(t *testing.T) {
	var runs atomic.Int32
	root := custom(t, "root", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		runs.Add(1) // say, it sends an e-mail
		ev := inv.NewEvent()
		ev.Content = genai.NewContentFromText("mail sent", genai.RoleModel)
		yield(ev, nil)
	})
	r, svc, key := setup(t, root, runner.Config{Resumable: true})
	ctx := context.Background()
	evs := runAll(t, r.Run(ctx, user, key.SessionID, userText("send the mail"), nil))
	n := stored(t, svc, key).Len()
	var err error
	for _, e := range r.Resume(ctx, user, key.SessionID, evs[0].InvocationID, nil) {
		err = errors.Join(err, e)
	}
	if !errors.Is(err, runner.ErrInvalid) {
		t.Errorf("Resume of a custom agent's invocation: %v, want ErrInvalid", err)
	}
	if runs.Load() != 1 || stored(t, svc, key).Len() != n {
		t.Errorf("the agent ran %d times and Resume stored %d events, want 1 and none", runs.Load(), stored(t, svc, key).Len()-n)
	}
}

// TestT3ResumePausedAgentThatCannotResume checks that Resume of an
// invocation whose agent cannot continue from the log (a custom agent, a
// remote agent) but is paused on its own call, still waiting, commits
// nothing and runs nothing, without error: it stays paused, as after a
// crash right after the call was committed. The answer then resumes it
// (CONFORMANCE T3).
func TestT3ResumePausedAgentThatCannotResume(t *testing.T) {
	var runs atomic.Int32
	root := custom(t, "root", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		runs.Add(1)
		if ans := inv.Answers(); len(ans) > 0 {
			ev := inv.NewEvent()
			ev.Content = genai.NewContentFromText(fmt.Sprint("got ", ans[0].Response.Response["v"]), genai.RoleModel)
			yield(ev, nil)
			return
		}
		ev := inv.NewEvent()
		ev.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{ID: "ask-1", Name: "ask"}}}}
		ev.LongRunningToolIDs = []string{"ask-1"}
		if yield(ev, nil) {
			inv.End()
		}
	})
	r, svc, key := setup(t, root, runner.Config{})
	ctx := context.Background()
	evs := runAll(t, r.Run(ctx, user, key.SessionID, userText("ask me"), nil))
	n := stored(t, svc, key).Len()
	for _, err := range r.Resume(ctx, user, key.SessionID, evs[0].InvocationID, nil) {
		if err != nil {
			t.Fatalf("Resume of the paused invocation: %v", err)
		}
	}
	if runs.Load() != 1 || stored(t, svc, key).Len() != n {
		t.Fatalf("Resume ran the agent %d more times and stored %d events, want none", runs.Load()-1, stored(t, svc, key).Len()-n)
	}
	evs = runAll(t, r.Run(ctx, user, key.SessionID, answer("ask-1", "ask", map[string]any{"v": "yes"}), nil))
	if got := strings.Join(answers(evs), ","); got != "root:got yes" {
		t.Fatalf("after the answer: %q", got)
	}
}
