package temporal

import (
	"context"
	"errors"
	"fmt"

	sdktemporal "go.temporal.io/sdk/temporal"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
)

// errInvalidType is the type of the application error for a request the
// runner refuses (runner.ErrInvalid, a missing session): retrying it
// cannot help.
const errInvalidType = "LoomInvalid"

// errLLMCallLimitType is the type of the application error for an
// invocation that exceeded its model-call limit (agent.ErrLLMCallLimit):
// it has ended, as it would in process, and a retry would fail again.
const errLLMCallLimitType = "LoomLLMCallLimit"

// activities runs turns on the runners of a worker.
type activities struct {
	apps map[string]*runner.Runner
	hash map[string]string
}

func newActivities(apps []*runner.Runner) (*activities, error) {
	a := &activities{apps: map[string]*runner.Runner{}, hash: map[string]string{}}
	for _, r := range apps {
		if r == nil {
			return nil, errors.New("temporal: nil runner")
		}
		if !r.Resumable() {
			// A turn taken over by another worker resumes the invocation
			// from the log: workflow agents need their checkpoints for it.
			return nil, fmt.Errorf("temporal: app %q is not resumable: set runner.Config.Resumable to run it on Temporal", r.AppName())
		}
		if _, dup := a.apps[r.AppName()]; dup {
			return nil, fmt.Errorf("temporal: two apps named %q", r.AppName())
		}
		a.apps[r.AppName()] = r
		a.hash[r.AppName()] = TreeHash(r.Tree())
	}
	return a, nil
}

// app returns the runner of the session's app after checking that it runs
// the agent tree the workflow started with.
func (a *activities) app(in SessionInput) (*runner.Runner, error) {
	r := a.apps[in.App]
	if r == nil {
		return nil, sdktemporal.NewNonRetryableApplicationError(fmt.Sprintf("temporal: this worker does not serve app %q", in.App), errInvalidType, nil)
	}
	if h := a.hash[in.App]; h != in.TreeHash {
		return nil, sdktemporal.NewNonRetryableApplicationError(
			fmt.Sprintf("temporal: agent tree of app %q changed: the workflow started with tree %s, this worker runs tree %s; the invocation is not continued", in.App, in.TreeHash, h),
			errTreeChanged, nil)
	}
	return r, nil
}

func key(in SessionInput) session.Key {
	return session.Key{AppName: in.App, UserID: in.User, SessionID: in.Session}
}

// mark returns the length of the session log: where the next message goes.
// It reads no event.
func (a *activities) mark(ctx context.Context, in SessionInput) (int, error) {
	r, err := a.app(in)
	if err != nil {
		return 0, err
	}
	sess, err := r.Sessions().Get(ctx, key(in), &session.GetOptions{NoEvents: true})
	if err != nil {
		return 0, classify(err)
	}
	return int(sess.Seq()), nil
}

// turn runs a message's invocation until it ends or pauses, and publishes
// every event it yields to the client of the message if that waits in this
// process (feeds). It reads the session log from in.WaitFrom on only:
// the message's own events and those of calls still waiting (the runner
// reads the rest, once, into the session it keeps). A message of the user
// stored past in.From was stored by an earlier attempt of the turn, killed
// or failed: the turn resumes its invocation from the log instead of
// storing the message again, and runs no tool call whose response was
// committed.
func (a *activities) turn(ctx context.Context, in turnInput) (turnResult, error) {
	r, err := a.app(in.Session)
	if err != nil {
		return turnResult{}, err
	}
	msg := in.Message
	// Nothing before from waits for the client, and from <= From.
	from := max(min(in.WaitFrom, in.From), 0)
	log, err := since(ctx, r, in.Session, from)
	if err != nil {
		return turnResult{}, err
	}
	out := turnResult{Floor: int(log.Seq())}
	var events func(func(*event.Event, error) bool)
	if i, id, ok := storedMessage(log, in.From); ok {
		out.Floor, out.InvocationID = i, id
		events = r.Resume(ctx, in.Session.User, in.Session.Session, id, &runner.RunOptions{Streaming: msg.Streaming, MaxLLMCalls: msg.MaxLLMCalls})
	} else {
		events = r.Run(ctx, in.Session.User, in.Session.Session, msg.Content, &runner.RunOptions{
			Streaming: msg.Streaming, StateDelta: msg.StateDelta, InvocationID: msg.InvocationID, MaxLLMCalls: msg.MaxLLMCalls,
		})
	}
	publish := feeds.publisher(msg.RequestID)
	for ev, err := range events {
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return turnResult{}, cerr // cancelled: the failure is its consequence
			}
			return turnResult{}, classify(err)
		}
		publish(ev)
		if !ev.Partial {
			out.InvocationID = ev.InvocationID
		}
	}
	if err := ctx.Err(); err != nil {
		return turnResult{}, err
	}
	// Whether calls wait is in the log from from on, with what the turn
	// appended.
	if err := r.Sessions().Refresh(ctx, log); err != nil {
		return turnResult{}, classify(err)
	}
	if out.InvocationID == "" {
		// Nothing was yielded (a plugin answered, or the agents were
		// silent): the message is the invocation's only trace.
		_, out.InvocationID, _ = storedMessage(log, out.Floor)
	}
	out.End = int(log.Seq())
	out.WaitFrom, out.Paused = waitingFrom(log)
	return out, nil
}

// since reads the session log from index from on. The session it returns
// holds the last events of the log: its first is at index Seq() - Len().
func since(ctx context.Context, r *runner.Runner, in SessionInput, from int) (*session.Session, error) {
	sess, err := r.Sessions().Get(ctx, key(in), &session.GetOptions{AfterSeq: int64(from)})
	if err != nil {
		return nil, classify(err)
	}
	return sess, nil
}

// offset returns the log index of the first event of a session read by
// since.
func offset(log *session.Session) int { return int(log.Seq()) - log.Len() }

// storedMessage returns the log index and the invocation of the first
// message of the user (an event of the user with content: a state change
// has none) at or after index floor.
func storedMessage(log *session.Session, floor int) (int, string, bool) {
	off := offset(log)
	start := min(max(floor-off, 0), log.Len())
	for i, ev := range log.EventsFrom(start) {
		if ev.Author == event.AuthorUser && ev.Content != nil {
			return off + start + i, ev.InvocationID, true
		}
	}
	return 0, "", false
}

// waitingFrom reports whether a call of the log still waits for the
// client, and the log index before which none does: that of the first
// event with a waiting call, or the length of the log. The events before
// log's first have no waiting call (see stepInput.WaitFrom).
func waitingFrom(log *session.Session) (int, bool) {
	if i, ok := agent.FirstWaiting(log); ok {
		return offset(log) + i, true
	}
	return int(log.Seq()), false
}

// classify makes errors that retrying cannot fix non-retryable.
func classify(err error) error {
	switch {
	case errors.Is(err, runner.ErrInvalid) || errors.Is(err, session.ErrNotFound) || errors.Is(err, agent.ErrNotPending):
		return sdktemporal.NewNonRetryableApplicationError(err.Error(), errInvalidType, err)
	case errors.Is(err, agent.ErrLLMCallLimit):
		return sdktemporal.NewNonRetryableApplicationError(err.Error(), errLLMCallLimitType, err)
	}
	return err
}
