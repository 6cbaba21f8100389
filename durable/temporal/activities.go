package temporal

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
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

// activities runs Steps on the runners of a worker.
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
			// Each step resumes the invocation from the log: workflow
			// agents need their checkpoints for it.
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

// step advances an invocation by one model call or one tool round, or
// until it ends or pauses. It reads the session log from in.WaitFrom on
// only: the message's own events and those of calls still waiting (the
// runner reads the rest, once, into the session it keeps).
func (a *activities) step(ctx context.Context, in stepInput) (stepResult, error) {
	r, err := a.app(in.Session)
	if err != nil {
		return stepResult{}, err
	}
	stop := heartbeat(ctx, in.Session.Options.withDefaults().HeartbeatTimeout/3)
	defer stop()
	// The runner counts the model calls earlier Steps made against the
	// limit.
	opts := &runner.RunOptions{MaxLLMCalls: in.MaxLLMCalls}
	invID := in.InvocationID
	msg := in.Message
	// Nothing before from waits for the client, and from <= Floor.
	from := max(min(in.WaitFrom, in.Floor), 0)
	var log *session.Session // the log from from on
	if msg != nil {
		opts.StateDelta, opts.InvocationID, opts.MaxLLMCalls = msg.StateDelta, msg.InvocationID, msg.MaxLLMCalls
		if log, err = since(ctx, r, in.Session, from); err != nil {
			return stepResult{}, err
		}
		// An earlier attempt stored the message: resume its invocation.
		if id, ok := firstUserInvocation(log, in.Floor); ok {
			invID, msg = id, nil
		}
	}
	var events func(func(*event.Event, error) bool)
	if msg != nil {
		events = r.Run(ctx, in.Session.User, in.Session.Session, msg.Content, opts)
	} else {
		events = r.Resume(ctx, in.Session.User, in.Session.Session, invID, opts)
	}
	out := stepResult{InvocationID: invID, Done: true}
	for ev, err := range events {
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return stepResult{}, cerr // cancelled: the failure is its consequence
			}
			return stepResult{}, classify(err)
		}
		if ev.Partial {
			continue
		}
		out.InvocationID = ev.InvocationID
		activity.RecordHeartbeat(ctx, ev.ID)
		if pausing, _ := agent.PausingCalls(ev); len(ev.FunctionCalls()) > len(pausing) || len(ev.FunctionResponses()) > 0 {
			// A model turn that calls tools, or a tool round, is committed:
			// the next Step goes on from the log. A call that pauses (the
			// ledger of package agent decides) is no step: the agents end
			// the invocation after it, as in process.
			out.Done = false
			break
		}
	}
	if err := ctx.Err(); err != nil {
		return stepResult{}, err
	}
	if !out.Done {
		return out, nil
	}
	// The invocation ended or paused: whether calls wait is in the log
	// from from on, with what this Step appended.
	if log == nil {
		log, err = since(ctx, r, in.Session, from)
	} else {
		err = r.Sessions().Refresh(ctx, log)
	}
	if err != nil {
		return stepResult{}, classify(err)
	}
	if out.InvocationID == "" && msg != nil {
		// Nothing was yielded (a plugin answered, or the agents were
		// silent): the message is the invocation's only trace.
		out.InvocationID, _ = firstUserInvocation(log, in.Floor)
	}
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

// firstUserInvocation returns the invocation of the first user message of
// the log at or after index floor.
func firstUserInvocation(log *session.Session, floor int) (string, bool) {
	for _, ev := range log.EventsFrom(min(max(floor-offset(log), 0), log.Len())) {
		if ev.Author == event.AuthorUser {
			return ev.InvocationID, true
		}
	}
	return "", false
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

// heartbeat records a heartbeat every period until stop is called, so that
// a long tool call keeps its Step alive and learns of a cancellation.
func heartbeat(ctx context.Context, period time.Duration) func() {
	if period <= 0 {
		period = time.Second
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
