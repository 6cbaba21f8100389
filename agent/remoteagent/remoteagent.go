// Package remoteagent provides an agent that runs on another server and is
// reached over the Agent2Agent (A2A) protocol, with the A2A project's Go
// SDK (github.com/a2aproject/a2a-go).
//
// A remote agent is an [agent.Agent] like any other: a sub-agent an LLM
// agent transfers to, a node of a workflow agent, or a tool through
// tool/agenttool. Each run sends one A2A message and turns what the remote
// answers into Loom events:
//
//   - artifacts, and the message of a completed task or a reply message,
//     become committed events of the agent;
//   - the messages of "working" status updates become partial events, shown
//     as they stream and not stored;
//   - "input-required" (and "auth-required") pause the invocation: the
//     remote's pausing function calls are repeated as long-running calls of
//     the remote agent (an ADK or Loom peer asks for a confirmation this
//     way), or, when the remote asks in words, one long-running call named
//     [InputFunction] with args {"message": the question}. The user answers
//     the call with a function response, as for any paused call; the next
//     run of the agent sends the answer on the same remote task;
//   - "failed", "rejected" and "canceled", and any error of the request,
//     become an error event (ErrorCode one of the Error* constants) rather
//     than an error of the invocation.
//
// Each event records the remote task and context ids in its custom
// metadata (MetaTaskID, MetaContextID); later runs in the same session
// continue the same remote context.
package remoteagent

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"
	"github.com/google/uuid"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/internal/a2aparts"
)

// InputFunction is the name of the long-running call that stands for a
// remote question asked in words.
const InputFunction = "a2a_input"

// Custom metadata keys of the remote agent's events.
const (
	MetaTaskID    = "a2a:task_id"
	MetaContextID = "a2a:context_id"
)

// Error codes of the remote agent's error events.
const (
	// ErrorUnreachable: the agent card could not be fetched or the client
	// could not be built.
	ErrorUnreachable = "A2A_UNREACHABLE"
	// ErrorRequest: the A2A request failed (transport or JSON-RPC error).
	ErrorRequest = "A2A_REQUEST_FAILED"
	// ErrorTaskFailed, ErrorTaskRejected, ErrorTaskCanceled: the remote
	// task ended so.
	ErrorTaskFailed   = "A2A_TASK_FAILED"
	ErrorTaskRejected = "A2A_TASK_REJECTED"
	ErrorTaskCanceled = "A2A_TASK_CANCELED"
	// ErrorNoInput: there was nothing to send.
	ErrorNoInput = "A2A_NO_INPUT"
)

// Config configures an Agent.
type Config struct {
	// Name is the agent's name in its tree. Required.
	Name string
	// Description tells other agents what the remote agent does (default:
	// the card's description when Card is set).
	Description string
	// URL locates the remote agent's card, fetched on the first run: a URL
	// whose path ends in ".json" is the card's own URL (as ADK's samples
	// give it, e.g. http://host/a2a/app/.well-known/agent.json); any other
	// is the agent's base URL, its card at URL +
	// "/.well-known/agent-card.json". One of URL and Card is required.
	URL string
	// Card is the remote agent's card, when already known.
	Card *a2a.AgentCard
	// HTTPClient makes the requests (default: a client without a timeout
	// of its own; the invocation's context bounds each run).
	HTTPClient *http.Client
}

// Agent is an agent served by an A2A server. It is safe for concurrent use.
type Agent struct {
	cfg Config

	mu     sync.Mutex
	card   *a2a.AgentCard
	client *a2aclient.Client
}

var _ agent.Agent = (*Agent)(nil)

