package a2aserver

import (
	"context"
	"errors"
	"iter"
	"sync/atomic"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
)

// winding is a request handler whose previous execution of task "t" runs
// until end is closed, as the SDK's does for a moment after its final
// event. It refuses a message while that execution runs, with an error
// settling cannot recognize by its text.
type winding struct {
	a2asrv.RequestHandler
	end   chan struct{}
	calls atomic.Int32
}

var errBusy = errors.New("busy")

func (w *winding) running() bool {
	select {
	case <-w.end:
		return false
	default:
		return true
	}
}

func (w *winding) OnSendMessage(ctx context.Context, p *a2a.MessageSendParams) (a2a.SendMessageResult, error) {
	w.calls.Add(1)
	if p.Message.TaskID == "t" && w.running() {
		return nil, errBusy
	}
	return &a2a.Task{ID: "t"}, nil
}

func (w *winding) OnSendMessageStream(ctx context.Context, p *a2a.MessageSendParams) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		res, err := w.OnSendMessage(ctx, p)
		yield(res, err)
	}
}

// OnResubscribeToTask follows the running execution until it ends, as the
// SDK does, and reports a task without one as not found.
func (w *winding) OnResubscribeToTask(ctx context.Context, p *a2a.TaskIDParams) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if p.ID != "t" || !w.running() {
			yield(nil, a2a.ErrTaskNotFound)
			return
		}
		select {
		case <-w.end:
		case <-ctx.Done():
			yield(nil, ctx.Err())
		}
	}
}

// (CONFORMANCE P2)
func TestSettling(t *testing.T) {
	onTask := &a2a.MessageSendParams{Message: &a2a.Message{TaskID: "t"}}
	other := &a2a.MessageSendParams{Message: &a2a.Message{TaskID: "u"}}
	ctx := context.Background()
	endSoon := func() *winding {
		w := &winding{end: make(chan struct{})}
		time.AfterFunc(20*time.Millisecond, func() { close(w.end) })
		return w
	}

	w := endSoon()
	if _, err := (settling{RequestHandler: w}).OnSendMessage(ctx, onTask); err != nil || w.calls.Load() != 1 {
		t.Errorf("send: err %v after %d calls, want success once the previous execution ended", err, w.calls.Load())
	}
	w = endSoon()
	var errs []error
	for ev, err := range (settling{RequestHandler: w}).OnSendMessageStream(ctx, onTask) {
		if err != nil {
			errs = append(errs, err)
		} else if ev == nil {
			t.Error("nil event")
		}
	}
	if len(errs) != 0 || w.calls.Load() != 1 {
		t.Errorf("stream: errors %v after %d calls, want the events once the previous execution ended", errs, w.calls.Load())
	}
	// A task without an execution, or a new task, is sent at once.
	w = &winding{end: make(chan struct{})}
	start := time.Now()
	if _, err := (settling{RequestHandler: w}).OnSendMessage(ctx, other); err != nil || time.Since(start) > settleWindow/2 {
		t.Errorf("idle task: err %v after %v", err, time.Since(start))
	}
	// The wait is bounded: a task that stays busy is refused by the SDK.
	w = &winding{end: make(chan struct{})}
	start = time.Now()
	if _, err := (settling{RequestHandler: w}).OnSendMessage(ctx, onTask); !errors.Is(err, errBusy) || w.calls.Load() != 1 || time.Since(start) < settleWindow {
		t.Errorf("always busy: err %v after %d calls and %v, want the refusal after %v", err, w.calls.Load(), time.Since(start), settleWindow)
	}
}

// blocking writes a task, then waits for release before completing it.
type blocking struct{ release chan struct{} }

func (b blocking) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	if rc.StoredTask == nil {
		if err := q.Write(ctx, a2a.NewSubmittedTask(rc, rc.Message)); err != nil {
			return err
		}
	}
	<-b.release
	ev := a2a.NewStatusUpdateEvent(rc, a2a.TaskStateInputRequired, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}

func (b blocking) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	return nil
}

// TestSettlingWaitsForTheSDK: the SDK refuses a second execution of a task
// while the first runs, and settling waits the first one out.
//
// (CONFORMANCE P2)
func TestSettlingWaitsForTheSDK(t *testing.T) {
	ctx := context.Background()
	b := blocking{release: make(chan struct{})}
	h := a2asrv.NewHandler(b)
	first := h.OnSendMessageStream(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "a"})})
	next, stop := iter.Pull2(first)
	defer stop()
	ev, err, _ := next()
	if err != nil {
		t.Fatal(err)
	}
	id := ev.TaskInfo().TaskID
	again := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "b"})
	again.TaskID = id
	if _, err := h.OnSendMessage(ctx, &a2a.MessageSendParams{Message: again}); err == nil {
		t.Fatal("second execution: the SDK accepted it while the first ran")
	}
	// Through settling, the second message waits for the first execution.
	done := make(chan error, 1)
	go func() {
		_, err := (settling{RequestHandler: h}).OnSendMessage(ctx, &a2a.MessageSendParams{Message: again})
		done <- err
	}()
	b.release <- struct{}{} // the first execution ends
	for {                   // the rest of the first stream
		_, err, ok := next()
		if !ok {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	b.release <- struct{}{} // the second one
	if err := <-done; err != nil {
		t.Errorf("settled second message: %v", err)
	}
}
