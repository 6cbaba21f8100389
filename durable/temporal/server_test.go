package temporal_test

// Tests against a real Temporal development server, started by
// scripts/temporal.sh, whose address is given in LOOM_TEMPORAL_ADDR.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/durable/temporal"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/storage"
)

// Environment of a worker process started by a test (see TestMain).
const (
	envWorker = "LOOM_TEMPORAL_TEST_WORKER" // the task queue
	envDir    = "LOOM_TEMPORAL_TEST_DIR"
	envDB     = "LOOM_TEMPORAL_TEST_DB"
	envSlow   = "LOOM_TEMPORAL_TEST_SLOW"
	// envDesk makes the worker run the support desk (examples/workflow)
	// instead of the test app; "die" makes it kill itself (SIGKILL) right
	// after it commits a request for input.
	envDesk = "LOOM_TEMPORAL_TEST_DESK"
	// envStream makes the worker run the streaming app (streamApp).
	envStream = "LOOM_TEMPORAL_TEST_STREAM"
)

func TestMain(m *testing.M) {
	if queue := os.Getenv(envWorker); queue != "" {
		os.Exit(workerMain(queue))
	}
	os.Exit(m.Run())
}

// workerMain runs a worker of the test app until the process is killed.
func workerMain(queue string) int {
	ctx := context.Background()
	slow, err := time.ParseDuration(os.Getenv(envSlow))
	if err != nil {
		return fail(err)
	}
	svc, err := storage.OpenSessions(ctx, os.Getenv(envDB))
	if err != nil {
		return fail(err)
	}
	app, err := newApp(os.Getenv(envDir), slow, svc)
	if os.Getenv(envStream) != "" {
		app, err = streamApp(os.Getenv(envDir), svc)
	}
	if desk := os.Getenv(envDesk); desk != "" {
		var plugins []*plugin.Plugin
		if desk == "die" {
			plugins = append(plugins, &plugin.Plugin{Name: "die", OnEvent: func(_ context.Context, _ *agent.Invocation, ev *event.Event) (*event.Event, error) {
				if calls, kinds := agent.PausingCalls(ev); len(calls) > 0 && kinds[0] == agent.PauseInput {
					_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
					select {} // the signal is on its way
				}
				return nil, nil
			}})
		}
		app, err = supportDeskOver(svc, plugins...)
	}
	if err != nil {
		return fail(err)
	}
	c, err := client.Dial(client.Options{HostPort: os.Getenv("LOOM_TEMPORAL_ADDR"), Logger: quiet})
	if err != nil {
		return fail(err)
	}
	w, err := temporal.NewWorker(c, queue, app)
	if err != nil {
		return fail(err)
	}
	if err := w.Run(nil); err != nil {
		return fail(err)
	}
	return 0
}

func fail(err error) int {
	os.Stderr.WriteString("test worker: " + err.Error() + "\n")
	return 1
}

// temporalAddr returns the address of the Temporal server, or skips the
// test (fails it under CI) when there is none.
func temporalAddr(t *testing.T) string {
	t.Helper()
	addr := os.Getenv("LOOM_TEMPORAL_ADDR")
	if addr == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("LOOM_TEMPORAL_ADDR is not set; run scripts/temporal.sh")
		}
		t.Skip("LOOM_TEMPORAL_ADDR is not set; run scripts/temporal.sh to start a Temporal development server")
	}
	return addr
}

func dial(t *testing.T) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{HostPort: temporalAddr(t), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// newQueue returns a task queue of the test's own, so that no other
// worker takes its tasks.
func newQueue() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "loom-test-" + hex.EncodeToString(b[:])
}

// startWorker starts a worker process of the test app on queue; env adds
// to its environment.
func startWorker(t *testing.T, queue, dir, db string, slow time.Duration, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envWorker+"="+queue, envDir+"="+dir, envDB+"="+db, envSlow+"="+slow.String())
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type result struct {
	events []*event.Event
	err    error
}

// collect runs it in the background and delivers what it yielded.
func collect(it func(func(*event.Event, error) bool)) <-chan result {
	ch := make(chan result, 1)
	go func() {
		var r result
		for ev, err := range it {
			if err != nil {
				r.err = err
				break
			}
			r.events = append(r.events, ev)
		}
		ch <- r
	}()
	return ch
}

