package a2aserver

import (
	"context"
	"fmt"
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
// error. It also refuses a reply that answers none of a paused task's
// calls before the SDK records it (checkReply), and a resubscription to
// another user's task.
type settling struct {
	a2asrv.RequestHandler
	store *taskStore // the handler's task store, to check replies
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

// checkReply refuses, before the SDK records anything, a message on a
// paused task that does not answer its pausing calls: the SDK appends a
// message to the task's history before the executor reads it, and ends
// the task as failed when the executor refuses it, so a bad reply would
// otherwise lose the pause for good. A task the caller cannot read (an
// unknown one, or another user's) is not found, even while it runs: the
// SDK would report a running task as busy whoever asks.
func (s settling) checkReply(ctx context.Context, p *a2a.MessageSendParams) error {
	if !onTask(p) || s.store == nil {
		return nil
	}
	task, err := s.store.Get(ctx, p.Message.TaskID)
	if err != nil {
		return err
	}
	calls := pendingCalls(task)
	if len(calls) == 0 {
		return nil
	}
	if _, err := answers(calls, p.Message.Parts); err != nil {
		return fmt.Errorf("%w: %w", a2a.ErrInvalidParams, err)
	}
	return nil
}

// OnSendMessage implements a2asrv.RequestHandler.
func (s settling) OnSendMessage(ctx context.Context, p *a2a.MessageSendParams) (a2a.SendMessageResult, error) {
	if err := s.checkReply(ctx, p); err != nil {
		return nil, err
	}
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
		if err := s.checkReply(ctx, p); err != nil {
			yield(nil, err)
			return
		}
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

// OnResubscribeToTask implements a2asrv.RequestHandler. The SDK finds the
// running execution by task id alone, so the task is first read from the
// store, which answers only the user who started it: any other caller is
// told the task is not found.
func (s settling) OnResubscribeToTask(ctx context.Context, p *a2a.TaskIDParams) iter.Seq2[a2a.Event, error] {
	if p != nil && s.store != nil {
		if _, err := s.store.Get(ctx, p.ID); err != nil {
			return func(yield func(a2a.Event, error) bool) { yield(nil, a2a.ErrTaskNotFound) }
		}
	}
	return s.RequestHandler.OnResubscribeToTask(ctx, p)
}
