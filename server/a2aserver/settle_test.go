package a2aserver

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
)

// busy refuses the first n messages as the SDK refuses a second execution
// of a task.
type busy struct {
	a2asrv.RequestHandler
	n, calls int
}

var errBusy = fmt.Errorf("wrapped: %w", errors.New("task execution is already in progress"))

func (b *busy) OnSendMessage(ctx context.Context, p *a2a.MessageSendParams) (a2a.SendMessageResult, error) {
	b.calls++
	if b.calls <= b.n {
		return nil, errBusy
	}
	return &a2a.Task{ID: "t"}, nil
}

func (b *busy) OnSendMessageStream(ctx context.Context, p *a2a.MessageSendParams) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		b.calls++
		if b.calls <= b.n {
			yield(nil, errBusy)
			return
		}
		yield(&a2a.Task{ID: "t"}, nil)
	}
}

func TestSettling(t *testing.T) {
	onTask := &a2a.MessageSendParams{Message: &a2a.Message{TaskID: "t"}}
	fresh := &a2a.MessageSendParams{Message: &a2a.Message{}}
	ctx := context.Background()

	b := &busy{n: 2}
	if _, err := (settling{RequestHandler: b}).OnSendMessage(ctx, onTask); err != nil || b.calls != 3 {
		t.Errorf("send: err %v after %d calls, want success on the third", err, b.calls)
	}
	b = &busy{n: 2}
	var errs []error
	for ev, err := range (settling{RequestHandler: b}).OnSendMessageStream(ctx, onTask) {
		if err != nil {
			errs = append(errs, err)
		} else if ev == nil {
			t.Error("nil event")
		}
	}
	if len(errs) != 0 || b.calls != 3 {
		t.Errorf("stream: errors %v after %d calls, want the events of the third", errs, b.calls)
	}
	// A new task is never the one in progress: no retry.
	b = &busy{n: 1}
	if _, err := (settling{RequestHandler: b}).OnSendMessage(ctx, fresh); !errors.Is(err, errBusy) || b.calls != 1 {
		t.Errorf("new task: err %v after %d calls, want the refusal at once", err, b.calls)
	}
	// The wait is bounded.
	b = &busy{n: 100}
	if _, err := (settling{RequestHandler: b}).OnSendMessage(ctx, onTask); !errors.Is(err, errBusy) || b.calls != settleTries {
		t.Errorf("always busy: err %v after %d calls, want the refusal after %d", err, b.calls, settleTries)
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

// TestInProgressMatchesTheSDK: the SDK's refusal of a second execution of
// a task is the error inProgress recognizes, and settling waits it out.
func TestInProgressMatchesTheSDK(t *testing.T) {
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
	if _, err := h.OnSendMessage(ctx, &a2a.MessageSendParams{Message: again}); !inProgress(err) {
		t.Fatalf("second execution: err = %v, want the SDK's in-progress refusal", err)
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
