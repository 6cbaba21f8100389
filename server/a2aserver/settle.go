package a2aserver

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
)

// settling wraps the SDK's request handler so that a message on a task
// whose previous execution is still winding down waits for it instead of
// failing. The SDK sends a task's final event to the client a moment
// before it forgets the execution, so a client that answers an
// input-required task at once would otherwise be refused. It also refuses
// a reply that answers none of a paused task's calls before the SDK
// records it (checkReply), and a resubscription to another user's task.
type settling struct {
	a2asrv.RequestHandler
	store *taskStore // the handler's task store, to check replies
}

// settleWindow bounds the wait for a task's previous execution; a task
// still busy after it is refused by the SDK.
const settleWindow = 600 * time.Millisecond

func onTask(p *a2a.MessageSendParams) bool {
	return p != nil && p.Message != nil && p.Message.TaskID != ""
}

// settle waits, for settleWindow at the most, until the SDK runs no
// execution of the task p continues. It asks the SDK itself: a
// resubscription follows the running execution to its end, and is refused
// with a2a.ErrTaskNotFound once the SDK has forgotten it, which is when
// the SDK accepts a new one.
func (s settling) settle(ctx context.Context, p *a2a.MessageSendParams) {
	if !onTask(p) {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, settleWindow)
	defer cancel()
	for {
		gone := false
		for _, err := range s.RequestHandler.OnResubscribeToTask(wctx, &a2a.TaskIDParams{ID: p.Message.TaskID}) {
			gone = gone || errors.Is(err, a2a.ErrTaskNotFound)
		}
		if gone || wctx.Err() != nil {
			return
		}
		// The execution has ended but the SDK is still forgetting it.
		runtime.Gosched()
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
	s.settle(ctx, p)
	return s.RequestHandler.OnSendMessage(ctx, p)
}

// OnSendMessageStream implements a2asrv.RequestHandler.
func (s settling) OnSendMessageStream(ctx context.Context, p *a2a.MessageSendParams) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if err := s.checkReply(ctx, p); err != nil {
			yield(nil, err)
			return
		}
		s.settle(ctx, p)
		for ev, err := range s.RequestHandler.OnSendMessageStream(ctx, p) {
			if !yield(ev, err) {
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
