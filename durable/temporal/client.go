package temporal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"strings"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
)

// DefaultWorkflowIDPrefix starts the workflow ids of a client configured
// without ClientConfig.WorkflowIDPrefix.
const DefaultWorkflowIDPrefix = "loom"

// WorkflowID returns the id of the workflow of a session for a client with
// the default prefix (see [Client.WorkflowID]).
func WorkflowID(app, user, sessionID string) string {
	return workflowID(DefaultWorkflowIDPrefix, app, user, sessionID)
}

// workflowID returns prefix/app/user/session, each part escaped so that
// no two sessions or prefixes give the same id.
func workflowID(prefix, app, user, sessionID string) string {
	return url.PathEscape(prefix) + "/" + url.PathEscape(app) + "/" + url.PathEscape(user) + "/" + url.PathEscape(sessionID)
}

// ClientConfig configures a Client.
type ClientConfig struct {
	// Client is the Temporal client. Required.
	Client client.Client
	// TaskQueue is the queue the workers poll (default DefaultTaskQueue).
	TaskQueue string
	// Options are the workflows' activity settings.
	Options Options
	// FeedAddr, when set, is the address (host:port; port 0 picks one)
	// the client's feed listener listens on: a worker of another process
	// sends the events of each turn there as they are yielded, partial
	// ones included, each turn authenticated by a random token of its
	// own; NewClient starts it and Close stops it. Without it (the
	// default), the committed events of a worker in another process
	// reach the client when the turn ends or pauses, or as Poll reads
	// them. Events of a worker in the client's process always reach it as
	// they are yielded, without a listener.
	FeedAddr string
	// FeedURL is the base address workers reach the feed listener at
	// (http:// or https://, e.g. behind a proxy or on another
	// interface); default http:// and the address FeedAddr listens on,
	// which must then not be every interface.
	FeedURL string
	// Poll, when positive, is how often the session log is read for new
	// events while a message's turn runs (default 0: no polling), for
	// clients without a feed listener or whose workers cannot reach it.
	// A polling client takes the first message stored after it admitted
	// its own for its own: it assumes, as a server does, that no other
	// client sends to the session meanwhile.
	Poll time.Duration
	// WorkflowIDPrefix starts the id of every session workflow the client
	// starts, updates or cancels (default DefaultWorkflowIDPrefix). A
	// workflow id is the prefix, the app, the user and the session id: two
	// deployments that share a Temporal namespace but not their session
	// store (whose session ids may then repeat) need prefixes of their own,
	// or the second reaches the first one's workflows.
	WorkflowIDPrefix string
}

// Client starts invocations on Temporal and streams their events. It has the methods of server.Invoker, so that a server runs
// its apps' invocations on Temporal workers instead of in process. It is
// safe for concurrent use.
type Client struct {
	cfg  ClientConfig
	feed *feedServer // nil without ClientConfig.FeedAddr
}

// NewClient returns a Client.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.Client == nil {
		return nil, errors.New("temporal: a Temporal client is required")
	}
	if cfg.TaskQueue == "" {
		cfg.TaskQueue = DefaultTaskQueue
	}
	if cfg.WorkflowIDPrefix == "" {
		cfg.WorkflowIDPrefix = DefaultWorkflowIDPrefix
	}
	c := &Client{cfg: cfg}
	if cfg.FeedAddr != "" {
		f, err := listenFeed(cfg.FeedAddr, cfg.FeedURL)
		if err != nil {
			return nil, err
		}
		c.feed = f
	}
	return c, nil
}

// FeedURL returns the base address of the client's feed listener that
// workers post to, or "" if it has none.
func (c *Client) FeedURL() string {
	if c.feed == nil {
		return ""
	}
	return strings.TrimSuffix(c.feed.url, feedPath)
}

// Close stops the client's feed listener, if it has one: the turns
// still running reach their clients through the log. It does not close
// the Temporal client.
func (c *Client) Close() error {
	if c.feed == nil {
		return nil
	}
	return c.feed.close()
}

