package temporal_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"google.golang.org/genai"

	graph "github.com/loomkit/loom/agent/workflow"
	"github.com/loomkit/loom/durable/temporal"
	supportdesk "github.com/loomkit/loom/examples/workflow"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
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

// maxSteps bounds the Steps of a conversation in the tests: far more than
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
	// never lets the workflow wait: the test cancels it after many Steps.
	var steps atomic.Int32
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == "loom.Step" && steps.Add(1) == maxSteps {
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
			env.SignalWorkflow("loom.message", temporal.Message{RequestID: id, Content: tr(t, logOf(t, app, "s"))})
			env.UpdateWorkflow("loom.wait", "w"+id, &testsuite.TestUpdateCallback{
				OnReject: func(err error) { errs[i] = err },
				OnComplete: func(res any, err error) {
					if err != nil {
						errs[i] = err
						return
					}
					statuses[i], _ = res.(temporal.Status)
				},
			}, id)
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
		t.Fatalf("workflow error: %v (after %d Steps, the log holds %d events)", err, steps.Load(), logOf(t, app, "s").Len())
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
		for _, id := range ev.LongRunningToolIDs {
			ids = append(ids, id)
		}
	}
	return ids
}

// supportDesk returns a runner of the bundled workflow app, the support
// desk, over a memory session service.
func supportDesk(t *testing.T) *runner.Runner {
	t.Helper()
	root, err := supportdesk.New(supportdesk.Offline())
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "workflow", Agent: root, Sessions: memsession.NewService()})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// refund is the support desk's conversation through its approval.
var refund = []turn{say("I want a refund for order 77"), answerLast(map[string]any{"approved": true})}

// TestWorkflowAppInputPause: on Temporal, the bundled workflow app's refund
// pauses once at approve's adk_request_input call (the message is done,
// paused, with one call in the log), and the answer resumes it: settle
// runs once, and the log equals that of the same conversation in process.
func TestWorkflowAppInputPause(t *testing.T) {
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
