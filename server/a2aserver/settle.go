package a2aserver

import (
	"context"
	"iter"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
)

// settling wraps the SDK's request handler so that a message on a task
// whose previous execution is still winding down waits for it instead of
// failing. The SDK sends a task's final event to the client a moment
// before it forgets the execution, so a client that answers an
// input-required task at once may otherwise be refused with an internal
// error.
type settling struct {
	a2asrv.RequestHandler
}

// settleTries and settleDelay bound the wait: about 0.6 s in all.
const (
	settleTries = 8
	settleDelay = 5 * time.Millisecond
)

// inProgress reports whether err is the SDK's refusal of a second
// execution of a task (its error is internal to the SDK, so it is
// recognized by its text).
func inProgress(err error) bool {
	return err != nil && strings.Contains(err.Error(), "task execution is already in progress")
}

func onTask(p *a2a.MessageSendParams) bool {
	return p != nil && p.Message != nil && p.Message.TaskID != ""
}

// wait sleeps before try number i, or returns false when ctx is done.
func wait(ctx context.Context, i int) bool {
	t := time.NewTimer(settleDelay << i)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// OnSendMessage implements a2asrv.RequestHandler.
func (s settling) OnSendMessage(ctx context.Context, p *a2a.MessageSendParams) (a2a.SendMessageResult, error) {
	for i := 0; ; i++ {
		res, err := s.RequestHandler.OnSendMessage(ctx, p)
		if !inProgress(err) || !onTask(p) || i == settleTries-1 || !wait(ctx, i) {
			return res, err
		}
	}
}

// OnSendMessageStream implements a2asrv.RequestHandler.
func (s settling) OnSendMessageStream(ctx context.Context, p *a2a.MessageSendParams) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		for i := 0; ; i++ {
			first, retry := true, false
			for ev, err := range s.RequestHandler.OnSendMessageStream(ctx, p) {
				if first && inProgress(err) && onTask(p) && i < settleTries-1 {
					retry = true
					break
				}
				first = false
				if !yield(ev, err) {
					return
				}
			}
			if !retry || !wait(ctx, i) {
				return
			}
		}
	}
}
