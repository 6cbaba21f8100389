package temporal_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/durable/temporal"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
)

// TestSignalledStepTimedOutNotAborted: in a session workflow of the kind
// that took messages as signals, a Step that outlives Options.StepTimeout
// in the middle of a tool call aborts nothing: the invocation stays as a
// crash leaves it, for the Step's next attempt.
//
// (CONFORMANCE D11)
func TestSignalledStepTimedOutNotAborted(t *testing.T) {
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
	env.OnGetVersion("loom.turns", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	if _, err := svc.Create(context.Background(), session.Key{AppName: appName, UserID: user, SessionID: "s"}, nil); err != nil {
		t.Fatal(err)
	}
	env.RegisterDelayedCallback(func() {
		// The test environment does not retry a timed-out activity, as a
		// server does: the message's status is the timeout.
		send(t, env, temporal.Message{RequestID: "r1", Content: text("slow")}, func(temporal.Status, error) {})
	}, time.Second)
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{
		App: appName, User: user, Session: "s", TreeHash: temporal.TreeHash(app.Tree()),
		Options: temporal.Options{StepTimeout: 2 * time.Second},
	})
	log := stored(t, app, "s")
	if !hung.Load() {
		t.Fatal("the Step did not hang")
	}
	for _, ev := range log.Events() {
		if event.IsAbort(ev) {
			t.Fatalf("the timed-out Step aborted the invocation:\n%s", shapeText(t, log))
		}
	}
}