// New returns a remote agent for cfg. It does not contact the remote.
func New(cfg Config) (*Agent, error) {
	if cfg.Name == "" {
		return nil, errors.New("remoteagent: a name is required")
	}
	if cfg.URL == "" && cfg.Card == nil {
		return nil, errors.New("remoteagent: a URL or an agent card is required")
	}
	if cfg.Description == "" && cfg.Card != nil {
		cfg.Description = cfg.Card.Description
	}
	if cfg.Description == "" {
		cfg.Description = "A remote agent at " + cfg.URL + "."
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	return &Agent{cfg: cfg, card: cfg.Card}, nil
}

// Name implements agent.Agent.
func (a *Agent) Name() string { return a.cfg.Name }

// Description implements agent.Agent.
func (a *Agent) Description() string { return a.cfg.Description }

// connect returns the A2A client, fetching the card on first use. A failed
// attempt is retried on the next run.
func (a *Agent) connect(ctx context.Context) (*a2aclient.Client, *a2a.AgentCard, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.client != nil {
		return a.client, a.card, nil
	}
	card := a.card
	if card == nil {
		c, err := a.fetchCard(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("fetch the agent card of %s: %w", a.cfg.URL, err)
		}
		card = c
	}
	if card.PreferredTransport == "" {
		// The protocol's default, and what a2a-python's cards leave out.
		c := *card
		c.PreferredTransport = a2a.TransportProtocolJSONRPC
		card = &c
	}
	client, err := a2aclient.NewFromCard(ctx, card, jsonrpcTransportOption(a.cfg.HTTPClient))
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", card.URL, err)
	}
	a.card, a.client = card, client
	return client, card, nil
}

// fetchCard fetches the card from Config.URL: the URL itself when its path
// names a JSON file, else the well-known path below it.
func (a *Agent) fetchCard(ctx context.Context) (*a2a.AgentCard, error) {
	resolver := agentcard.NewResolver(a.cfg.HTTPClient)
	u, err := url.Parse(a.cfg.URL)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(u.Path, ".json") {
		return resolver.Resolve(ctx, strings.TrimSuffix(a.cfg.URL, "/"))
	}
	path := u.Path
	u.Path, u.RawPath = "", ""
	return resolver.Resolve(ctx, u.String(), agentcard.WithPath(path))
}

// Run implements agent.Agent: it sends one message to the remote agent and
// yields its answer as events (see the package documentation).
func (a *Agent) Run(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
	return func(yield func(*event.Event, error) bool) {
		client, card, err := a.connect(ctx)
		if err != nil {
			yield(a.errorEvent(inv, ids{}, ErrorUnreachable, err.Error()), nil)
			return
		}
		msg, prev := a.request(inv)
		if msg == nil {
			yield(a.errorEvent(inv, prev, ErrorNoInput, "remote agent "+a.Name()+": there is no message to send"), nil)
			return
		}
		params := &a2a.MessageSendParams{Message: msg}
		s := &stream{a: a, inv: inv, ids: prev, yield: yield, streaming: card.Capabilities.Streaming}
		if card.Capabilities.Streaming {
			for ev, err := range client.SendStreamingMessage(ctx, params) {
				if err != nil {
					s.fail(err)
					return
				}
				if !s.handle(ev) {
					return
				}
			}
		} else {
			res, err := client.SendMessage(ctx, params)
			if err != nil {
				s.fail(err)
				return
			}
			if !s.handle(res) {
				return
			}
		}
		s.end()
	}
}

// ids are the remote task and context of a run.
type ids struct{ task, context string }

func (i ids) meta() map[string]any {
	m := map[string]any{}
	if i.task != "" {
		m[MetaTaskID] = i.task
	}
	if i.context != "" {
		m[MetaContextID] = i.context
	}
	return m
}

func idsOf(ev *event.Event) ids {
	t, _ := ev.CustomMetadata[MetaTaskID].(string)
	c, _ := ev.CustomMetadata[MetaContextID].(string)
	return ids{task: t, context: c}
}

// request builds the message of a run: the answers to the agent's paused
// calls, sent on the paused remote task, or else the user's message of
// the invocation, in the remote context of the agent's earlier runs in
// the session.
func (a *Agent) request(inv *agent.Invocation) (*a2a.Message, ids) {
	sess := inv.Session()
	if answers := inv.Answers(); len(answers) > 0 {
		var parts []a2a.Part
		var on ids
		for _, ans := range answers {
			if ans.CallIndex >= 0 && ans.CallIndex < sess.Len() {
				on = idsOf(sess.At(ans.CallIndex))
			}
			parts = append(parts, answerPart(ans)...)
		}
		if on.task != "" {
			m := a2a.NewMessage(a2a.MessageRoleUser, parts...)
			m.TaskID, m.ContextID = a2a.TaskID(on.task), on.context
			return m, on
		}
	}
	var prev ids
	// Newest first, among the events that may name the agent.
	for _, ev := range sess.EventsMentioning(a.Name()) {
		if ev.Author == a.Name() {
			if p := idsOf(ev); p.context != "" {
				prev = ids{context: p.context}
				break
			}
		}
	}
	var parts []a2a.Part
	if uc := inv.UserContent(); uc != nil {
		parts = a2aparts.FromGenai(textOnly(uc.Parts), nil)
	}
	if len(parts) == 0 {
		return nil, prev
	}
	m := a2a.NewMessage(a2a.MessageRoleUser, parts...)
	m.ContextID = prev.context
	return m, prev
}