// WorkflowID returns the id of the workflow of a session:
// ClientConfig.WorkflowIDPrefix, the app, the user and the session id,
// each escaped as a URL path segment.
func (c *Client) WorkflowID(app, user, sessionID string) string {
	return workflowID(c.cfg.WorkflowIDPrefix, app, user, sessionID)
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// recentCalls is how many of the last events of a session Run reads first
// to find the calls a message answers.
const recentCalls = 32

// answersCalls reports whether msg holds function responses with ids:
// answers to calls of the log, the responses agent.Pending matches.
func answersCalls(msg *genai.Content) bool {
	for _, p := range msg.Parts {
		if p != nil && p.FunctionResponse != nil && p.FunctionResponse.ID != "" {
			return true
		}
	}
	return false
}

// Run hands msg to the workflow of the session (starting it if none
// runs) and yields the events of the invocation the message starts or
// resumes, like runner.Runner.Run does in process: as they are yielded
// (partial events included when opts.Streaming is set) when the worker
// that runs the turn is in this process or reaches the client's feed
// listener (ClientConfig.FeedAddr), otherwise the committed ones when the
// turn ends or pauses (see ClientConfig.Poll). Each committed event is
// yielded once, in log order, whichever way it came. The session must
// exist.
// Cancelling ctx stops the streaming, not the invocation: use Cancel.
func (c *Client) Run(ctx context.Context, app *runner.Runner, userID, sessionID string, msg *genai.Content, opts *runner.RunOptions) iter.Seq2[*event.Event, error] {
	if opts == nil {
		opts = &runner.RunOptions{}
	}
	return func(yield func(*event.Event, error) bool) {
		if msg == nil {
			yield(nil, fmt.Errorf("%w: no message", runner.ErrInvalid))
			return
		}
		k := session.Key{AppName: app.AppName(), UserID: userID, SessionID: sessionID}
		after, err := admit(ctx, app, k, msg, opts.InvocationID)
		if err != nil {
			yield(nil, err)
			return
		}
		m := Message{RequestID: newRequestID(), Content: msg, StateDelta: opts.StateDelta, InvocationID: opts.InvocationID,
			MaxLLMCalls: opts.MaxLLMCalls, Streaming: opts.Streaming, After: after}
		var token string
		if c.feed != nil {
			token = newRequestID() + newRequestID()
			m.Feed, m.FeedToken = c.feed.url+m.RequestID, token
		}
		f := feeds.subscribe(m.RequestID, token)
		defer feeds.unsubscribe(m.RequestID)
		uctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		defer func() { cancel(); <-done }()
		var st Status
		var werr error
		go func() {
			defer close(done)
			st, werr = c.send(uctx, app, k, m)
		}()
		r := &reader{seen: map[string]bool{}}
		var poll <-chan time.Time
		if c.cfg.Poll > 0 {
			t := time.NewTicker(c.cfg.Poll)
			defer t.Stop()
			poll = t.C
		}
		for finished := false; !finished; {
			select {
			case <-done:
				finished = true
			case <-f.wake:
			case <-poll:
				if !r.poll(ctx, app, k, after, yield) {
					return
				}
				continue
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			}
			// The events published before the turn ended are in the feed
			// when its update answers.
			evs, lost := f.take()
			r.lost = r.lost || lost
			for _, ev := range evs {
				if !r.yield(ev, yield) {
					return // the caller stopped reading: the invocation goes on
				}
			}
		}
		if werr != nil {
			yield(nil, werr)
			return
		}
		// What the feed did not bring (a worker in another process, or
		// one that took the turn over) is in the log.
		if r.lost || r.committed != st.End-st.Floor-1 || st.Error != "" {
			if !r.catchUp(ctx, app, k, st.Floor, yield) {
				return
			}
		}
		if st.Error != "" {
			yield(nil, st.err())
		}
	}
}

// reader yields the events of one message, each committed one once,
// whether it comes from the feed or from the log.
type reader struct {
	seen      map[string]bool // the committed events yielded
	committed int             // how many
	lost      bool            // the feed dropped events
	log       *stream         // the log read by poll, or nil
}

// yield yields ev unless it is a committed event yielded already.
func (r *reader) yield(ev *event.Event, yield func(*event.Event, error) bool) bool {
	if !ev.Partial {
		if r.seen[ev.ID] {
			return true
		}
		r.seen[ev.ID] = true
		r.committed++
	}
	return yield(ev, nil)
}

// poll yields the invocation's events committed since the last poll,
// reading the log from index after on.
func (r *reader) poll(ctx context.Context, app *runner.Runner, k session.Key, after int, yield func(*event.Event, error) bool) bool {
	if r.log == nil {
		sess, err := app.Sessions().Get(ctx, k, &session.GetOptions{AfterSeq: int64(after)})
		if err != nil {
			yield(nil, err)
			return false
		}
		r.log = &stream{svc: app.Sessions(), sess: sess, next: max(after-offset(sess), 0)}
	}
	return r.log.read(ctx, func(ev *event.Event, err error) bool {
		if err != nil {
			return yield(nil, err)
		}
		return r.yield(ev, yield)
	})
}

// catchUp yields the invocation's committed events of the log from index
// floor on that were not yielded yet.
func (r *reader) catchUp(ctx context.Context, app *runner.Runner, k session.Key, floor int, yield func(*event.Event, error) bool) bool {
	sess, err := app.Sessions().Get(ctx, k, &session.GetOptions{AfterSeq: int64(floor)})
	if err != nil {
		yield(nil, err)
		return false
	}
	s := &stream{svc: app.Sessions(), sess: sess, next: max(floor-offset(sess), 0)}
	return s.yieldFrom(func(ev *event.Event, err error) bool {
		if err != nil {
			return yield(nil, err)
		}
		return r.yield(ev, yield)
	})
}

// admit refuses what the runner would refuse (runner.Runner.Admit): the
// client gets a clear error and nothing is sent. It returns the length of
// the session log.
func admit(ctx context.Context, app *runner.Runner, k session.Key, msg *genai.Content, invocationID string) (int, error) {
	// Only a message that answers calls or names an invocation needs
	// the log for that. The calls a message answers are most often recent:
	// they are looked for among the last events first, in the whole
	// log only if that fails.
	read := &session.GetOptions{NoEvents: true}
	switch {
	case invocationID != "":
		read = nil
	case answersCalls(msg):
		read = &session.GetOptions{NumRecentEvents: recentCalls}
	}
	sess, err := app.Sessions().Get(ctx, k, read)
	if err != nil {
		return 0, err
	}
	n := int(sess.Seq())
	err = app.Admit(sess, msg, invocationID)
	if err == nil || offset(sess) == 0 {
		return n, err
	}
	// The window left events out.
	if sess, err = app.Sessions().Get(ctx, k, nil); err != nil {
		return 0, err
	}
	return n, app.Admit(sess, msg, invocationID)
}

// sendAttempts bounds how often a message is sent again because the
// session's workflow ended (idle, or continued as new) before its turn.
const sendAttempts = 3

// send hands the message to the session's workflow with the run update,
// starting the workflow if none runs, and returns the message's status once
// its turn ended or paused.
func (c *Client) send(ctx context.Context, app *runner.Runner, k session.Key, m Message) (Status, error) {
	id := c.WorkflowID(k.AppName, k.UserID, k.SessionID)
	in := SessionInput{App: k.AppName, User: k.UserID, Session: k.SessionID, TreeHash: TreeHash(app.Tree()), Options: c.cfg.Options}
	for attempt := 1; ; attempt++ {
		start := c.cfg.Client.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
			ID:                       id,
			TaskQueue:                c.cfg.TaskQueue,
			WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
			WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
			WorkflowTaskTimeout:      c.cfg.Options.withDefaults().HeartbeatTimeout,
		}, WorkflowName, in)
		h, err := c.cfg.Client.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
			StartWorkflowOperation: start,
			UpdateOptions: client.UpdateWorkflowOptions{
				UpdateID:     fmt.Sprintf("%s-%d", m.RequestID, attempt),
				UpdateName:   UpdateRun,
				Args:         []any{m},
				WaitForStage: client.WorkflowUpdateStageCompleted,
			},
		})
		var st Status
		if err == nil {
			err = h.Get(ctx, &st)
		}
		if err != nil {
			var nf *serviceerror.NotFound
			if errors.As(err, &nf) {
				return Status{}, fmt.Errorf("temporal: the session workflow ended before answering: %w", err)
			}
			return Status{}, fmt.Errorf("temporal: run: %w", err)
		}
		if st.ErrorType != errEnded || attempt == sendAttempts {
			return st, nil
		}
	}
}

