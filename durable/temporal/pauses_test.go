package temporal_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/agent/remoteagent"
	"github.com/loomkit/loom/agent/task"
	"github.com/loomkit/loom/durable/temporal"
	supportdesk "github.com/loomkit/loom/examples/workflow"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server/a2aserver"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// Every kind of pause through the session workflow: each conversation runs
// on Temporal's test environment and in process, and the two logs agree.

// turn builds the next message of a conversation from the log as it
// stands.
type turn func(t *testing.T, log *session.Session) *genai.Content

// say is a turn that sends a text.
func say(s string) turn { return func(*testing.T, *session.Session) *genai.Content { return text(s) } }

// answerLast is a turn that answers the last pausing call of the log with
// resp.
func answerLast(resp map[string]any) turn {
	return func(t *testing.T, log *session.Session) *genai.Content {
		id, name := confirmationCall(t, log)
		return &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: id, Name: name, Response: resp}}}}
	}
}

// logOf reads the whole log of a session of app.
func logOf(t *testing.T, app *runner.Runner, id string) *session.Session {
	t.Helper()
	sess, err := app.Sessions().Get(context.Background(), session.Key{AppName: app.AppName(), UserID: user, SessionID: id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

// maxSteps bounds the turns of a conversation in the tests: far more than
// any of them needs.
const maxSteps = 100

// converse runs a conversation on the workflow of a new session "s" of app
// in Temporal's test environment: each message is sent an hour of workflow
// time after the one before (the workflow waits durably in between), and
// its outcome is awaited with the wait update. It returns the statuses of
// the messages, in order.
func converse(t *testing.T, app *runner.Runner, turns ...turn) []temporal.Status {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quiet)
	env := suite.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	// A conversation that does not settle (a pause asked again and again)
	// never lets the workflow wait: the test cancels it after many turns.
	var steps atomic.Int32
	env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		if info.ActivityType.Name == "loom.Turn" && steps.Add(1) == maxSteps {
			env.CancelWorkflow()
		}
	})
	if err := temporal.Register(env, app); err != nil {
		t.Fatal(err)
	}
	if _, err := app.Sessions().Create(context.Background(), session.Key{AppName: app.AppName(), UserID: user, SessionID: "s"}, nil); err != nil {
		t.Fatal(err)
	}
	statuses := make([]temporal.Status, len(turns))
	errs := make([]error, len(turns))
	for i, tr := range turns {
		id := fmt.Sprintf("r%d", i+1)
		env.RegisterDelayedCallback(func() {
			if i > 0 && !statuses[i-1].Done {
				errs[i] = fmt.Errorf("message %d was sent before message %d was done", i+1, i)
			}
			env.UpdateWorkflow(temporal.UpdateRun, "w"+id, &testsuite.TestUpdateCallback{
				OnAccept: func() {},
				OnReject: func(err error) { errs[i] = err },
				OnComplete: func(res any, err error) {
					if err != nil {
						errs[i] = err
						return
					}
					statuses[i], _ = res.(temporal.Status)
				},
			}, temporal.Message{RequestID: id, Content: tr(t, logOf(t, app, "s"))})
		}, time.Second+time.Duration(i)*time.Hour)
	}
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{
		App: app.AppName(), User: user, Session: "s", TreeHash: temporal.TreeHash(app.Tree()),
		Options: temporal.Options{Idle: 100 * time.Hour},
	})
	if !env.IsWorkflowCompleted() {
		t.Fatalf("the workflow did not complete; the log holds %d events", logOf(t, app, "s").Len())
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v (after %d turns, the log holds %d events)", err, steps.Load(), logOf(t, app, "s").Len())
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("message %d: %v", i+1, err)
		}
	}
	return statuses
}

// converseInProcess runs the same conversation on an in-process runner of
// app, on a new session "reference", and returns its log.
func converseInProcess(t *testing.T, app *runner.Runner, turns ...turn) *session.Session {
	t.Helper()
	ctx := context.Background()
	k := session.Key{AppName: app.AppName(), UserID: user, SessionID: "reference"}
	if _, err := app.Sessions().Create(ctx, k, nil); err != nil {
		t.Fatal(err)
	}
	for i, tr := range turns {
		if _, err := app.RunSync(ctx, user, k.SessionID, tr(t, logOf(t, app, k.SessionID)), nil); err != nil {
			t.Fatalf("in process, message %d: %v", i+1, err)
		}
	}
	return logOf(t, app, k.SessionID)
}

