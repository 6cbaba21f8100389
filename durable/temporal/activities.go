package temporal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
// every event it yields to the client of the message: directly if that
// waits in this process (feeds), through its feed listener if it has one.
// It reads the session log from in.WaitFrom on only: the message's own
// events and those of calls still waiting (the runner reads the rest,
// once, into the session it keeps). The message is stored
// under an event id of its request's own (messageID): if the log holds it,
// an earlier attempt of the turn, killed or failed, stored it, and the
// turn resumes its invocation from the log instead of storing it again,
// running no tool call whose response was committed. An attempt that
// still ran while this one stored the message cannot store it a second
// time: the session refuses the id.
func (a *activities) turn(ctx context.Context, in turnInput) (_ turnResult, err error) {
	r, err := a.app(in.Session)
	if err != nil {
		return turnResult{}, err
	}
	msg := in.Message
	id := messageID(msg.RequestID)
	// Nothing before from waits for the client, and from <= From.
	from := max(min(in.WaitFrom, in.From), 0)
	log, err := since(ctx, r, in.Session, from)
	if err != nil {
		return turnResult{}, err
	}
	out := turnResult{Floor: int(log.Seq())}
	rctx, detach := runContext(ctx)
	defer detach()
	var events func(func(*event.Event, error) bool)
	if i, inv, ok := storedMessage(log, id); ok {
		out.Floor, out.InvocationID = i, inv
		events = r.Resume(rctx, in.Session.User, in.Session.Session, inv, &runner.RunOptions{Streaming: msg.Streaming, MaxLLMCalls: msg.MaxLLMCalls})
	} else {
		events = r.Run(rctx, in.Session.User, in.Session.Session, msg.Content, &runner.RunOptions{
			Streaming: msg.Streaming, StateDelta: msg.StateDelta, InvocationID: msg.InvocationID, MaxLLMCalls: msg.MaxLLMCalls,
			MessageID: id,
		})
	}
	publish, local := feeds.publisher(msg.RequestID)
	if !local && msg.Feed != "" {
		// The client waits in another process: the events go to its feed
		// listener.
		p := push(msg.Feed, msg.FeedToken)
		clean := false
		defer func() { p.finish(clean) }()
		publish = p.publish
		defer func() { clean = err == nil }()
	}
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
	// The message's index, and its invocation if nothing was yielded (a
	// plugin answered, or the agents were silent: the message is the
	// invocation's only trace).
	if i, inv, ok := storedMessage(log, id); ok {
		out.Floor = i
		if out.InvocationID == "" {
			out.InvocationID = inv
		}
	}
	out.End = int(log.Seq())
	out.WaitFrom, out.Paused = waitingFrom(log)
	return out, nil
}

// runContext returns the context an attempt of a turn (or of a signalled
// workflow's Step) runs its invocation in. It ends when the attempt's does,
// with runner.ErrDetached as its cause unless the workflow cancelled the
// attempt (Client.Cancel): only then is the invocation aborted. An attempt
// that ends for a reason of its worker's own (its StepTimeout, the
// worker's shutdown, a lost activity) leaves the invocation as a crash
// does, for the next attempt, on this worker or another.
func runContext(ctx context.Context) (context.Context, func()) {
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		cause := runner.ErrDetached
		var ce *sdktemporal.CanceledError
		switch c := context.Cause(ctx); {
		case !errors.Is(ctx.Err(), context.Canceled):
		case c == context.Canceled: // a local activity cancelled by its workflow
			cause = c
		case errors.As(c, &ce): // an activity whose cancellation was requested
			cause = c
		}
		cancel(cause)
	})
	return rctx, func() { stop(); cancel(nil) }
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

// storedMessage returns the log index and the invocation of the message
// stored under the event id id, if the events read hold it. It looks at
// all of them, latest first: the id says which message is the turn's, so
// where the log stood when the message was admitted (a client's word)
// decides nothing.
func storedMessage(log *session.Session, id string) (int, string, bool) {
	for i := log.Len() - 1; i >= 0; i-- {
		if ev := log.At(i); ev.ID == id && ev.Author == event.AuthorUser {
			return offset(log) + i, ev.InvocationID, true
		}
	}
	return 0, "", false
}

// messageID returns the event id a message is stored under: a UUID made
// from its request id, the same on every attempt of its turn and on every
// worker, and another for every request.
func messageID(requestID string) string {
	h := sha256.Sum256([]byte("loom.message\x00" + requestID))
	h[6] = h[6]&0x0f | 0x80 // version 8: made by the application
	h[8] = h[8]&0x3f | 0x80 // variant RFC 9562
	b := hex.EncodeToString(h[:16])
	return b[0:8] + "-" + b[8:12] + "-" + b[12:16] + "-" + b[16:20] + "-" + b[20:32]
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
