package temporal

import (
	"errors"
	"fmt"
	"time"

	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/genai"
)

// Names of the workflow, its signal, update and activities, as registered
// with Temporal.
const (
	WorkflowName  = "loom.Session"
	signalMessage = "loom.message"
	updateWait    = "loom.wait"
	activityMark  = "loom.Mark"
	activityStep  = "loom.Step"
)

// SessionInput starts the workflow of one session.
type SessionInput struct {
	App      string
	User     string
	Session  string
	TreeHash string // TreeHash of the starter's agent tree
	// Paused carries, across a continue-as-new, that calls of the session
	// wait for answers.
	Paused bool
	// WaitFrom carries, across a continue-as-new, the index of the session
	// log before which no call waits for an answer (0: unknown).
	WaitFrom int `json:",omitempty"`
	// Options are the activity settings (zero: the defaults).
	Options Options
}

// Options are the retry and timeout settings of the activities. Zero
// fields take the defaults documented on each.
type Options struct {
	// StepTimeout bounds one Step: one model call or one tool round
	// (default 1h).
	StepTimeout time.Duration
	// HeartbeatTimeout is how long a worker may stay silent before its
	// Step is retried elsewhere (default 30s). Steps heartbeat at a third
	// of it while a tool runs.
	HeartbeatTimeout time.Duration
	// MaxAttempts bounds the attempts of one Step (default 10; negative:
	// unlimited).
	MaxAttempts int
	// Idle is how long the workflow of a session that has nothing pending
	// waits for another message before it completes (default 1m).
	Idle time.Duration
}

func (o Options) withDefaults() Options {
	if o.StepTimeout <= 0 {
		o.StepTimeout = time.Hour
	}
	if o.HeartbeatTimeout <= 0 {
		o.HeartbeatTimeout = 30 * time.Second
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 10
	}
	if o.MaxAttempts < 0 {
		o.MaxAttempts = 0
	}
	if o.Idle <= 0 {
		o.Idle = time.Minute
	}
	return o
}

// Message is a user message for the session, as signalled to its workflow.
type Message struct {
	RequestID    string
	Content      *genai.Content
	StateDelta   map[string]any `json:",omitempty"`
	InvocationID string         `json:",omitempty"` // runner.RunOptions.InvocationID
	MaxLLMCalls  int            `json:",omitempty"`
}

// Status is the outcome of one message, answered by the wait update.
type Status struct {
	// Started: the message's turn has come; Floor is the length of the
	// session log before it.
	Started      bool
	Floor        int
	Done         bool
	InvocationID string `json:",omitempty"`
	Paused       bool   `json:",omitempty"`
	Error        string `json:",omitempty"`
	// ErrorType is the type of the application error that ended the
	// message, if an activity returned one.
	ErrorType string `json:",omitempty"`
	Cancelled bool   `json:",omitempty"`
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

// errTreeChanged is the type of the application error an activity returns
// for a changed agent tree.
const errTreeChanged = "LoomTreeChanged"

// SessionWorkflow is the workflow of one session: it runs the messages
// signalled to it one at a time, each as a sequence of Step activities, and
// waits durably while calls of the session are pending.
func SessionWorkflow(ctx workflow.Context, in SessionInput) error {
	opts := in.Options.withDefaults()
	statuses := map[string]*Status{}
	if err := setStatusHandlers(ctx, statuses); err != nil {
		return err
	}
	actx := activityContext(ctx, opts)
	ch := workflow.GetSignalChannel(ctx, signalMessage)
	paused, waitFrom := in.Paused, in.WaitFrom
	finish := func(err error) error {
		// Answer the waiting updates before the workflow ends.
		_ = workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) })
		return err
	}
	for {
		var msg Message
		if !ch.ReceiveAsync(&msg) {
			if workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
				return finish(workflow.NewContinueAsNewError(ctx, SessionWorkflow, SessionInput{
					App: in.App, User: in.User, Session: in.Session, TreeHash: in.TreeHash, Paused: paused, WaitFrom: waitFrom, Options: in.Options,
				}))
			}
			got, err := awaitMessage(ctx, ch, paused, opts.Idle)
			if err != nil || !got {
				return finish(err)
			}
			ch.ReceiveAsync(&msg)
		}
		st := &Status{}
		statuses[msg.RequestID] = st
		next, err := runMessage(ctx, actx, in, &msg, waitFrom, st)
		st.Done = true
		if err != nil {
			st.Error = err.Error()
			var ae *sdktemporal.ApplicationError
			if errors.As(err, &ae) {
				st.ErrorType = ae.Type()
			}
			switch {
			case sdktemporal.IsCanceledError(err) || ctx.Err() != nil:
				st.Cancelled = true
				return finish(err)
			case errors.As(err, &ae) && ae.Type() == errTreeChanged:
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

// setStatusHandlers answers the updates that wait for a message's start
// (its floor in the log) and for its end (its status).
func setStatusHandlers(ctx workflow.Context, statuses map[string]*Status) error {
	if err := workflow.SetUpdateHandler(ctx, updateWait, func(ctx workflow.Context, requestID string) (Status, error) {
		if err := workflow.Await(ctx, func() bool { st := statuses[requestID]; return st != nil && st.Done }); err != nil {
			return Status{}, err
		}
		return *statuses[requestID], nil
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

// activityContext returns the context of the Step activities: their
// timeouts and retries.
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

// awaitMessage waits until a message can be received: as long as it takes
// when the invocation is paused, for at most idle otherwise. got is false
// when the wait timed out.
func awaitMessage(ctx workflow.Context, ch workflow.ReceiveChannel, paused bool, idle time.Duration) (got bool, err error) {
	wait := func() bool { return ch.Len() > 0 }
	if paused {
		// A pause waits as long as it takes.
		if err := workflow.Await(ctx, wait); err != nil {
			return false, err
		}
		return true, nil
	}
	return workflow.AwaitWithTimeout(ctx, idle, wait)
}

// runMessage runs one message: it records where the log ends, then runs
// Steps until the invocation ends or pauses. waitFrom is the index of the
// log before which no call waits (stepInput.WaitFrom); it returns that of
// the log the message leaves.
func runMessage(ctx, actx workflow.Context, in SessionInput, msg *Message, waitFrom int, st *Status) (int, error) {
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
