package a2aserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2asrv"
	"github.com/a2aproject/a2a-go/a2asrv/eventqueue"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/internal/a2aparts"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session"
)

// contextUser is the Loom user of a context's session: the caller that
// server.Config.Authenticate bound the request to, so that a context id
// names a different session for each caller, or else, as ADK does,
// UserPrefix + the context id.
func contextUser(ctx context.Context, contextID string) string {
	if u, ok := server.AuthenticatedUser(ctx); ok {
		return u
	}
	return UserPrefix + contextID
}

// UserPrefix is prefixed to a context id to name the Loom user of its
// session, as ADK's A2A server does.
const UserPrefix = "A2A_USER_"

// Metadata keys of the status messages, naming the Loom event a message
// carries.
const (
	MetaAuthor       = "adk_author"
	MetaEventID      = "adk_event_id"
	MetaInvocationID = "adk_invocation_id"
	MetaBranch       = "adk_branch"
	MetaErrorCode    = "adk_error_code"
)

// errCanceled is the cause of an invocation cancelled by tasks/cancel.
var errCanceled = errors.New("a2aserver: task canceled")

// executor runs A2A tasks as Loom invocations.
type executor struct {
	r *runner.Runner

	mu      sync.Mutex
	running map[a2a.TaskID]context.CancelCauseFunc
}

func newExecutor(r *runner.Runner) *executor {
	return &executor{r: r, running: map[a2a.TaskID]context.CancelCauseFunc{}}
}

// Execute runs the invocation of one message of a task and writes its
// events to q, ending with a final status.
func (e *executor) Execute(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	if err := session.CheckID("context id", rc.ContextID); err != nil {
		return fmt.Errorf("%w: %w", a2a.ErrInvalidParams, err)
	}
	msg, err := userMessage(rc)
	if err != nil {
		return fmt.Errorf("%w: %w", a2a.ErrInvalidParams, err)
	}

	userID := contextUser(ctx, rc.ContextID)
	if rc.StoredTask == nil { // a new task, maybe of a new context
		key := session.Key{AppName: e.r.AppName(), UserID: userID, SessionID: rc.ContextID}
		if _, err := e.r.Sessions().Create(ctx, key, nil); err != nil && !errors.Is(err, session.ErrAlreadyExists) {
			return fmt.Errorf("create the session of context %s: %w", rc.ContextID, err)
		}
	}

	runCtx, cancel := context.WithCancelCause(ctx)
	e.mu.Lock()
	e.running[rc.TaskID] = cancel
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.running, rc.TaskID)
		e.mu.Unlock()
		cancel(nil)
	}()

	// The task's history keeps the message as the session log does: a
	// credential the client sent (an answer to a credential request, or
	// an approval relaying one) stays with the runner, in memory.
	kept := e.keptMessage(ctx, rc, userID, msg)
	if rc.StoredTask == nil {
		if err := q.Write(ctx, a2a.NewSubmittedTask(rc, kept)); err != nil {
			return err
		}
	} else if kept != rc.Message {
		// The SDK stored the reply in the task's history as it came: the
		// task saved again replaces it.
		task := *rc.StoredTask
		task.History = slices.Clone(task.History)
		for i, m := range task.History {
			if m == rc.Message || (m != nil && m.ID == rc.Message.ID) {
				task.History[i] = kept
			}
		}
		task.Status = a2a.TaskStatus{State: a2a.TaskStateWorking}
		if err := q.Write(ctx, &task); err != nil {
			return err
		}
	}
	if err := q.Write(ctx, a2a.NewStatusUpdateEvent(rc, a2a.TaskStateWorking, nil)); err != nil {
		return err
	}

	t := &taskRun{rc: rc, q: q, artifact: a2a.NewArtifactID(), credentialsOnly: true}
	for ev, err := range e.r.Run(runCtx, userID, rc.ContextID, msg, nil) {
		if err != nil {
			if !errors.Is(context.Cause(runCtx), errCanceled) {
				t.failure = agentMessage(rc, nil, a2a.TextPart{Text: err.Error()})
			}
			break
		}
		if err := t.event(ctx, ev); err != nil {
			return err
		}
	}
	final := t.final(errors.Is(context.Cause(runCtx), errCanceled))
	final.Final = true
	return q.Write(ctx, final)
}