// textOnly drops function calls and responses: the remote did not make
// them.
func textOnly(parts []*genai.Part) []*genai.Part {
	var out []*genai.Part
	for _, p := range parts {
		if p != nil && p.FunctionCall == nil && p.FunctionResponse == nil {
			out = append(out, p)
		}
	}
	return out
}

// answerPart is what the remote is sent for the user's answer to a paused
// call: a function response for a call the remote made, or, for a
// question in words, the answer's text (a "response" or "text" string) or
// its data.
func answerPart(ans agent.Answer) []a2a.Part {
	resp := ans.Response.Response
	if ans.Call.Name != InputFunction {
		return a2aparts.FromGenai([]*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: ans.Call.ID, Name: ans.Call.Name, Response: resp}}}, nil)
	}
	for _, k := range []string{"response", "text", "answer"} {
		if s, ok := resp[k].(string); ok && len(resp) == 1 {
			return []a2a.Part{a2a.TextPart{Text: s}}
		}
	}
	return []a2a.Part{a2a.DataPart{Data: resp}}
}

// stream turns the A2A events of one run into Loom events.
type stream struct {
	a     *Agent
	inv   *agent.Invocation
	ids   ids
	yield func(*event.Event, error) bool

	streaming bool
	snapshot  *a2a.Task // the last task snapshot of a stream
	news      bool      // an update came after the snapshot
	ended     bool      // a final state was handled
}

func (s *stream) newEvent(parts []*genai.Part) *event.Event {
	ev := s.inv.NewEvent()
	if len(parts) > 0 {
		ev.Content = &genai.Content{Role: genai.RoleModel, Parts: parts}
	}
	ev.CustomMetadata = s.ids.meta()
	return ev
}

// emit yields the parts as an event; partial events are not committed.
func (s *stream) emit(parts []a2a.Part, partial bool) bool {
	gp, err := a2aparts.ToGenai(parts)
	if err != nil {
		return s.yield(s.a.errorEvent(s.inv, s.ids, ErrorRequest, "remote agent "+s.a.Name()+" sent a malformed part: "+err.Error()), nil) && false
	}
	if partial {
		gp = textOnly(gp)
	}
	if len(gp) == 0 {
		return true
	}
	ev := s.newEvent(gp)
	ev.Partial = partial
	return s.yield(ev, nil)
}

// handle processes one A2A event; false stops the run.
func (s *stream) handle(ev a2a.Event) bool {
	switch v := ev.(type) {
	case *a2a.Message:
		if v.TaskID != "" {
			s.ids.task = string(v.TaskID)
		}
		if v.ContextID != "" {
			s.ids.context = v.ContextID
		}
		s.ended = true
		return s.emit(v.Parts, false) && false
	case *a2a.Task:
		s.ids = ids{task: string(v.ID), context: v.ContextID}
		if s.streaming {
			// A stream starts with a snapshot of the task, whose status
			// may still be the one a reply answers: it counts only if
			// the stream ends without news (see end).
			s.snapshot, s.news = v, false
			return true
		}
		for _, art := range v.Artifacts {
			if !s.emit(art.Parts, false) {
				return false
			}
		}
		return s.status(v.Status, v.Status.State.Terminal() || v.Status.State == a2a.TaskStateInputRequired || v.Status.State == a2a.TaskStateAuthRequired)
	case *a2a.TaskStatusUpdateEvent:
		s.ids, s.news = ids{task: string(v.TaskID), context: v.ContextID}, true
		return s.status(v.Status, v.Final)
	case *a2a.TaskArtifactUpdateEvent:
		s.ids, s.news = ids{task: string(v.TaskID), context: v.ContextID}, true
		if v.Artifact == nil {
			return true
		}
		return s.emit(v.Artifact.Parts, false)
	}
	return true
}