// sameLogs fails the test unless the two logs hold the same events, in
// any order (concurrent branches interleave differently from run to run).
func sameLogs(t *testing.T, got, want *session.Session) {
	t.Helper()
	g, w := shape(t, got), shape(t, want)
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Fatalf("log on Temporal:\n%s\nin process:\n%s", strings.Join(shape(t, got), "\n"), strings.Join(shape(t, want), "\n"))
	}
}

// pausingCalls returns the ids of the pausing calls of a log, in order.
func pausingCalls(log *session.Session) []string {
	var ids []string
	for _, ev := range log.Events() {
		ids = append(ids, ev.LongRunningToolIDs...)
	}
	return ids
}

// supportDesk returns a runner of the bundled workflow app, the support
// desk, over a memory session service.
func supportDesk(t *testing.T) *runner.Runner {
	t.Helper()
	r, err := supportDeskOver(memsession.NewService())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// supportDeskOver returns a runner of the support desk over svc, with
// plugins.
func supportDeskOver(svc *session.Service, plugins ...*plugin.Plugin) (*runner.Runner, error) {
	root, err := supportdesk.New(supportdesk.Offline())
	if err != nil {
		return nil, err
	}
	return runner.New(runner.Config{AppName: "workflow", Agent: root, Sessions: svc, Plugins: plugins, Resumable: true})
}

// refund is the support desk's conversation through its approval.
var refund = []turn{say("I want a refund for order 77"), answerLast(map[string]any{"approved": true})}

// TestT10WorkflowAppInputPause: on Temporal, the bundled workflow app's refund
// pauses once at approve's adk_request_input call (the message is done,
// paused, with one call in the log), and the answer resumes it: settle
// runs once, and the log equals that of the same conversation in process.
// (CONFORMANCE T10)
func TestT10WorkflowAppInputPause(t *testing.T) {
	app := supportDesk(t)
	st := converse(t, app, refund...)
	log := logOf(t, app, "s")
	if !st[0].Done || !st[0].Paused || st[0].Error != "" {
		t.Fatalf("the refund request ended with %+v, want a pause", st[0])
	}
	if !st[1].Done || st[1].Paused || st[1].Error != "" {
		t.Fatalf("the answer ended with %+v, want the invocation finished", st[1])
	}
	if calls := pausingCalls(log); len(calls) != 1 {
		t.Fatalf("the log holds %d pausing calls %v, want approve's one adk_request_input", len(calls), calls)
	}
	settled := 0
	for _, ev := range log.Events() {
		if ev.Author == "settle" && strings.Contains(ev.Text(), "order A-77 is on its way") {
			settled++
		}
		for _, fc := range ev.FunctionCalls() {
			if fc.Name != graph.FunctionRequestInput {
				t.Errorf("unexpected call %s", fc.Name)
			}
		}
	}
	if settled != 1 {
		t.Fatalf("settle said its message %d times, want 1", settled)
	}
	sameLogs(t, log, converseInProcess(t, supportDesk(t), refund...))
}

// toolApp returns a runner, over a memory session service, of one LLM
// agent "keeper" with the tool tl: its model calls the tool the user
// message names, then answers "<tool> done: <response>".
func toolApp(t *testing.T, tl tool.Tool) *runner.Runner {
	t.Helper()
	m := scripted.New("keeper-model", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if frs := scripted.LastFunctionResponse(req); len(frs) > 0 {
			b, _ := json.Marshal(frs[0].Response)
			return scripted.Text(frs[0].Name + " done: " + string(b)), nil
		}
		return scripted.Call(scripted.LastUserText(req), nil), nil
	})
	a, err := llmagent.New(llmagent.Config{Name: "keeper", Model: m, Tools: []tool.Tool{tl}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "tools", Agent: a, Sessions: memsession.NewService(), Resumable: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// checkPause checks the statuses of a conversation whose first message
// pauses and whose second answers: one pausing call in the log, answered
// once, and a log equal to the in-process one.
func checkPause(t *testing.T, st []temporal.Status, log, reference *session.Session) {
	t.Helper()
	if !st[0].Done || !st[0].Paused || st[0].Error != "" {
		t.Fatalf("the first message ended with %+v, want a pause", st[0])
	}
	if !st[1].Done || st[1].Paused || st[1].Error != "" {
		t.Fatalf("the answer ended with %+v, want the invocation finished", st[1])
	}
	if calls := pausingCalls(log); len(calls) != 1 {
		t.Fatalf("the log holds %d pausing calls %v, want 1", len(calls), calls)
	}
	sameLogs(t, log, reference)
}

// TestT10CredentialPause: a tool that asks for a credential pauses the
// invocation on Temporal; the client's answer runs it once, with the
// credential. (CONFORMANCE T10)
func TestT10CredentialPause(t *testing.T) {
	var runs, asked atomic.Int32
	newApp := func() *runner.Runner {
		tl, err := functiontool.New(functiontool.Config{Name: "fetch", Description: "Fetches with a key."},
			func(_ context.Context, tc tool.Context, _ struct{}) (map[string]any, error) {
				cred := tc.Credential()
				if cred == nil {
					asked.Add(1)
					tc.RequestCredential(map[string]any{"authScheme": map[string]any{"type": "apiKey", "in": "header", "name": "X-Key"}})
					return nil, nil
				}
				runs.Add(1)
				return map[string]any{"with": cred["apiKey"]}, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		return toolApp(t, tl)
	}
	conv := []turn{say("fetch"), answerLast(map[string]any{"apiKey": "k-1"})}
	app := newApp()
	st := converse(t, app, conv...)
	log := logOf(t, app, "s")
	if runs.Load() != 1 || asked.Load() != 1 {
		t.Fatalf("the tool asked %d times and ran %d times with the credential, want 1 and 1", asked.Load(), runs.Load())
	}
	if !strings.Contains(shapeText(t, log), `fetch done: {\"with\":\"k-1\"}`) {
		t.Fatalf("the tool did not get the credential:\n%s", shapeText(t, log))
	}
	checkPause(t, st, log, converseInProcess(t, newApp(), conv...))
}

// TestT10LongRunningPause: a long-running tool pauses the invocation on
// Temporal after it started, once; the client's final result resumes the
// agent with it. (CONFORMANCE T10)
func TestT10LongRunningPause(t *testing.T) {
	var started atomic.Int32
	newApp := func() *runner.Runner {
		tl, err := functiontool.New(functiontool.Config{Name: "wait", Description: "Starts a job.", LongRunning: true},
			func(context.Context, tool.Context, struct{}) (map[string]any, error) {
				started.Add(1)
				return map[string]any{"status": "pending"}, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		return toolApp(t, tl)
	}
	conv := []turn{say("wait"), answerLast(map[string]any{"status": "finished"})}
	app := newApp()
	st := converse(t, app, conv...)
	log := logOf(t, app, "s")
	if started.Load() != 1 {
		t.Fatalf("the long-running tool started %d times, want 1", started.Load())
	}
	if !strings.Contains(shapeText(t, log), `wait done: {\"status\":\"finished\"}`) {
		t.Fatalf("the agent did not get the final result:\n%s", shapeText(t, log))
	}
	checkPause(t, st, log, converseInProcess(t, newApp(), conv...))
}

// TestT10ConfirmationPause: a tool that needs a confirmation pauses the
// invocation on Temporal; the approval runs it once. (CONFORMANCE T10)
func TestT10ConfirmationPause(t *testing.T) {
	dir := t.TempDir()
	app, err := newApp(dir, 0, memsession.NewService())
	if err != nil {
		t.Fatal(err)
	}
	conv := []turn{say("pay"), answerLast(map[string]any{"confirmed": true})}
	st := converse(t, app, conv...)
	if n := lines(t, dir, "pay.count"); n != 1 {
		t.Fatalf("paid %d times, want 1", n)
	}
	ref, err := newApp(t.TempDir(), 0, memsession.NewService())
	if err != nil {
		t.Fatal(err)
	}
	checkPause(t, st, logOf(t, app, "s"), converseInProcess(t, ref, conv...))
}

// shapeText is the shape of a log, one event a line.
func shapeText(t *testing.T, log *session.Session) string { return strings.Join(shape(t, log), "\n") }

// taskApp returns a runner, over a memory session service, of a
// coordinator that delegates "book" to the booker in task mode; the booker
// asks the user how many people come, and finishes the task with the
// answer; the coordinator then reports the task's result.
func taskApp(t *testing.T) *runner.Runner {
	t.Helper()
	finish, err := task.NewFinishTool(nil)
	if err != nil {
		t.Fatal(err)
	}
	booker, err := llmagent.New(llmagent.Config{Name: "booker", Description: "Books tables.", Tools: []tool.Tool{finish},
		Model: scripted.New("booker-model", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
			if n := scripted.LastUserText(req); strings.HasPrefix(n, "for ") {
				return scripted.Call(task.FinishTaskName, map[string]any{"result": "a table " + n}), nil
			}
			return scripted.Text("For how many people?"), nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	delegate, err := task.NewTool(booker, task.Config{Mode: task.MultiTurn})
	if err != nil {
		t.Fatal(err)
	}
	coordinator, err := llmagent.New(llmagent.Config{Name: "coordinator", Tools: []tool.Tool{delegate}, SubAgents: []agent.Agent{booker},
		Model: scripted.New("coordinator-model", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
			// The booker's finish_task reaches the coordinator as context.
			if last := req.Contents[len(req.Contents)-1]; last.Role == genai.RoleUser && strings.Contains(fmt.Sprint(last.Parts[len(last.Parts)-1].Text), "a table for") {
				return scripted.Text("Booked."), nil
			}
			if scripted.LastUserText(req) == "book" {
				return scripted.Call("booker", map[string]any{"goal": "book a table"}), nil
			}
			return scripted.Text("Anything else?"), nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "tasks", Agent: coordinator, Sessions: memsession.NewService(), Resumable: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestT10TaskWaitsForUser: on Temporal, a task delegated in task mode
// whose agent asks the user a question ends the message without a pending
// call; the user's reply goes to the task's agent, which finishes the task,
// and the coordinator reports it, as in process. (CONFORMANCE T10)
func TestT10TaskWaitsForUser(t *testing.T) {
	conv := []turn{say("book"), say("for two")}
	app := taskApp(t)
	st := converse(t, app, conv...)
	for i, s := range st {
		if !s.Done || s.Paused || s.Error != "" {
			t.Fatalf("message %d ended with %+v, want it finished", i+1, s)
		}
	}
	log := logOf(t, app, "s")
	got := shapeText(t, log)
	if !strings.Contains(got, `booker [] text="For how many people?"`) || !strings.Contains(got, `coordinator [] text="Booked."`) {
		t.Fatalf("the task did not go through the user's reply:\n%s", got)
	}
	sameLogs(t, log, converseInProcess(t, taskApp(t), conv...))
}

// remoteApp returns a runner, over a memory session service, whose root is
// a remote agent reached over A2A: the test app (whose "pay" needs a
// confirmation, recorded in dir) served by an A2A server on loopback.
func remoteApp(t *testing.T, dir string) *runner.Runner {
	t.Helper()
	served, err := newApp(dir, 0, memsession.NewService())
	if err != nil {
		t.Fatal(err)
	}
	// The A2A server creates the sessions of its contexts.
	served, err = runner.New(runner.Config{AppName: appName, Agent: served.Tree().Root(), Sessions: served.Sessions(), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := a2aserver.New(a2aserver.Config{Runner: served})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); h.Close() })
	remote, err := remoteagent.New(remoteagent.Config{Name: "remote_pipeline", URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "remote", Agent: remote, Sessions: memsession.NewService(), Resumable: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestT10RemoteAgentPause: on Temporal, a remote agent whose remote task
// waits for a confirmation pauses the invocation once with the remote's
// call; the approval goes to the same remote task, whose tool runs once.
// (CONFORMANCE T10)
func TestT10RemoteAgentPause(t *testing.T) {
	dir := t.TempDir()
	app := remoteApp(t, dir)
	conv := []turn{say("pay"), answerLast(map[string]any{"confirmed": true})}
	st := converse(t, app, conv...)
	if n := lines(t, dir, "pay.count"); n != 1 {
		t.Fatalf("the remote paid %d times, want 1", n)
	}
	log := logOf(t, app, "s")
	if got := shapeText(t, log); !strings.Contains(got, `pay done`) {
		t.Fatalf("the remote task did not go on after the approval:\n%s", got)
	}
	checkPause(t, st, log, converseInProcess(t, remoteApp(t, t.TempDir()), conv...))
}
