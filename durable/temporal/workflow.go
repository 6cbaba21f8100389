package temporal

import (
	"errors"
	"time"

	sdktemporal "go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/genai"
)

// Names of the workflow, its update and its (local) activities, as
// registered with Temporal.
const (
	WorkflowName = "loom.Session"
	// UpdateRun is the update that hands the workflow a Message and
	// answers its Status once the message's turn ended or paused.
	UpdateRun    = "loom.run"
	activityMark = "loom.Mark"
	activityTurn = "loom.Turn"
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
	// End carries, across a continue-as-new, the length of the session log
	// after the last message (0: unknown).
	End int `json:",omitempty"`
	// Options are the activity settings (zero: the defaults).
	Options Options
}

// Options are the retry and timeout settings of the turns. Zero fields
// take the defaults documented on each.
type Options struct {
	// StepTimeout bounds one attempt of a turn: a message's invocation run
	// until it ends or pauses (default 1h).
	StepTimeout time.Duration
	// HeartbeatTimeout is how long a worker may stay silent before the
	// turn it runs is taken over by another worker: the workflow task
	// timeout of the session's workflow, which the worker renews while a
	// turn runs (default 10s; Temporal caps it at 2m). A client sets it
	// when it starts a workflow.
	HeartbeatTimeout time.Duration
	// MaxAttempts bounds the attempts of one turn on a worker (default
	// 10; negative: unlimited).
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
		o.HeartbeatTimeout = 10 * time.Second
	}
	o.HeartbeatTimeout = min(o.HeartbeatTimeout, 2*time.Minute)
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

// Message is a user message for the session, as the run update hands it to
// its workflow.
type Message struct {
	RequestID    string
	Content      *genai.Content
	StateDelta   map[string]any `json:",omitempty"`
	InvocationID string         `json:",omitempty"` // runner.RunOptions.InvocationID
	MaxLLMCalls  int            `json:",omitempty"`
	// Streaming asks the model to stream (runner.RunOptions.Streaming):
	// partial events reach a client in the worker's process, or one
	// whose feed listener the worker reaches.
	Streaming bool `json:",omitempty"`
	// After is the length of the session log when the client admitted
	// the message: the message is stored after it.
	After int `json:",omitempty"`
	// Feed is the address of the client's feed listener for this
	// message ("": the client has none), where a worker of another
	// process sends the turn's events as they are yielded; FeedToken is
	// the turn's own random token that the listener requires.
	Feed      string `json:",omitempty"`
	FeedToken string `json:",omitempty"`
}

// Status is the outcome of one message, answered by the run update.
type Status struct {
	// Floor is the index of the message in the session log (when it
	// failed: an index at or before it); End is the length of the log
	// after its turn.
	Floor        int
	End          int `json:",omitempty"`
	Done         bool
	InvocationID string `json:",omitempty"`
	Paused       bool   `json:",omitempty"`
	Error        string `json:",omitempty"`
	// ErrorType is the type of the application error that ended the
	// message, if its turn returned one.
	ErrorType string `json:",omitempty"`
	Cancelled bool   `json:",omitempty"`
}

// turnInput is the input of the Turn local activity.
type turnInput struct {
	Session SessionInput
	Message Message
	// From is an index of the session log at or before which the message
	// goes: the larger of where the previous message's turn left the log
	// and where the log ended when the client admitted this one. The turn
	// reads the log from no later than it. A message found there under its
	// own event id was stored by an earlier attempt of the turn, which
	// resumes its invocation instead of storing it again.
	From int
	// WaitFrom is the index of the session log before which no call waits
	// for the client, as the previous message left it (0: unknown, the
	// whole log is read). Whether calls wait after the turn is decided
	// from the events from there on: a call answered stays answered, so
	// those before cannot wait again.
	WaitFrom int `json:",omitempty"`
}

// turnResult is what one turn did.
type turnResult struct {
	InvocationID string
	// Floor is the index of the message in the log, End the log's length
	// after the turn.
	Floor, End int
	// Paused: calls of the session wait for answers.
	Paused bool
	// WaitFrom is the index of the session log before which no call waits
	// for the client (its length if none waits).
	WaitFrom int `json:",omitempty"`
}

// errTreeChanged is the type of the application error an activity returns
// for a changed agent tree.
const errTreeChanged = "LoomTreeChanged"

// queued is a message waiting for its turn, and its status.
type queued struct {
	msg Message
	st  *Status
}

