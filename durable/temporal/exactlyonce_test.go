package temporal_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/durable/temporal"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
)

// userTexts returns the texts of the user messages of a log, in order.
func userTexts(log *session.Session) []string {
	var out []string
	for _, ev := range log.Events() {
		if ev.Author == event.AuthorUser && ev.Content != nil {
			for _, p := range ev.Content.Parts {
				if p != nil && p.Text != "" {
					out = append(out, p.Text)
				}
			}
		}
	}
	return out
}

// TestMessageAdmittedBeforeAnotherWorkflowsMessage: a message admitted
// when the log was empty reaches a fresh session workflow only after
// another message was stored and answered (by the session's previous
// workflow, which then ended: idle, or cancelled). Its turn stores and
// runs the message; it does not take the other message for its own and
// resume that one's invocation.
//
// (CONFORMANCE D10)
func TestMessageAdmittedBeforeAnotherWorkflowsMessage(t *testing.T) {
	env, app, _ := suiteEnv(t)
	ctx := context.Background()
	// The previous workflow's turn, after this message was admitted.
	first, err := app.RunSync(ctx, user, "s", text("first"), nil)
	if err != nil {
		t.Fatal(err)
	}
	firstInv := first[0].InvocationID
	var st temporal.Status
	env.RegisterDelayedCallback(func() {
		send(t, env, temporal.Message{RequestID: "late", Content: text("second"), After: 0}, func(s temporal.Status, err error) {
			if err != nil {
				t.Errorf("update: %v", err)
			}
			st = s
		})
	}, time.Second)
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{
		App: appName, User: user, Session: "s", TreeHash: temporal.TreeHash(app.Tree()),
	})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	log := stored(t, app, "s")
	if got := userTexts(log); len(got) != 2 || got[0] != "first" || got[1] != "second" {
		t.Fatalf("user messages in the log %q, want [first second]\n%s", got, shapeText(t, log))
	}
	if st.Error != "" || st.InvocationID == "" || st.InvocationID == firstInv {
		t.Fatalf("status %+v: want the message's own invocation, not %s", st, firstInv)
	}
	if ev := log.At(st.Floor); ev.Author != event.AuthorUser || ev.Content.Parts[0].Text != "second" {
		t.Fatalf("status floor %d is not the message's index in the log", st.Floor)
	}
}

// transferApp returns a runner over svc whose root transfers "I need help"
// to its sub-agent helper, which keeps the conversation; each agent
// answers other messages with its name and the text. The first model call
// for the text failOn, whichever agent makes it, fails.
func transferApp(t *testing.T, svc *session.Service, failOn string) *runner.Runner {
	t.Helper()
	var failed atomic.Bool
	respond := func(name string) scripted.Responder {
		return func(_ context.Context, req *model.Request) (scripted.Turn, error) {
			text := scripted.LastUserText(req)
			if text == failOn && failed.CompareAndSwap(false, true) {
				return scripted.Turn{}, errors.New("the model is unreachable")
			}
			if name == "root" && text == "I need help" && len(scripted.LastFunctionResponse(req)) == 0 {
				return scripted.Call("transfer_to_agent", map[string]any{"agent_name": "helper"}), nil
			}
			return scripted.Text(name + ": " + text), nil
		}
	}
	helper, err := llmagent.New(llmagent.Config{Name: "helper", Model: scripted.New("helper-m", respond("helper"))})
	if err != nil {
		t.Fatal(err)
	}
	root, err := llmagent.New(llmagent.Config{Name: "root", Model: scripted.New("root-m", respond("root")), SubAgents: []agent.Agent{helper}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: appName, Agent: root, Sessions: svc, Resumable: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// lastText returns the text of the last event of a log with text.
func lastText(log *session.Session) string {
	evs := log.Events()
	for i := len(evs) - 1; i >= 0; i-- {
		if s := evs[i].Text(); s != "" {
			return evs[i].Author + " said " + s
		}
	}
	return ""
}

// TestTurnRetriedBeforeFirstModelCall: a turn whose first attempt stored
// its message and failed before any agent ran (here its first model call
// failed; a worker killed there is the same) is retried; the retry answers
// the message with the agent a run in process picks (the one the
// conversation was transferred to), not the root.
//
// (CONFORMANCE D10)
func TestTurnRetriedBeforeFirstModelCall(t *testing.T) {
	ctx := context.Background()
	key := session.Key{AppName: appName, UserID: user, SessionID: "s"}
	// In process, the message goes to helper.
	ref := memsession.NewService()
	refApp := transferApp(t, ref, "")
	if _, err := ref.Create(ctx, key, nil); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"I need help", "again"} {
		if _, err := refApp.RunSync(ctx, user, "s", text(m), nil); err != nil {
			t.Fatal(err)
		}
	}
	want := lastText(stored(t, refApp, "s"))

	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quiet)
	env := suite.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	svc := memsession.NewService()
	app := transferApp(t, svc, "again")
	if err := temporal.Register(env, app); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(ctx, key, nil); err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		if info.ActivityType.Name == "loom.Turn" {
			attempts.Add(1)
		}
	})
	env.RegisterDelayedCallback(func() {
		send(t, env, temporal.Message{RequestID: "r1", Content: text("I need help")}, nil)
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		send(t, env, temporal.Message{RequestID: "r2", Content: text("again"), After: stored(t, app, "s").Len()}, nil)
	}, time.Minute)
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{
		App: appName, User: user, Session: "s", TreeHash: temporal.TreeHash(app.Tree()),
		Options: temporal.Options{Idle: time.Hour},
	})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	log := stored(t, app, "s")
	if n := attempts.Load(); n != 3 {
		t.Fatalf("%d attempts of turns, want 3: one for the first message, two for the second", n)
	}
	if got := userTexts(log); len(got) != 2 {
		t.Fatalf("user messages %q, want each once", got)
	}
	if got := lastText(log); got != want {
		t.Fatalf("the retried message was answered by %q, in process by %q\n%s", got, want, shapeText(t, log))
	}
}

