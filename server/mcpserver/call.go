package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
)

// Statuses of a Result.
const (
	StatusCompleted = "completed"
	StatusPending   = "pending"
	StatusFailed    = "failed"
)

// Result is the structured content of the tool's result.
type Result struct {
	// SessionID is the Loom session of the call: pass it to continue.
	SessionID string `json:"session_id"`
	// Status is StatusCompleted, StatusPending (Pending lists what the
	// session waits for) or StatusFailed (Error says why).
	Status string `json:"status"`
	// Response is the agent's final response text.
	Response string `json:"response,omitempty"`
	// Pending lists the calls waiting for an answer.
	Pending []Pending `json:"pending,omitempty"`
	// Error is the error of a failed invocation.
	Error string `json:"error,omitempty"`
}

// Pending is a call the session waits for an answer to.
type Pending struct {
	// ID is the call's id, the key of its answer in "answers".
	ID string `json:"id"`
	// Name is the function called: adk_request_confirmation,
	// adk_request_input, adk_request_credential or a long-running tool.
	Name string `json:"name"`
	// Kind is "confirmation", "input", "credential" or "tool".
	Kind string `json:"kind"`
	// Message says what is asked, for a person.
	Message string `json:"message"`
	// Args are the call's arguments.
	Args map[string]any `json:"args,omitempty"`
}

// args are the tool's arguments.
type args struct {
	Request   string         `json:"request"`
	SessionID string         `json:"session_id"`
	Answers   map[string]any `json:"answers"`
}

// call serves one call of the tool.
func (h *Handler) call(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	select {
	case h.calls <- struct{}{}:
		defer func() { <-h.calls }()
	default:
		return errorResult("the server runs too many calls at once; try again later"), nil
	}
	ctx, cancel := context.WithTimeout(ctx, h.cfg.CallTimeout)
	defer cancel()
	stop := context.AfterFunc(h.ctx, cancel)
	defer stop()

	var a args
	if len(req.Params.Arguments) > 0 {
		if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
			return errorResult("bad arguments: %v", err), nil
		}
	}
	authUser := ""
	if req.Extra != nil && req.Extra.TokenInfo != nil {
		authUser = req.Extra.TokenInfo.UserID
	}
	user, sid, waiting, failed := h.openSession(ctx, authUser, a.SessionID)
	if failed != nil {
		return failed, nil
	}
	msg, early := message(a, sid, waiting)
	if early != nil {
		return early, nil
	}
	return h.converse(ctx, req, user, sid, msg), nil
}

// openSession returns the user and the session a call runs in, creating
// the session when the call names none, and the calls of a continued
// session that still wait for answers. A session id that is not valid or
// not found, or a store that fails, gives the error result to return.
func (h *Handler) openSession(ctx context.Context, authUser, sid string) (user, id string, waiting []Pending, failed *mcp.CallToolResult) {
	newSession := sid == ""
	if newSession {
		sid = newSessionID()
	} else if err := session.CheckID("session id", sid); err != nil {
		return "", "", nil, errorResult("%v", err)
	}
	user = authUser
	if user == "" {
		user = UserPrefix + sid
	}
	r := h.cfg.Runner
	key := session.Key{AppName: r.AppName(), UserID: user, SessionID: sid}
	if newSession {
		if _, err := r.Sessions().Create(ctx, key, nil); err != nil {
			return "", "", nil, errorResult("create session %s: %v", sid, err)
		}
		return user, sid, nil, nil
	}
	sess, err := r.Sessions().Get(ctx, key, nil)
	if errors.Is(err, session.ErrNotFound) {
		return "", "", nil, errorResult("no session %s: pass the session_id of an earlier result, or none to start a new session", sid)
	}
	if err != nil {
		return "", "", nil, errorResult("read session %s: %v", sid, err)
	}
	return user, sid, waitingCalls(sess), nil
}

// message returns the user message of a call's arguments: its answers to
// the calls waiting, or its request when none waits. Arguments that do
// neither give the result to return instead.
func message(a args, sid string, waiting []Pending) (*genai.Content, *mcp.CallToolResult) {
	switch {
	case len(a.Answers) > 0:
		if a.Request != "" {
			return nil, errorResult("pass either request or answers, not both")
		}
		parts, err := answered(waiting, a.Answers)
		if err != nil {
			return nil, errorResult("%v", err)
		}
		return &genai.Content{Role: genai.RoleUser, Parts: parts}, nil
	case len(waiting) > 0:
		return nil, pendingResult(sid, waiting, "The session waits for answers before it takes a new request: pass them in answers. ")
	case strings.TrimSpace(a.Request) == "":
		return nil, errorResult("request is required: the message to the agent")
	}
	return genai.NewContentFromText(a.Request, genai.RoleUser), nil
}

