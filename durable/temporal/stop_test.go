package temporal_test

import (
	"context"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loomkit/loom/durable/temporal"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/storage"
)

// TestWorkerStoppedMidTool: the worker running a slow tool is stopped
// (worker.Stop, as a deploy stops it) in the middle of the call; another
// worker takes the turn over. A stop is no cancellation of the session:
// the invocation is not aborted (no INVOCATION_ABORTED response is
// committed), the tool runs again and completes once, and the log equals
// that of an uninterrupted run in process.
//
// (CONFORMANCE D11)
func TestWorkerStoppedMidTool(t *testing.T) {
	c := dial(t)
	ctx := context.Background()
	svc := sessionsIn(t)
	dir := t.TempDir()
	app, err := newApp(dir, 3*time.Second, svc)
	if err != nil {
		t.Fatal(err)
	}
	k := session.Key{AppName: appName, UserID: user, SessionID: "stopped-" + newQueue()}
	if _, err := svc.Create(ctx, k, nil); err != nil {
		t.Fatal(err)
	}
	queue := newQueue()
	first, err := temporal.NewWorker(c, queue, app)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	cl, err := temporal.NewClient(temporal.ClientConfig{Client: c, TaskQueue: queue, Options: temporal.Options{HeartbeatTimeout: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	done := collect(cl.Run(ctx, app, user, k.SessionID, text("slow"), nil))
	waitFor(t, time.Minute, "the slow tool to start", func() bool { return lines(t, dir, "slow.started") == 1 })
	first.Stop()
	inProcessWorker(t, c, queue, app)
	select {
	case res := <-done:
		if res.err != nil {
			t.Fatalf("run: %v", res.err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the turn was not taken over")
	}
	log, err := svc.Get(ctx, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range log.Events() {
		if event.IsAbort(ev) {
			t.Fatalf("the stopped worker aborted the invocation:\n%s", shapeText(t, log))
		}
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

// TestWorkerFrozenPastTakeover: the worker running a slow tool is frozen
// (SIGSTOP) long enough for another worker to take the turn over and
// finish it, then thawed: its attempt, which nothing cancelled, goes on
// as a zombie (its tool completes a second time, as a tool interrupted by
// a crash runs again), but commits nothing: the log equals that of an
// uninterrupted in-process run.
//
// (CONFORMANCE D12)
func TestWorkerFrozenPastTakeover(t *testing.T) {
	c := dial(t)
	dir := t.TempDir()
	db := "sqlite://" + dir + "/sessions.db"
	ctx := context.Background()
	svc, err := storage.OpenSessions(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	app, err := newApp(dir, 0, svc)
	if err != nil {
		t.Fatal(err)
	}
	k := session.Key{AppName: appName, UserID: user, SessionID: "frozen-" + newQueue()}
	if _, err := svc.Create(ctx, k, nil); err != nil {
		t.Fatal(err)
	}
	queue := newQueue()
	first := startWorker(t, queue, dir, db, 3*time.Second)
	t.Cleanup(func() { _ = first.Process.Signal(syscall.SIGCONT); _ = first.Process.Kill(); _ = first.Wait() })
	cl, err := temporal.NewClient(temporal.ClientConfig{Client: c, TaskQueue: queue, Options: temporal.Options{HeartbeatTimeout: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	done := collect(cl.Run(ctx, app, user, k.SessionID, text("slow"), nil))
	waitFor(t, time.Minute, "the slow tool to start", func() bool { return lines(t, dir, "slow.started") == 1 })
	if err := first.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	startWorker(t, queue, dir, db, 200*time.Millisecond)
	select {
	case res := <-done:
		if res.err != nil {
			t.Fatalf("run: %v", res.err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the turn was not taken over")
	}
	if err := first.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	// The zombie's tool completes; whatever it then tries to commit fails.
	waitFor(t, 30*time.Second, "the frozen worker's tool to complete", func() bool { return lines(t, dir, "slow.count") == 2 })
	time.Sleep(3 * time.Second)
	log, err := svc.Get(ctx, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := shape(t, log)
	want := inProcess(t, sessionsIn(t), "slow")
	if !slices.Equal(got, want) {
		t.Fatalf("log on Temporal:\n%s\nuninterrupted, in process:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