// TestSignalledWorkflowStateChangeBeforeStep: in a session workflow of the
// kind that took messages as signals (no "loom.turns" version marker), a
// change of the session's state (PATCH of the session: an event of the
// user without content) committed between the Mark activity that found the
// message's floor and the Step that stores it is not taken for the
// message: the Step stores and runs the message.
//
// (CONFORMANCE D10)
func TestSignalledWorkflowStateChangeBeforeStep(t *testing.T) {
	env, app, _ := suiteEnv(t)
	env.OnGetVersion("loom.turns", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	var patched atomic.Bool
	env.SetOnActivityStartedListener(func(info *activity.Info, ctx context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == "loom.Step" && patched.CompareAndSwap(false, true) {
			if _, err := app.UpdateState(ctx, user, "s", map[string]any{"mood": "sunny"}); err != nil {
				t.Error(err)
			}
		}
	})
	var st temporal.Status
	env.RegisterDelayedCallback(func() {
		send(t, env, temporal.Message{RequestID: "r1", Content: text("hello")}, func(s temporal.Status, err error) {
			if err != nil {
				t.Errorf("update: %v", err)
			}
			st = s
		})
	}, time.Second)
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{
		App: appName, User: user, Session: "s", TreeHash: temporal.TreeHash(app.Tree()),
	})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	log := stored(t, app, "s")
	if !patched.Load() {
		t.Fatal("no Step ran: the workflow did not take the signalled path")
	}
	if got := userTexts(log); len(got) != 1 || got[0] != "hello" || st.Error != "" {
		t.Fatalf("user messages %q, status %+v: want the message stored and answered\n%s", got, st, shapeText(t, log))
	}
	if got := lastText(log); got != "reporter said reported" {
		t.Fatalf("the log ends with %q, want the pipeline's answer\n%s", got, shapeText(t, log))
	}
}