// TestWorkerKilledMidTool: the worker process running a slow tool is
// killed (SIGKILL) in the middle of the call; a second worker finishes the
// invocation. The tool completed exactly once, the session log equals that
// of an uninterrupted in-process run, and the client streamed every event
// from the log in order, although the workflow ran in other processes.
//
// (CONFORMANCE D1, D6)
func TestWorkerKilledMidTool(t *testing.T) {
	c := dial(t)
	dir := t.TempDir()
	db := "sqlite://" + dir + "/sessions.db"
	ctx := context.Background()
	svc, err := storage.OpenSessions(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	app, err := newApp(dir, 0, svc) // the client's copy of the app: its tree, never its tools
	if err != nil {
		t.Fatal(err)
	}
	k := session.Key{AppName: appName, UserID: user, SessionID: "killed-" + newQueue()} // a workflow id of its own on a shared server
	if _, err := svc.Create(ctx, k, nil); err != nil {
		t.Fatal(err)
	}
	queue := newQueue()
	first := startWorker(t, queue, dir, db, time.Minute)
	cl, err := temporal.NewClient(temporal.ClientConfig{Client: c, TaskQueue: queue, Options: temporal.Options{HeartbeatTimeout: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	done := collect(cl.Run(ctx, app, user, k.SessionID, text("slow"), nil))

	waitFor(t, time.Minute, "the slow tool to start", func() bool { return lines(t, dir, "slow.started") == 1 })
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	if n := lines(t, dir, "slow.count"); n != 0 {
		t.Fatalf("the killed call completed %d times", n)
	}
	startWorker(t, queue, dir, db, 200*time.Millisecond)

	var res result
	select {
	case res = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the invocation did not finish on the second worker")
	}
	if res.err != nil {
		t.Fatalf("run: %v", res.err)
	}
	if n := lines(t, dir, "slow.count"); n != 1 {
		t.Fatalf("the tool completed %d times, want 1", n)
	}
	if n := lines(t, dir, "slow.started"); n != 2 {
		t.Fatalf("the tool started %d times, want 2 (the killed call, then its retry)", n)
	}
	sess, err := svc.Get(ctx, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := shape(t, sess)
	want := inProcess(t, sessionsIn(t), "slow")
	if !slices.Equal(got, want) {
		t.Fatalf("log on Temporal:\n%s\nuninterrupted, in process:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var ids []string
	for _, ev := range sess.Events()[1:] {
		ids = append(ids, ev.ID)
	}
	var streamed []string
	for _, ev := range res.events {
		streamed = append(streamed, ev.ID)
	}
	if !slices.Equal(streamed, ids) {
		t.Fatalf("streamed events %v, want the log's %v", streamed, ids)
	}
}

// sessionsIn returns a fresh session service for a reference run.
func sessionsIn(t *testing.T) *session.Service {
	t.Helper()
	svc, err := storage.OpenSessions(context.Background(), "memory://")
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// serverApp returns, on a real server, the test app over svc, a new
// session of it (its id starting with prefix), a client with an
// in-process worker, and the app's directory.
func serverApp(t *testing.T, svc *session.Service, prefix string) (*runner.Runner, session.Key, *temporal.Client, string) {
	t.Helper()
	c := dial(t)
	dir := t.TempDir()
	app, err := newApp(dir, 0, svc)
	if err != nil {
		t.Fatal(err)
	}
	k := session.Key{AppName: appName, UserID: user, SessionID: prefix + newQueue()}
	if _, err := svc.Create(context.Background(), k, nil); err != nil {
		t.Fatal(err)
	}
	return app, k, inProcessClient(t, c, app, temporal.Options{}), dir
}

// inProcessWorker runs a worker of app in the test process.
func inProcessWorker(t *testing.T, c client.Client, queue string, app *runner.Runner) {
	t.Helper()
	w, err := temporal.NewWorker(c, queue, app)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
}

// inProcessClient starts a worker of app in this process, on a task queue
// of the test's own, and returns a client of that queue.
func inProcessClient(t *testing.T, c client.Client, app *runner.Runner, opts temporal.Options) *temporal.Client {
	t.Helper()
	queue := newQueue()
	inProcessWorker(t, c, queue, app)
	cl, err := temporal.NewClient(temporal.ClientConfig{Client: c, TaskQueue: queue, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// TestCancelStopsWorkflow: Cancel cancels the session's workflow while its
// slow tool runs: the tool stops, the client's stream ends with an error,
// and the workflow is cancelled.
//
// (CONFORMANCE D2)
func TestCancelStopsWorkflow(t *testing.T) {
	c := dial(t)
	dir := t.TempDir()
	ctx := context.Background()
	svc := sessionsIn(t)
	app, err := newApp(dir, time.Minute, svc)
	if err != nil {
		t.Fatal(err)
	}
	k := session.Key{AppName: appName, UserID: user, SessionID: "cancelled-" + newQueue()}
	if _, err := svc.Create(ctx, k, nil); err != nil {
		t.Fatal(err)
	}
	cl := inProcessClient(t, c, app, temporal.Options{HeartbeatTimeout: time.Second})
	done := collect(cl.Run(ctx, app, user, k.SessionID, text("slow"), nil))
	waitFor(t, time.Minute, "the slow tool to start", func() bool { return lines(t, dir, "slow.started") == 1 })
	if err := cl.Cancel(ctx, app, user, k.SessionID); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.err == nil || !strings.Contains(strings.ToLower(res.err.Error()), "cancel") {
			t.Fatalf("run error = %v, want a cancellation", res.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the stream did not end after the cancellation")
	}
	waitFor(t, 30*time.Second, "the workflow to be cancelled", func() bool {
		d, err := c.DescribeWorkflowExecution(ctx, temporal.WorkflowID(appName, user, k.SessionID), "")
		return err == nil && d.WorkflowExecutionInfo.Status == enums.WORKFLOW_EXECUTION_STATUS_CANCELED
	})
	if n := lines(t, dir, "slow.count"); n != 0 {
		t.Fatalf("the cancelled tool completed %d times", n)
	}
	// The worker closed the aborted invocation in the log (CONFORMANCE
	// R13): the slow call is answered with the abort response. (The
	// workflow may be reported cancelled before its activity has stopped.)
	var last *event.Event
	waitFor(t, 30*time.Second, "the abort event", func() bool {
		sess, err := svc.Get(ctx, k, nil)
		if err != nil {
			t.Fatal(err)
		}
		last = sess.At(sess.Len() - 1)
		return event.IsAbort(last)
	})
	if frs := last.FunctionResponses(); len(frs) != 1 || frs[0].Response["error"] != event.AbortMessage {
		t.Fatalf("the cancelled invocation ends with %+v, want the slow call's abort response", last)
	}
}

// TestR7LimitOnServer: on a real server, a message whose agent's model
// always calls a tool, sent with MaxLLMCalls 3, ends with an error wrapping
// agent.ErrLLMCallLimit after exactly 3 model calls, as Runner.Run would.
func TestR7LimitOnServer(t *testing.T) {
	ctx := context.Background()
	app, k, cl, dir := serverApp(t, sessionsIn(t), "limit-")
	var res result
	select {
	case res = <-collect(cl.Run(ctx, app, user, k.SessionID, text("loop"), &runner.RunOptions{MaxLLMCalls: 3})):
	case <-time.After(time.Minute):
		t.Fatalf("the invocation did not end (%d model calls)", lines(t, dir, "loop.model"))
	}
	if !errors.Is(res.err, agent.ErrLLMCallLimit) {
		t.Fatalf("run error = %v, want agent.ErrLLMCallLimit", res.err)
	}
	if n := lines(t, dir, "loop.model"); n != 3 {
		t.Fatalf("the model was called %d times, want 3", n)
	}
	calls := 0
	for _, ev := range res.events {
		calls += len(ev.FunctionCalls())
	}
	if calls != 3 {
		t.Fatalf("streamed %d tool calls, want 3", calls)
	}
}

// TestWorkflowIDPrefixSeparatesDeployments: two deployments share the
// Temporal server, each with its own session store, task queue and
// workflow id prefix, and the same session id. A message to each runs on
// its own workflow, over its own store: each log holds its own
// conversation only.
func TestWorkflowIDPrefixSeparatesDeployments(t *testing.T) {
	c := dial(t)
	ctx := context.Background()
	sid := "shared-" + newQueue()
	type deployment struct {
		app *runner.Runner
		cl  *temporal.Client
	}
	var deps []deployment
	for _, prefix := range []string{"loom-a", "loom-b"} {
		svc := sessionsIn(t)
		app, err := newApp(t.TempDir(), 0, svc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Create(ctx, session.Key{AppName: appName, UserID: user, SessionID: sid}, nil); err != nil {
			t.Fatal(err)
		}
		queue := newQueue()
		inProcessWorker(t, c, queue, app)
		cl, err := temporal.NewClient(temporal.ClientConfig{Client: c, TaskQueue: queue, WorkflowIDPrefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		deps = append(deps, deployment{app, cl})
	}
	if a, b := deps[0].cl.WorkflowID(appName, user, sid), deps[1].cl.WorkflowID(appName, user, sid); a == b {
		t.Fatalf("both deployments use workflow id %s", a)
	}
	for i, d := range deps {
		var res result
		select {
		case res = <-collect(d.cl.Run(ctx, d.app, user, sid, text(fmt.Sprint("hello ", i)), nil)):
		case <-time.After(time.Minute):
			t.Fatalf("deployment %d: the message did not finish", i)
		}
		if res.err != nil {
			t.Fatalf("deployment %d: %v", i, res.err)
		}
	}
	for i, d := range deps {
		sess, err := d.app.Sessions().Get(ctx, session.Key{AppName: appName, UserID: user, SessionID: sid}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Join(shape(t, sess), "\n")
		if !strings.Contains(got, fmt.Sprintf(`text="echo hello %d"`, i)) || strings.Contains(got, fmt.Sprintf("hello %d", 1-i)) {
			t.Fatalf("deployment %d's log:\n%s\nwant its own conversation only", i, got)
		}
		d, err := c.DescribeWorkflowExecution(ctx, d.cl.WorkflowID(appName, user, sid), "")
		if err != nil {
			t.Fatalf("deployment %d's workflow: %v", i, err)
		}
		if d.WorkflowExecutionInfo.Execution.WorkflowId == "" {
			t.Fatalf("deployment %d: no workflow", i)
		}
	}
}

// TestWorkflowAppWorkerKilled: the bundled workflow app (examples/workflow)
// on a real server, end to end. The worker commits approve's request for
// input and is killed (SIGKILL) before its Step ends; a second worker
// takes the Step over: the refund request ends paused with the one
// request, which is not asked again. The answer, later, runs settle once,
// and the log equals that of the same conversation in process.
// (CONFORMANCE T10, D6)
func TestWorkflowAppWorkerKilled(t *testing.T) {
	c := dial(t)
	dir := t.TempDir()
	db := "sqlite://" + dir + "/sessions.db"
	ctx := context.Background()
	svc, err := storage.OpenSessions(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	app, err := supportDeskOver(svc) // the client's copy: its tree
	if err != nil {
		t.Fatal(err)
	}
	k := session.Key{AppName: app.AppName(), UserID: user, SessionID: "desk-" + newQueue()}
	if _, err := svc.Create(ctx, k, nil); err != nil {
		t.Fatal(err)
	}
	queue := newQueue()
	first := startWorker(t, queue, dir, db, 0, envDesk+"=die")
	cl, err := temporal.NewClient(temporal.ClientConfig{Client: c, TaskQueue: queue, Options: temporal.Options{HeartbeatTimeout: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	done := collect(cl.Run(ctx, app, user, k.SessionID, text("I want a refund for order 77"), nil))
	exited := make(chan error, 1)
	go func() { exited <- first.Wait() }()
	select {
	case err := <-exited:
		if !strings.Contains(fmt.Sprint(err), "killed") {
			t.Fatalf("the first worker ended with %v, want it killed", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the first worker did not commit the request for input")
	}
	startWorker(t, queue, dir, db, 0, envDesk+"=1")
	var res result
	select {
	case res = <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the refund request did not end on the second worker")
	}
	if res.err != nil {
		t.Fatalf("refund request: %v", res.err)
	}
	sess, err := svc.Get(ctx, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	if calls := pausingCalls(sess); len(calls) != 1 {
		t.Fatalf("after the kill the log holds %d requests %v, want 1", len(calls), calls)
	}
	time.Sleep(time.Second) // the answer comes later: the workflow waits
	answer := answerLast(map[string]any{"approved": true})(t, sess)
	select {
	case res = <-collect(cl.Run(ctx, app, user, k.SessionID, answer, nil)):
	case <-time.After(2 * time.Minute):
		t.Fatal("the answer did not finish")
	}
	if res.err != nil {
		t.Fatalf("answer: %v", res.err)
	}
	settled := 0
	for _, ev := range res.events {
		if ev.Author == "settle" && strings.Contains(ev.Text(), "order A-77 is on its way") {
			settled++
		}
	}
	if settled != 1 {
		t.Fatalf("the answer streamed settle's message %d times, want 1", settled)
	}
	if sess, err = svc.Get(ctx, k, nil); err != nil {
		t.Fatal(err)
	}
	ref, err := supportDeskOver(sessionsIn(t))
	if err != nil {
		t.Fatal(err)
	}
	sameLogs(t, sess, converseInProcess(t, ref, refund...))
}