// status processes a task status; false stops the run.
func (s *stream) status(st a2a.TaskStatus, final bool) bool {
	var parts []a2a.Part
	if st.Message != nil {
		parts = st.Message.Parts
	}
	switch st.State {
	case a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired:
		s.ended = true
		s.pause(parts)
		return false
	case a2a.TaskStateFailed:
		s.ended = true
		s.yield(s.a.errorEvent(s.inv, s.ids, ErrorTaskFailed, s.reason(parts, "failed")), nil)
		return false
	case a2a.TaskStateRejected:
		s.ended = true
		s.yield(s.a.errorEvent(s.inv, s.ids, ErrorTaskRejected, s.reason(parts, "was rejected")), nil)
		return false
	case a2a.TaskStateCanceled:
		s.ended = true
		s.yield(s.a.errorEvent(s.inv, s.ids, ErrorTaskCanceled, s.reason(parts, "was canceled")), nil)
		return false
	case a2a.TaskStateCompleted:
		s.ended = true
		return s.emit(parts, false) && false
	}
	if final {
		s.ended = true
	}
	return s.emit(parts, true) && !final
}

func (s *stream) reason(parts []a2a.Part, what string) string {
	msg := fmt.Sprintf("remote agent %s: task %s %s", s.a.Name(), s.ids.task, what)
	if t := a2aparts.Text(parts); t != "" {
		msg += ": " + t
	}
	return msg
}

// pause yields the event that pauses the invocation on the remote's
// request for input.
func (s *stream) pause(parts []a2a.Part) {
	var out []*genai.Part
	var longRun []string
	for _, p := range parts {
		dp, ok := p.(a2a.DataPart)
		if !ok || a2aparts.Kind(dp) != a2aparts.TypeFunctionCall {
			continue
		}
		if lr, _ := dp.Metadata[a2aparts.MetaLongRunning].(bool); !lr {
			continue
		}
		gp, err := a2aparts.ToGenai([]a2a.Part{dp})
		if err != nil || gp[0].FunctionCall.ID == "" {
			continue
		}
		out = append(out, gp[0])
		longRun = append(longRun, gp[0].FunctionCall.ID)
	}
	question := a2aparts.Text(parts)
	if len(out) == 0 {
		id := "a2a-" + uuid.NewString()
		if question == "" {
			question = "The remote agent " + s.a.Name() + " needs more input."
		}
		out = append(out, &genai.Part{FunctionCall: &genai.FunctionCall{ID: id, Name: InputFunction, Args: map[string]any{"message": question}}})
		longRun = append(longRun, id)
	}
	if question != "" {
		out = append([]*genai.Part{{Text: question}}, out...)
	}
	ev := s.newEvent(out)
	ev.LongRunningToolIDs = longRun
	if s.yield(ev, nil) {
		// The whole invocation waits for the answer: enclosing workflows
		// do not run ahead.
		s.inv.End()
	}
}

// fail reports a failed request.
func (s *stream) fail(err error) {
	s.yield(s.a.errorEvent(s.inv, s.ids, ErrorRequest, fmt.Sprintf("remote agent %s: %v", s.a.Name(), err)), nil)
}

// end checks that the remote ended the task.
func (s *stream) end() {
	if !s.ended && s.snapshot != nil {
		if st := s.snapshot.Status.State; st.Terminal() || st == a2a.TaskStateInputRequired || st == a2a.TaskStateAuthRequired {
			// A stream of the finished task alone: its artifacts are the
			// answer, as in a reply to message/send.
			for _, art := range s.snapshot.Artifacts {
				if s.news {
					break
				}
				if !s.emit(art.Parts, false) {
					return
				}
			}
			s.status(s.snapshot.Status, true)
		}
	}
	if !s.ended {
		s.yield(s.a.errorEvent(s.inv, s.ids, ErrorRequest, "remote agent "+s.a.Name()+": the stream ended before the task did"), nil)
	}
}

func (a *Agent) errorEvent(inv *agent.Invocation, on ids, code, msg string) *event.Event {
	ev := inv.NewEvent()
	ev.ErrorCode, ev.ErrorMessage = code, msg
	ev.CustomMetadata = on.meta()
	return ev
}