// SessionWorkflow is the workflow of one session: it runs the messages
// handed to it by run updates one at a time, each as one local activity
// that runs the message's invocation until it ends or pauses, answers each
// update with its message's status, and waits durably while calls of the
// session are pending.
func SessionWorkflow(ctx workflow.Context, in SessionInput) error {
	opts := in.Options.withDefaults()
	var queue []*queued
	if err := workflow.SetUpdateHandlerWithOptions(ctx, UpdateRun, func(ctx workflow.Context, m Message) (Status, error) {
		q := &queued{msg: m, st: &Status{}}
		queue = append(queue, q)
		if err := workflow.Await(ctx, func() bool { return q.st.Done }); err != nil {
			return Status{}, err
		}
		return *q.st, nil
	}, workflow.UpdateHandlerOptions{Validator: func(m Message) error {
		if m.RequestID == "" || m.Content == nil {
			return errors.New("temporal: a message needs a request id and content")
		}
		return nil
	}}); err != nil {
		return err
	}
	if workflow.GetVersion(ctx, versionTurns, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return signalledSession(ctx, in, &queue)
	}
	lctx := localContext(ctx, opts)
	paused, waitFrom, end := in.Paused, in.WaitFrom, in.End
	for {
		if len(queue) == 0 {
			if workflow.GetInfo(ctx).GetContinueAsNewSuggested() {
				return finish(ctx, &queue, workflow.NewContinueAsNewError(ctx, SessionWorkflow, SessionInput{
					App: in.App, User: in.User, Session: in.Session, TreeHash: in.TreeHash,
					Paused: paused, WaitFrom: waitFrom, End: end, Options: in.Options,
				}))
			}
			if err := awaitMessage(ctx, &queue, paused, opts.Idle); err != nil {
				return finish(ctx, &queue, err)
			}
			if len(queue) == 0 {
				return finish(ctx, &queue, nil)
			}
		}
		q := queue[0]
		queue = queue[1:]
		from := max(end, q.msg.After)
		var res turnResult
		err := workflow.ExecuteLocalActivity(lctx, activityTurn, turnInput{Session: in, Message: q.msg, From: from, WaitFrom: waitFrom}).Get(ctx, &res)
		if err == nil {
			*q.st = Status{Done: true, Floor: res.Floor, End: res.End, InvocationID: res.InvocationID, Paused: res.Paused}
			paused, waitFrom, end = res.Paused, res.WaitFrom, res.End
			continue
		}
		*q.st = Status{Done: true, Floor: from, Error: err.Error()}
		var ae *sdktemporal.ApplicationError
		if errors.As(err, &ae) {
			q.st.ErrorType = ae.Type()
		}
		switch {
		case sdktemporal.IsCanceledError(err) || ctx.Err() != nil:
			q.st.Cancelled = true
			return finish(ctx, &queue, err)
		case ae != nil && ae.Type() == errTreeChanged:
			return finish(ctx, &queue, err)
		}
		// Another message may still succeed: the session goes on from
		// where the failed turn left the log. What it stored may hold
		// waiting calls: the next message looks for them from the same
		// waitFrom.
		var n int
		if err := workflow.ExecuteLocalActivity(lctx, activityMark, in).Get(ctx, &n); err != nil {
			return finish(ctx, &queue, err)
		}
		end = max(end, n)
	}
}

// errEnded is the error type of the status of a message that the
// workflow ended before running (it was idle, or continued as new): its
// client sends it again, to the next workflow of the session.
const errEnded = "LoomWorkflowEnded"

// finish ends the workflow with err after answering the updates: those of
// messages still queued, or queued meanwhile, get err, or errEnded when the
// workflow ends without one.
func finish(ctx workflow.Context, queue *[]*queued, err error) error {
	fail := Status{Done: true, Error: "temporal: the session workflow ended before the message's turn", ErrorType: errEnded}
	var ae *sdktemporal.ApplicationError
	var can *workflow.ContinueAsNewError
	switch {
	case errors.As(err, &can):
	case err != nil:
		fail = Status{Done: true, Error: err.Error(), Cancelled: sdktemporal.IsCanceledError(err)}
		if errors.As(err, &ae) {
			fail.ErrorType = ae.Type()
		}
	}
	for {
		for _, q := range *queue {
			*q.st = fail
		}
		*queue = nil
		// A cancelled workflow still waits for its handlers, which its
		// cancellation ends.
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		_ = workflow.Await(dctx, func() bool { return workflow.AllHandlersFinished(dctx) || len(*queue) > 0 })
		if len(*queue) == 0 {
			return err
		}
	}
}

// turnSpan bounds a turn and all its retries: set, so that Temporal does
// not bound them by one attempt's StepTimeout, and long, so that
// Options.MaxAttempts alone bounds the retries.
const turnSpan = 10 * 365 * 24 * time.Hour

// localContext returns the context of the local activities: their
// timeouts and retries.
func localContext(ctx workflow.Context, opts Options) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: turnSpan,
		StartToCloseTimeout:    opts.StepTimeout,
		RetryPolicy: &sdktemporal.RetryPolicy{
			InitialInterval:        time.Second,
			BackoffCoefficient:     2,
			MaximumInterval:        time.Minute,
			MaximumAttempts:        int32(opts.MaxAttempts),
			NonRetryableErrorTypes: []string{errTreeChanged, errInvalidType, errLLMCallLimitType},
		},
	})
}

// awaitMessage waits until a message is queued: as long as it takes when
// the invocation is paused, for at most idle otherwise.
func awaitMessage(ctx workflow.Context, queue *[]*queued, paused bool, idle time.Duration) error {
	ready := func() bool { return len(*queue) > 0 }
	if paused {
		// A pause waits as long as it takes.
		return workflow.Await(ctx, ready)
	}
	_, err := workflow.AwaitWithTimeout(ctx, idle, ready)
	return err
}
