package temporal

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
)

// The session workflows that a client started before the run update took
// messages as signals and ran each message as a Mark activity and a
// sequence of Step activities (each one model call or one tool round). A
// workflow whose history has no version marker ([versionTurns]) is one of
// them: it goes on with that code, so that its replay matches its history,
// and takes the messages of today's clients (run updates) as it took
// signals. It ends as it did (idle, cancelled, or continued as new as a
// workflow of today's kind).

// versionTurns marks the histories of workflows that run each message as
// one turn.
const versionTurns = "loom.turns"

// Names of the signalled workflows' signal, updates and activity.
const (
	signalMessage = "loom.message"
	updateWait    = "loom.wait"
	updateStarted = "loom.started"
	activityStep  = "loom.Step"
)

// signalledStatus is the outcome of one message of a signalled workflow.
type signalledStatus struct {
	Status
	Started bool
}

// stepInput is the input of the Step activity.
type stepInput struct {
	Session SessionInput
	// Message is the message to store and run; nil resumes InvocationID.
	Message *Message `json:",omitempty"`
	// Floor is the length of the session log before the message: events
	// past it were stored by an earlier attempt, or by the Steps before.
	Floor int
	// WaitFrom is the index of the session log before which no call waits
	// for the client, as the previous message left it (0: unknown, the
	// whole log is read). Whether calls wait after the Step is decided
	// from the events from there on: a call answered stays answered, so
	// those before cannot wait again.
	WaitFrom     int    `json:",omitempty"`
	InvocationID string `json:",omitempty"`
	// MaxLLMCalls is the message's limit, for the Steps that resume its
	// invocation (the runner counts the calls they made before).
	MaxLLMCalls int `json:",omitempty"`
}

// stepResult is what one Step did.
type stepResult struct {
	InvocationID string
	// Done: the invocation ended or paused; otherwise it goes on with
	// another Step.
	Done bool
	// Paused: calls of the session wait for answers.
	Paused bool
	// WaitFrom, when Done, is the index of the session log before which no
	// call waits for the client (its length if none waits).
	WaitFrom int `json:",omitempty"`
}

// signalledSession runs a workflow started before run updates (see
// versionTurns): its messages come as signals, or as run updates queued
// in queue.
func signalledSession(ctx workflow.Context, in SessionInput, queue *[]*queued) error {
	opts := in.Options.withDefaults()
	statuses := map[string]*signalledStatus{}
	if err := setStatusHandlers(ctx, statuses); err != nil {
		return err
	}
	actx := activityContext(ctx, opts)
	ch := workflow.GetSignalChannel(ctx, signalMessage)
	paused, waitFrom := in.Paused, in.WaitFrom
	finish := func(err error) error { return finish(ctx, queue, err) }
	for {
		var msg Message
		var update *queued
		if !ch.ReceiveAsync(&msg) {
			if len(*queue) == 0 {
				if workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
					return finish(workflow.NewContinueAsNewError(ctx, SessionWorkflow, SessionInput{
						App: in.App, User: in.User, Session: in.Session, TreeHash: in.TreeHash, Paused: paused, WaitFrom: waitFrom, Options: in.Options,
					}))
				}
				got, err := awaitSignal(ctx, ch, queue, paused, opts.Idle)
				if err != nil || !got {
					return finish(err)
				}
			}
			if !ch.ReceiveAsync(&msg) {
				update, msg = (*queue)[0], (*queue)[0].msg
				*queue = (*queue)[1:]
			}
		}
		st := &signalledStatus{}
		statuses[msg.RequestID] = st
		next, err := runSignalled(ctx, actx, in, &msg, waitFrom, st)
		st.Done = true
		if err != nil {
			st.Error = err.Error()
			var ae *sdktemporal.ApplicationError
			if errors.As(err, &ae) {
				st.ErrorType = ae.Type()
			}
		}
		if update != nil {
			*update.st = st.Status
		}
		if err != nil {
			switch {
			case sdktemporal.IsCanceledError(err) || ctx.Err() != nil:
				st.Cancelled = true
				return finish(err)
			case st.ErrorType == errTreeChanged:
				return finish(err)
			}
			// Another message may still succeed: the session goes on. What
			// the failed one stored may hold waiting calls: the next
			// message looks for them from the same waitFrom.
			continue
		}
		paused, waitFrom = st.Paused, next
	}
}

