package temporal_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/durable/temporal"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// suiteEnv returns a test workflow environment (with its own clock) that
// runs the test app over a fresh memory session "s".
func suiteEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *runner.Runner, string) {
	t.Helper()
	return suiteEnvOver(t, memsession.NewService(), 10*time.Millisecond)
}

// suiteEnvOver returns a test workflow environment (with its own clock)
// that runs the test app, whose steps take slow, over svc and its new
// session "s", and the app's directory.
func suiteEnvOver(t *testing.T, svc *session.Service, slow time.Duration) (*testsuite.TestWorkflowEnvironment, *runner.Runner, string) {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quiet)
	env := suite.NewTestWorkflowEnvironment()
	// Tests share busy machines: a slow step is not a deadlock here.
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	dir := t.TempDir()
	app, err := newApp(dir, slow, svc)
	if err != nil {
		t.Fatal(err)
	}
	if err := temporal.Register(env, app); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(context.Background(), session.Key{AppName: appName, UserID: user, SessionID: "s"}, nil); err != nil {
		t.Fatal(err)
	}
	return env, app, dir
}

// send hands m to the workflow of env with the run update. done, if not
// nil, gets the message's status or the update's error; otherwise an error
// fails the test.
func send(t *testing.T, env *testsuite.TestWorkflowEnvironment, m temporal.Message, done func(temporal.Status, error)) {
	t.Helper()
	if done == nil {
		done = func(st temporal.Status, err error) {
			if err == nil && st.Error != "" {
				err = errors.New(st.Error)
			}
			if err != nil {
				t.Errorf("message %s: %v", m.RequestID, err)
			}
		}
	}
	env.UpdateWorkflow(temporal.UpdateRun, "u-"+m.RequestID, &testsuite.TestUpdateCallback{
		OnAccept: func() {},
		OnReject: func(err error) { done(temporal.Status{}, err) },
		OnComplete: func(res any, err error) {
			st, _ := res.(temporal.Status)
			done(st, err)
		},
	}, m)
}