// converse runs the invocation msg starts and, while it pauses and the
// client can answer, asks the client through elicitation and runs the
// answers, for MaxElicitRounds rounds at the most.
func (h *Handler) converse(ctx context.Context, req *mcp.CallToolRequest, user, sid string, msg *genai.Content) *mcp.CallToolResult {
	for round := 0; ; round++ {
		out := h.run(ctx, user, sid, msg)
		if out.failure != "" || len(out.pending) == 0 {
			return out.result(sid)
		}
		if round >= h.cfg.MaxElicitRounds || !canElicit(req.Session, out.pending) {
			return out.result(sid)
		}
		// Ask the client, one call after the other; anything but an
		// answer to each leaves the session waiting.
		responses := map[string]*mcp.ElicitResult{}
		for _, p := range out.pending {
			res, err := req.Session.Elicit(ctx, elicitation(p))
			if err != nil {
				return out.result(sid)
			}
			responses[p.ID] = res
		}
		parts := elicited(out.pending, responses)
		if len(parts) == 0 {
			return out.result(sid)
		}
		msg = &genai.Content{Role: genai.RoleUser, Parts: parts}
	}
}

// outcome is what an invocation ended with.
type outcome struct {
	texts   []string
	pending []Pending
	failure string
}

// run runs one invocation of msg in the session.
func (h *Handler) run(ctx context.Context, user, sid string, msg *genai.Content) outcome {
	var out outcome
	for ev, err := range h.cfg.Runner.Run(ctx, user, sid, msg, nil) {
		if err != nil {
			out.failure = err.Error()
			break
		}
		if ev.Partial {
			continue
		}
		calls, kinds := agent.PausingCalls(ev)
		for i, fc := range calls {
			out.pending = append(out.pending, pendingOf(fc, kinds[i]))
		}
		if ev.ErrorCode != "" || ev.ErrorMessage != "" {
			out.failure = strings.TrimSpace(ev.ErrorCode + ": " + ev.ErrorMessage)
		}
		if t := finalText(ev); t != "" {
			out.texts = append(out.texts, t)
		}
	}
	return out
}

// result is the tool result of an outcome.
func (o outcome) result(sid string) *mcp.CallToolResult {
	text := strings.Join(o.texts, "\n")
	switch {
	case o.failure != "":
		res := Result{SessionID: sid, Status: StatusFailed, Response: text, Error: o.failure}
		return &mcp.CallToolResult{IsError: true, StructuredContent: res, Content: []mcp.Content{&mcp.TextContent{Text: "The agent failed: " + o.failure}}}
	case len(o.pending) > 0:
		r := pendingResult(sid, o.pending, "")
		if text != "" {
			r.Content = append([]mcp.Content{&mcp.TextContent{Text: text}}, r.Content...)
			res := r.StructuredContent.(Result)
			res.Response = text
			r.StructuredContent = res
		}
		return r
	}
	return &mcp.CallToolResult{StructuredContent: Result{SessionID: sid, Status: StatusCompleted, Response: text}, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// pendingResult is the result of a session that waits for answers.
func pendingResult(sid string, pending []Pending, lead string) *mcp.CallToolResult {
	var b strings.Builder
	b.WriteString(lead)
	fmt.Fprintf(&b, "The agent waits for answers (session_id %s). Call again with that session_id and answers, an object from call id to answer:", sid)
	for _, p := range pending {
		fmt.Fprintf(&b, "\n- %s (%s): %s", p.ID, p.Kind, p.Message)
	}
	return &mcp.CallToolResult{
		StructuredContent: Result{SessionID: sid, Status: StatusPending, Pending: pending},
		Content:           []mcp.Content{&mcp.TextContent{Text: b.String()}},
	}
}

// finalText returns the text of ev when it is an agent's final response:
// text without function calls or responses, thoughts left out.
func finalText(ev *event.Event) string {
	if ev.Author == event.AuthorUser || ev.Content == nil || len(ev.FunctionCalls()) > 0 || len(ev.FunctionResponses()) > 0 {
		return ""
	}
	var b strings.Builder
	for _, p := range ev.Content.Parts {
		if p != nil && p.Text != "" && !p.Thought {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// waitingCalls returns the pausing calls of sess that still wait for the
// client, oldest first. Calls a rewind took back do not wait.
func waitingCalls(sess *session.Session) []Pending {
	first, ok := agent.FirstWaiting(sess)
	if !ok {
		return nil
	}
	evs := sess.EventsFrom(first)
	var out []Pending
	for i, ev := range event.Visible(event.Events(evs)) { // newest first
		calls, kinds := agent.PausingCalls(ev)
		for j := len(calls) - 1; j >= 0; j-- {
			if agent.Waiting(evs[i+1:], kinds[j], calls[j].ID) {
				out = append(out, pendingOf(calls[j], kinds[j]))
			}
		}
	}
	slices.Reverse(out)
	return out
}