// keptMessage returns what the task's history keeps of the message of rc,
// msg once converted: rc.Message itself, or, when it carries credentials
// (agent.TakeCredentials decides, from the calls the ledger finds it
// answers), a copy whose parts are the function responses the session
// log stores instead.
func (e *executor) keptMessage(ctx context.Context, rc *a2asrv.RequestContext, userID string, msg *genai.Content) *a2a.Message {
	if !slices.ContainsFunc(msg.Parts, func(p *genai.Part) bool { return p != nil && p.FunctionResponse != nil }) {
		return rc.Message
	}
	stored, creds := msg, map[string]map[string]any(nil)
	key := session.Key{AppName: e.r.AppName(), UserID: userID, SessionID: rc.ContextID}
	if sess, err := e.r.Sessions().Get(ctx, key, nil); err == nil {
		if calls, err := agent.Pending(sess, msg); err == nil {
			stored, creds = agent.TakeCredentials(calls, msg)
		}
	}
	if creds == nil {
		// No pending call found (the run will refuse the message): a
		// response named as a credential answer is kept out all the same.
		stored, creds = agent.TakeCredentials(nil, msg)
	}
	if creds == nil {
		return rc.Message
	}
	m := *rc.Message
	m.Parts = a2aparts.FromGenai(stored.Parts, nil)
	return &m
}

// taskRun is the A2A side of one invocation of a task: what it wrote and
// what its final status will say.
type taskRun struct {
	rc       *a2asrv.RequestContext
	q        eventqueue.Queue
	pausing  []*genai.Part // the calls the invocation paused on
	longRun  []string      // their ids
	failure  *a2a.Message
	artifact a2a.ArtifactID // of the response
	appended bool           // the response artifact was written to
	// credentialsOnly: every pausing call asks for a credential, and the
	// task waits in "auth-required" instead of "input-required".
	credentialsOnly bool
}

// event writes an event of the invocation as a working status with its
// parts and its final text as the response artifact, and notes its pausing
// calls and error.
func (t *taskRun) event(ctx context.Context, ev *event.Event) error {
	rc := t.rc
	if ev.Partial {
		return nil
	}
	calls, kinds := agent.PausingCalls(ev)
	for i, fc := range calls {
		t.pausing = append(t.pausing, &genai.Part{FunctionCall: fc})
		t.longRun = append(t.longRun, fc.ID)
		t.credentialsOnly = t.credentialsOnly && (kinds[i] == agent.PauseCredential || agent.AsksCredential(fc))
	}
	var parts []a2a.Part
	if ev.Content != nil {
		parts = a2aparts.FromGenai(ev.Content.Parts, ev.LongRunningToolIDs)
	}
	if ev.ErrorCode != "" || ev.ErrorMessage != "" {
		text := ev.ErrorMessage
		if text == "" {
			text = ev.ErrorCode
		}
		t.failure = agentMessage(rc, eventMeta(ev), a2a.TextPart{Text: text})
		t.failure.Metadata[MetaErrorCode] = ev.ErrorCode
	}
	if len(parts) == 0 {
		return nil
	}
	if err := t.q.Write(ctx, a2a.NewStatusUpdateEvent(rc, a2a.TaskStateWorking, agentMessage(rc, eventMeta(ev), parts...))); err != nil {
		return err
	}
	if text := finalText(ev); len(text) > 0 {
		up := a2a.NewArtifactUpdateEvent(rc, t.artifact, text...)
		up.Append = t.appended
		up.Artifact.Name = "response"
		t.appended = true
		if err := t.q.Write(ctx, up); err != nil {
			return err
		}
	}
	return nil
}

// final returns the task's final status: canceled (when the client
// canceled it), failed, waiting for input or credentials, or completed.
func (t *taskRun) final(canceled bool) *a2a.TaskStatusUpdateEvent {
	rc := t.rc
	switch {
	case canceled:
		return a2a.NewStatusUpdateEvent(rc, a2a.TaskStateCanceled, nil)
	case t.failure != nil:
		return a2a.NewStatusUpdateEvent(rc, a2a.TaskStateFailed, t.failure)
	case len(t.pausing) > 0:
		state := a2a.TaskStateInputRequired
		if t.credentialsOnly {
			state = a2a.TaskStateAuthRequired
		}
		return a2a.NewStatusUpdateEvent(rc, state, agentMessage(rc, nil, a2aparts.FromGenai(t.pausing, t.longRun)...))
	}
	return a2a.NewStatusUpdateEvent(rc, a2a.TaskStateCompleted, nil)
}

// Cancel cancels the task's invocation if it runs (Execute then ends the
// task as canceled), or ends a paused task as canceled.
func (e *executor) Cancel(ctx context.Context, rc *a2asrv.RequestContext, q eventqueue.Queue) error {
	e.mu.Lock()
	cancel := e.running[rc.TaskID]
	e.mu.Unlock()
	if cancel != nil {
		cancel(errCanceled)
		return nil
	}
	ev := a2a.NewStatusUpdateEvent(rc, a2a.TaskStateCanceled, nil)
	ev.Final = true
	return q.Write(ctx, ev)
}

// cancelAll cancels every running invocation.
func (e *executor) cancelAll() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, cancel := range e.running {
		cancel(errCanceled)
	}
}