// TestTurnTimedOutRetried: a turn whose first attempt outlives
// Options.StepTimeout (its first tool call hangs until its context ends) is
// retried: the timed-out attempt aborts nothing, and the retry runs the
// interrupted call again and answers, so that the log is that of a run in
// process.
//
// (CONFORMANCE D11)
func TestTurnTimedOutRetried(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quiet)
	env := suite.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	env.SetTestTimeout(time.Minute)
	dir := t.TempDir()
	root, err := newAgent(dir, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var hung atomic.Bool
	hangOnce := &plugin.Plugin{Name: "hang-once", Callbacks: agent.Callbacks{BeforeTool: []agent.BeforeToolCallback{
		func(ctx context.Context, _ tool.Context, _ tool.Tool, _ map[string]any) (map[string]any, error) {
			if hung.CompareAndSwap(false, true) {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return nil, nil
		}}}}
	svc := memsession.NewService()
	app, err := runner.New(runner.Config{AppName: appName, Agent: root, Sessions: svc, Resumable: true, Plugins: []*plugin.Plugin{hangOnce}})
	if err != nil {
		t.Fatal(err)
	}
	if err := temporal.Register(env, app); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(context.Background(), session.Key{AppName: appName, UserID: user, SessionID: "s"}, nil); err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		if info.ActivityType.Name == "loom.Turn" {
			attempts.Add(1)
		}
	})
	env.RegisterDelayedCallback(func() {
		send(t, env, temporal.Message{RequestID: "r1", Content: text("slow")}, nil)
	}, time.Second)
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{
		App: appName, User: user, Session: "s", TreeHash: temporal.TreeHash(app.Tree()),
		Options: temporal.Options{StepTimeout: 2 * time.Second},
	})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	log := stored(t, app, "s")
	if !hung.Load() || attempts.Load() != 2 {
		t.Fatalf("hung %v, %d turn attempts: want the first attempt timed out and retried once\n%s", hung.Load(), attempts.Load(), shapeText(t, log))
	}
	if n := lines(t, dir, "slow.count"); n != 1 {
		t.Fatalf("the slow tool completed %d times, want 1", n)
	}
	got := shape(t, log)
	want := inProcess(t, memsession.NewService(), "slow")
	if !slices.Equal(got, want) {
		t.Fatalf("log on Temporal:\n%s\nin process:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestAnswerRetriedBeforeTool: a confirmation's answer whose turn timed
// out after it stored the answer and before the confirmed tool ran is
// retried: the retry resumes the paused invocation, the tool runs once,
// the answer is stored once, and the log is that of a run in process.
//
// (CONFORMANCE D11)
func TestAnswerRetriedBeforeTool(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quiet)
	env := suite.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	env.SetTestTimeout(time.Minute)
	dir := t.TempDir()
	root, err := newAgent(dir, 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var armed, hung atomic.Bool
	hangOnce := &plugin.Plugin{Name: "hang-once", Callbacks: agent.Callbacks{BeforeTool: []agent.BeforeToolCallback{
		func(ctx context.Context, _ tool.Context, tl tool.Tool, _ map[string]any) (map[string]any, error) {
			if tl.Name() == "pay" && armed.Load() && hung.CompareAndSwap(false, true) {
				<-ctx.Done() // the attempt times out
				return nil, ctx.Err()
			}
			return nil, nil
		}}}}
	svc := memsession.NewService()
	app, err := runner.New(runner.Config{AppName: appName, Agent: root, Sessions: svc, Resumable: true, Plugins: []*plugin.Plugin{hangOnce}})
	if err != nil {
		t.Fatal(err)
	}
	if err := temporal.Register(env, app); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(context.Background(), session.Key{AppName: appName, UserID: user, SessionID: "s"}, nil); err != nil {
		t.Fatal(err)
	}
	var attempts atomic.Int32
	env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		if info.ActivityType.Name == "loom.Turn" {
			attempts.Add(1)
		}
	})
	env.RegisterDelayedCallback(func() {
		send(t, env, temporal.Message{RequestID: "r1", Content: text("pay")}, nil)
	}, time.Second)
	env.RegisterDelayedCallback(func() {
		armed.Store(true)
		log := stored(t, app, "s")
		id, name := confirmationCall(t, log)
		send(t, env, temporal.Message{RequestID: "r2", Content: approve(id, name), After: log.Len()}, nil)
	}, time.Minute)
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{
		App: appName, User: user, Session: "s", TreeHash: temporal.TreeHash(app.Tree()),
		Options: temporal.Options{Idle: time.Hour, StepTimeout: 2 * time.Second},
	})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	log := stored(t, app, "s")
	if !hung.Load() || attempts.Load() != 3 {
		t.Fatalf("hung %v, %d turn attempts: want the answer's turn timed out once and retried\n%s", hung.Load(), attempts.Load(), shapeText(t, log))
	}
	if n := lines(t, dir, "pay.count"); n != 1 {
		t.Fatalf("the confirmed tool ran %d times, want 1", n)
	}
	got := shape(t, log)
	want := inProcess(t, memsession.NewService(), "pay")
	if !slices.Equal(got, want) {
		t.Fatalf("log on Temporal:\n%s\nin process:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestMessageAfterPastLogEnd: a message whose admission point lies past
// the end of the log (the session was deleted and created again since,
// or a client got it wrong) is stored once and answered, also when its
// turn's first attempt failed after storing it: the retry finds it by its
// id wherever it is.
//
// (CONFORMANCE D10)
func TestMessageAfterPastLogEnd(t *testing.T) {
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(quiet)
	env := suite.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{DeadlockDetectionTimeout: time.Minute})
	svc := memsession.NewService()
	app := transferApp(t, svc, "hello")
	if err := temporal.Register(env, app); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Create(context.Background(), session.Key{AppName: appName, UserID: user, SessionID: "s"}, nil); err != nil {
		t.Fatal(err)
	}
	var st temporal.Status
	env.RegisterDelayedCallback(func() {
		send(t, env, temporal.Message{RequestID: "r1", Content: text("hello"), After: 1000}, func(s temporal.Status, err error) {
			if err != nil {
				t.Errorf("update: %v", err)
			}
			st = s
		})
	}, time.Second)
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{
		App: appName, User: user, Session: "s", TreeHash: temporal.TreeHash(app.Tree()),
	})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	log := stored(t, app, "s")
	if got := userTexts(log); len(got) != 1 || st.Error != "" || lastText(log) != "root said root: hello" {
		t.Fatalf("user messages %q, status %+v: want the message stored once and answered\n%s", got, st, shapeText(t, log))
	}
}