func stored(t *testing.T, app *runner.Runner, id string) *session.Session {
	t.Helper()
	sess, err := app.Sessions().Get(context.Background(), session.Key{AppName: appName, UserID: user, SessionID: id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

// TestConfirmationAnsweredTenMinutesLater: an invocation that pauses on a
// tool confirmation waits durably; the answer, signalled ten minutes of
// workflow time later, resumes it: the tool runs once and the log equals
// that of an in-process run of the same conversation.
//
// (CONFORMANCE D1)
func TestConfirmationAnsweredTenMinutesLater(t *testing.T) {
	env, app, dir := suiteEnv(t)
	start := env.Now()
	var answeredAt time.Time
	env.RegisterDelayedCallback(func() {
		send(t, env, temporal.Message{RequestID: "r1", Content: text("pay")}, nil)
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		if n := lines(t, dir, "pay.count"); n != 0 {
			t.Errorf("the tool ran %d times before its confirmation", n)
		}
		answeredAt = env.Now()
		id, name := confirmationCall(t, stored(t, app, "s"))
		send(t, env, temporal.Message{RequestID: "r2", Content: approve(id, name)}, nil)
	}, 10*time.Minute)
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{
		App: appName, User: user, Session: "s", TreeHash: temporal.TreeHash(app.Tree()),
		Options: temporal.Options{Idle: time.Hour},
	})
	if !env.IsWorkflowCompleted() {
		t.Fatal("the workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	if got := answeredAt.Sub(start); got < 10*time.Minute {
		t.Fatalf("answered after %v of workflow time, want 10m", got)
	}
	if n := lines(t, dir, "pay.count"); n != 1 {
		t.Fatalf("the confirmed tool ran %d times, want 1", n)
	}
	got := shape(t, stored(t, app, "s"))
	want := inProcess(t, memsession.NewService(), "pay")
	if !slices.Equal(got, want) {
		t.Fatalf("log on Temporal:\n%s\nin process:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, `text="pay done"`) }) {
		t.Fatalf("the resumed invocation did not answer: %v", got)
	}
}

// TestChangedTreeRefused: a workflow started with another agent tree is
// refused by the worker with an error naming both trees, and nothing is
// stored.
//
// (CONFORMANCE D2)
func TestChangedTreeRefused(t *testing.T) {
	env, app, _ := suiteEnv(t)
	env.RegisterDelayedCallback(func() {
		send(t, env, temporal.Message{RequestID: "r1", Content: text("hello")}, func(temporal.Status, error) {})
	}, time.Second)
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{App: appName, User: user, Session: "s", TreeHash: "0123456789abcdef"})
	err := env.GetWorkflowError()
	if err == nil || !strings.Contains(err.Error(), "agent tree of app") || !strings.Contains(err.Error(), "0123456789abcdef") ||
		!strings.Contains(err.Error(), temporal.TreeHash(app.Tree())) {
		t.Fatalf("workflow error = %v, want a refusal naming both trees", err)
	}
	if n := stored(t, app, "s").Len(); n != 0 {
		t.Fatalf("stored %d events, want none", n)
	}
}

// TestTreeHash: the hash is the same for two builds of one tree and
// changes with its structure (a tool added, an agent renamed).
func TestTreeHash(t *testing.T) {
	hash := func(name string, tools ...tool.Tool) string {
		a, err := llmagent.New(llmagent.Config{Name: name, Model: scripted.NewSequence("m"), Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		tree, err := agent.NewTree(a)
		if err != nil {
			t.Fatal(err)
		}
		return temporal.TreeHash(tree)
	}
	mk := func(name string) tool.Tool {
		tl, err := functiontool.New(functiontool.Config{Name: name}, func(context.Context, tool.Context, struct{}) (int, error) { return 1, nil })
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	base := hash("a", mk("x"))
	if again := hash("a", mk("x")); again != base {
		t.Fatalf("two builds of one tree: %s and %s", base, again)
	}
	if h := hash("a", mk("x"), mk("y")); h == base {
		t.Fatal("a tool added did not change the hash")
	}
	if h := hash("b", mk("x")); h == base {
		t.Fatal("a renamed agent did not change the hash")
	}
}

// TestR7LimitAcrossAttempts: on Temporal a turn that fails is retried,
// and the retry resumes the invocation from the log. An agent whose model
// always calls a tool, run with MaxLLMCalls 3, whose first attempt fails
// after its second model call was committed, still ends with the call
// limit after exactly 3 model calls: the retry counts the calls of the
// failed attempt, stores the message no second time, and the limit itself
// is not retried.
func TestR7LimitAcrossAttempts(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quiet)
	env := suite.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	env.SetTestTimeout(2 * time.Minute) // wall-clock bound if the loop does not end
	dir := t.TempDir()
	root, err := newAgent(dir, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var calls, failed atomic.Int32
	failOnce := &plugin.Plugin{Name: "fail-once", OnEvent: func(_ context.Context, _ *agent.Invocation, ev *event.Event) (*event.Event, error) {
		if len(ev.FunctionCalls()) > 0 && calls.Add(1) == 2 && failed.Add(1) == 1 {
			return nil, errors.New("the worker lost its connection")
		}
		return nil, nil
	}}
	svc := memsession.NewService()
	r, err := runner.New(runner.Config{AppName: appName, Agent: root, Sessions: svc, Resumable: true, Plugins: []*plugin.Plugin{failOnce}})
	if err != nil {
		t.Fatal(err)
	}
	if err := temporal.Register(env, r); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(context.Background(), session.Key{AppName: appName, UserID: user, SessionID: "s"}, nil); err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	var limitRetried atomic.Bool
	env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		if info.ActivityType.Name == "loom.Turn" {
			attempts.Add(1)
			if info.Attempt > 2 {
				limitRetried.Store(true)
			}
		}
	})
	var st temporal.Status
	var updateErr error
	env.RegisterDelayedCallback(func() {
		env.UpdateWorkflow(temporal.UpdateRun, "w1", &testsuite.TestUpdateCallback{
			OnAccept: func() {},
			OnReject: func(err error) { updateErr = err },
			OnComplete: func(res any, err error) {
				updateErr = err
				if s, ok := res.(temporal.Status); ok {
					st = s
				} else if err == nil {
					updateErr = fmt.Errorf("update result %T, want temporal.Status", res)
				}
			},
		}, temporal.Message{RequestID: "r1", Content: text("loop"), MaxLLMCalls: 3})
	}, time.Second)
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{App: appName, User: user, Session: "s", TreeHash: temporal.TreeHash(r.Tree())})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	if updateErr != nil {
		t.Fatalf("wait update: %v", updateErr)
	}
	if n := lines(t, dir, "loop.model"); n != 3 {
		t.Fatalf("the model was called %d times, want 3 (status %+v)", n, st)
	}
	if !st.Done || !strings.Contains(st.Error, agent.ErrLLMCallLimit.Error()) || st.ErrorType != "LoomLLMCallLimit" {
		t.Fatalf("status %+v, want the invocation ended by %q", st, agent.ErrLLMCallLimit)
	}
	if n := attempts.Load(); n != 2 || limitRetried.Load() {
		t.Fatalf("the turn ran %d times, want 2: the failed attempt and its retry, which the call limit ends", n)
	}
	messages := 0
	for _, ev := range stored(t, r, "s").Events() {
		if ev.Author == "user" && ev.Content != nil {
			messages++
		}
	}
	if messages != 1 {
		t.Fatalf("the message is stored %d times, want 1", messages)
	}
}