// stream reads a session log past a point and yields the events of the
// invocation of its first user message.
type stream struct {
	svc          *session.Service
	sess         *session.Session // refreshed with what was appended since each read
	next         int              // index in sess of the next event to look at
	invocationID string
}

// read yields the events logged since the last read, which it loads alone
// (session.Service.Refresh), so a poll costs what was appended, not the
// length of the session. It returns false if the caller stopped or reading
// failed (the error is yielded).
func (s *stream) read(ctx context.Context, yield func(*event.Event, error) bool) bool {
	if err := s.svc.Refresh(ctx, s.sess); err != nil {
		yield(nil, err)
		return false
	}
	return s.yieldFrom(yield)
}

// yieldFrom yields the events of sess from next on that belong to the
// invocation.
func (s *stream) yieldFrom(yield func(*event.Event, error) bool) bool {
	for ; s.next < s.sess.Len(); s.next++ {
		ev := s.sess.At(s.next)
		if ev.Author == event.AuthorUser {
			if s.invocationID == "" {
				s.invocationID = ev.InvocationID
			}
			continue
		}
		if ev.InvocationID != s.invocationID {
			continue
		}
		if !yield(ev, nil) {
			s.next++
			return false
		}
	}
	return true
}

// Cancel cancels the workflow of a session: its running invocation stops
// (the running activity learns it from its next heartbeat) and its queued
// messages are dropped. Cancelling a session without a workflow does
// nothing.
func (c *Client) Cancel(ctx context.Context, app *runner.Runner, userID, sessionID string) error {
	err := c.cfg.Client.CancelWorkflow(ctx, c.WorkflowID(app.AppName(), userID, sessionID), "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("temporal: cancel session workflow: %w", err)
	}
	return nil
}

// err returns the error that ended the message: one that wraps
// agent.ErrLLMCallLimit for an invocation that exceeded its model-call
// limit, as runner.Runner.Run's would.
func (st *Status) err() error {
	e := &invocationError{msg: fmt.Sprintf("temporal: invocation %s: %s", st.InvocationID, st.Error)}
	if st.ErrorType == errLLMCallLimitType {
		e.kind = agent.ErrLLMCallLimit
	}
	return e
}

// invocationError is the failure of an invocation that ran on a worker, as
// its status reports it.
type invocationError struct {
	msg  string
	kind error // a Loom error it stands for, or nil
}

func (e *invocationError) Error() string { return e.msg }
func (e *invocationError) Unwrap() error { return e.kind }