func agentMessage(rc *a2asrv.RequestContext, meta map[string]any, parts ...a2a.Part) *a2a.Message {
	m := a2a.NewMessageForTask(a2a.MessageRoleAgent, rc, parts...)
	if meta == nil {
		meta = map[string]any{}
	}
	m.Metadata = meta
	return m
}

func eventMeta(ev *event.Event) map[string]any {
	m := map[string]any{MetaAuthor: ev.Author, MetaEventID: ev.ID, MetaInvocationID: ev.InvocationID}
	if ev.Branch != "" {
		m[MetaBranch] = ev.Branch
	}
	return m
}

// finalText returns the text parts of ev when it is an agent's final
// response: text without function calls or responses.
func finalText(ev *event.Event) []a2a.Part {
	if ev.Author == event.AuthorUser || ev.Content == nil || len(ev.FunctionCalls()) > 0 || len(ev.FunctionResponses()) > 0 {
		return nil
	}
	var out []a2a.Part
	for _, p := range ev.Content.Parts {
		if p != nil && p.Text != "" && !p.Thought {
			out = append(out, a2a.TextPart{Text: p.Text})
		}
	}
	return out
}

// userMessage converts the message of rc to a Loom user message. A reply
// to an input-required task answers the task's pausing calls (see Handler).
func userMessage(rc *a2asrv.RequestContext) (*genai.Content, error) {
	if rc.Message == nil {
		return nil, errors.New("no message")
	}
	var parts []*genai.Part
	if calls := pendingCalls(rc.StoredTask); len(calls) > 0 {
		var err error
		if parts, err = answers(calls, rc.Message.Parts); err != nil {
			return nil, err
		}
	} else {
		var err error
		if parts, err = a2aparts.ToGenai(rc.Message.Parts); err != nil {
			return nil, err
		}
	}
	if len(parts) == 0 {
		return nil, errors.New("the message has no content")
	}
	return &genai.Content{Role: genai.RoleUser, Parts: parts}, nil
}

// pendingCalls returns the pausing calls an input-required task waits for.
func pendingCalls(task *a2a.Task) []*genai.FunctionCall {
	if task == nil || task.Status.Message == nil ||
		(task.Status.State != a2a.TaskStateInputRequired && task.Status.State != a2a.TaskStateAuthRequired) {
		return nil
	}
	var out []*genai.FunctionCall
	for _, p := range task.Status.Message.Parts {
		dp, ok := p.(a2a.DataPart)
		if !ok || a2aparts.Kind(dp) != a2aparts.TypeFunctionCall {
			continue
		}
		gp, err := a2aparts.ToGenai([]a2a.Part{dp})
		if err == nil && len(gp) == 1 && gp[0].FunctionCall.ID != "" {
			out = append(out, gp[0].FunctionCall)
		}
	}
	return out
}

// answers maps the reply parts to function responses for calls.
func answers(calls []*genai.FunctionCall, reply []a2a.Part) ([]*genai.Part, error) {
	var explicit, data []a2a.Part
	for _, p := range reply {
		if dp, ok := p.(a2a.DataPart); ok {
			if a2aparts.Kind(dp) == a2aparts.TypeFunctionResponse {
				explicit = append(explicit, dp)
			} else {
				data = append(data, dp)
			}
		}
	}
	if len(explicit) > 0 {
		parts, err := a2aparts.ToGenai(explicit)
		if err != nil {
			return nil, err
		}
		replies := make([]*genai.FunctionResponse, len(parts))
		for i, p := range parts {
			replies[i] = p.FunctionResponse
		}
		if err := agent.CheckReplies(calls, replies); err != nil {
			return nil, err
		}
		return parts, nil
	}
	text := strings.TrimSpace(a2aparts.Text(reply))
	if len(data) == 0 && text == "" {
		return nil, errors.New("the reply to an input-required task has neither text nor data")
	}
	var out []*genai.Part
	for _, fc := range calls {
		var resp map[string]any
		switch {
		case len(data) > 0:
			resp = data[0].(a2a.DataPart).Data
		case fc.Name == event.FunctionRequestConfirmation:
			resp = map[string]any{"confirmed": approves(text)}
		case fc.Name == graph.FunctionRequestInput:
			// A workflow node's input request: the answer in words is
			// {"result": text}, as the command line and the web UI send it.
			resp = map[string]any{"result": text}
		default:
			resp = map[string]any{"response": text}
		}
		out = append(out, &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: fc.ID, Name: fc.Name, Response: resp}})
	}
	return out, nil
}

// approves reports whether a text reply approves a confirmation.
func approves(text string) bool {
	switch strings.ToLower(strings.Trim(strings.TrimSpace(text), ".!")) {
	case "yes", "y", "ok", "approve", "approved", "confirm", "confirmed", "true":
		return true
	}
	return false
}