// setStatusHandlers answers the updates that wait for a signalled
// message's start (its floor in the log) and for its end (its status).
func setStatusHandlers(ctx workflow.Context, statuses map[string]*signalledStatus) error {
	if err := workflow.SetUpdateHandler(ctx, updateWait, func(ctx workflow.Context, requestID string) (Status, error) {
		if err := workflow.Await(ctx, func() bool { st := statuses[requestID]; return st != nil && st.Done }); err != nil {
			return Status{}, err
		}
		return statuses[requestID].Status, nil
	}); err != nil {
		return err
	}
	return workflow.SetUpdateHandler(ctx, updateStarted, func(ctx workflow.Context, requestID string) (int, error) {
		if err := workflow.Await(ctx, func() bool { st := statuses[requestID]; return st != nil && (st.Started || st.Done) }); err != nil {
			return 0, err
		}
		st := statuses[requestID]
		if !st.Started {
			return 0, fmt.Errorf("temporal: message %s failed before it started: %s", requestID, st.Error)
		}
		return st.Floor, nil
	})
}

// activityContext returns the context of the Mark and Step activities:
// their timeouts and retries.
func activityContext(ctx workflow.Context, opts Options) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: opts.StepTimeout,
		HeartbeatTimeout:    opts.HeartbeatTimeout,
		RetryPolicy: &sdktemporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			MaximumAttempts:        int32(opts.MaxAttempts),
			NonRetryableErrorTypes: []string{errTreeChanged, errInvalidType},
		},
	})
}

// awaitSignal waits until a message can be received, as a signal or a
// run update: as long as it takes when the invocation is paused, for at
// most idle otherwise. got is false when the wait timed out.
func awaitSignal(ctx workflow.Context, ch workflow.ReceiveChannel, queue *[]*queued, paused bool, idle time.Duration) (got bool, err error) {
	wait := func() bool { return ch.Len() > 0 || len(*queue) > 0 }
	if paused {
		// A pause waits as long as it takes.
		if err := workflow.Await(ctx, wait); err != nil {
			return false, err
		}
		return true, nil
	}
	return workflow.AwaitWithTimeout(ctx, idle, wait)
}

// runSignalled runs one message: it records where the log ends, then runs
// Steps until the invocation ends or pauses. waitFrom is the index of the
// log before which no call waits (stepInput.WaitFrom); it returns that of
// the log the message leaves.
func runSignalled(ctx, actx workflow.Context, in SessionInput, msg *Message, waitFrom int, st *signalledStatus) (int, error) {
	var floor int
	if err := workflow.ExecuteActivity(actx, activityMark, in).Get(ctx, &floor); err != nil {
		return 0, err
	}
	st.Floor, st.Started = floor, true
	step := stepInput{Session: in, Message: msg, Floor: floor, WaitFrom: waitFrom}
	for {
		var out stepResult
		if err := workflow.ExecuteActivity(actx, activityStep, step).Get(ctx, &out); err != nil {
			return 0, err
		}
		st.InvocationID = out.InvocationID
		if out.Done {
			st.Paused = out.Paused
			return out.WaitFrom, nil
		}
		step = stepInput{Session: in, InvocationID: out.InvocationID, MaxLLMCalls: msg.MaxLLMCalls, Floor: floor, WaitFrom: waitFrom}
	}
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
	rctx, detach := runContext(ctx)
	defer detach()
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
		events = r.Run(rctx, in.Session.User, in.Session.Session, msg.Content, opts)
	} else {
		events = r.Resume(rctx, in.Session.User, in.Session.Session, invID, opts)
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

// firstUserInvocation returns the invocation of the first user message of
// the log at or after index floor: an event of the user with content (a
// change of state or a rewind has none).
func firstUserInvocation(log *session.Session, floor int) (string, bool) {
	for _, ev := range log.EventsFrom(min(max(floor-offset(log), 0), log.Len())) {
		if ev.Author == event.AuthorUser && ev.Content != nil {
			return ev.InvocationID, true
		}
	}
	return "", false
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
