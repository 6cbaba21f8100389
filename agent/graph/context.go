package graph

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/tool"
)

// FunctionRequestInput is the name of the function call with which a node
// asks the user for input, ADK's shared wire name. Its arguments are
// {"interrupt_id", "message", "payload", "response_schema"}; the client
// answers with a function response of the same id and name, whose response
// object is the input.
const FunctionRequestInput = event.FunctionRequestInput

// ErrWaitingForInput is returned by [Context.RequestInput] while the user
// has not answered. A node returns it (or an error wrapping it); the
// workflow then pauses the invocation, and runs the node again when the
// answer comes.
var ErrWaitingForInput = errors.New("workflow: waiting for user input")

// InputRequest is what a node asks the user.
type InputRequest struct {
	// Message is shown to the user.
	Message string
	// Payload is optional data for the client.
	Payload any
	// ResponseSchema is an optional JSON schema of the expected answer.
	ResponseSchema map[string]any
}

// Context is what a function node sees of its workflow run. State writes
// are staged and committed with the node's next event (its end, or a
// message it says). It belongs to one attempt of one node run and is not
// safe for concurrent use.
type Context struct {
	run   *run
	inv   *agent.Invocation // the node's own view: author and branch
	cc    *agent.CallbackContext
	path  string
	route string
	asked int // RequestInput calls so far
	emit  func(*event.Event) bool
	err   error // a failure of emit: the workflow is stopping
}

// Invocation returns the node's view of the invocation (the session, the
// services, the user message).
func (c *Context) Invocation() *agent.Invocation { return c.inv }

// State returns the session state; writes are staged into the node's next
// event.
func (c *Context) State() tool.State { return c.cc.State() }

// Path returns the node's path in the graph, such as "triage/classify@1".
func (c *Context) Path() string { return c.path }

// SetRoute chooses the outgoing edges with this route (see [Edge]).
func (c *Context) SetRoute(route string) { c.route = route }

// Say yields a message from the node, with the state staged so far; it
// returns once the event is committed.
func (c *Context) Say(text string) error {
	ev := c.cc.Event()
	ev.Content = genai.NewContentFromText(text, genai.RoleModel)
	ev.NodeInfo = &event.NodeInfo{Path: c.path}
	return c.yield(ev)
}

func (c *Context) yield(ev *event.Event) error {
	if c.err != nil {
		return c.err
	}
	if !c.emit(ev) {
		c.err = errStopped
		return c.err
	}
	return nil
}

// errStopped reports that the caller stopped ranging over the events.
var errStopped = errors.New("workflow: stopped")

// RequestInput asks the user for input with an adk_request_input function
// call. The first time, it yields the call, which pauses the invocation,
// and returns ErrWaitingForInput, which the node returns. While the call
// waits, a run of the node in a resumed invocation (after a crash, or an
// answer to another branch) returns ErrWaitingForInput without asking
// again. When the user has
// answered, the invocation resumes, the node runs again, and the same
// call of RequestInput (the first, the second, ... of this node run)
// returns the answer's response object.
func (c *Context) RequestInput(req InputRequest) (map[string]any, error) {
	c.asked++
	id := fmt.Sprintf("input-%s-%s-%d", c.run.id, c.path, c.asked)
	if resp, ok := c.run.answer(c.inv, id); ok {
		return resp, nil
	}
	if asked, waiting := agent.Asked(agent.ResumeEvents(c.run.inv), id); asked && waiting {
		// Resumed before the answer (a crash, another branch's answer, a
		// durable engine's next step): the call is in the log already.
		return nil, ErrWaitingForInput
	}
	var schema any
	if req.ResponseSchema != nil {
		schema = req.ResponseSchema
	}
	ev := c.cc.Event()
	ev.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{
		ID:   id,
		Name: FunctionRequestInput,
		Args: map[string]any{"interrupt_id": id, "message": req.Message, "payload": req.Payload, "response_schema": schema},
	}}}}
	ev.LongRunningToolIDs = []string{id}
	ev.NodeInfo = &event.NodeInfo{Path: c.path}
	if err := c.yield(ev); err != nil {
		return nil, err
	}
	return nil, ErrWaitingForInput
}

// RunNode runs n as a dynamic child of the current node, with the given
// input, and returns its output (in its JSON form, as the log records it;
// see [Func]). Its events are committed before RunNode
// returns; its path is under the current node's. When the invocation
// resumes, a child that had finished is not run again: its recorded output
// is returned; an agent child that had started continues from its events.
func (c *Context) RunNode(ctx context.Context, n *Node, input any) (any, error) {
	if c.err != nil {
		return nil, c.err
	}
	if err := c.run.step(1); err != nil {
		return nil, err
	}
	c.run.mu.Lock()
	c.run.dynamic[c.path+"/"+n.name]++
	seq := c.run.dynamic[c.path+"/"+n.name]
	c.run.mu.Unlock()
	act := activation{node: n, input: input, path: fmt.Sprintf("%s/%s@%d", c.path, n.name, seq)}
	res := c.run.execute(ctx, c.inv, act, true, c.emit)
	switch {
	case res.stopped:
		c.err = errStopped
		return nil, c.err
	case res.paused:
		return nil, ErrWaitingForInput
	case res.err != nil:
		return nil, res.err
	}
	return res.output, nil
}

// InputResponse returns the function response part with which a client
// answers an adk_request_input call.
func InputResponse(interruptID string, response map[string]any) *genai.Part {
	return &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: interruptID, Name: FunctionRequestInput, Response: response}}
}
