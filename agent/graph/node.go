package graph

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"time"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/tool"
)

// Kind says what a node runs.
type Kind uint8

// The kinds of nodes.
const (
	// KindFunc is a Go function (see [Func]).
	KindFunc Kind = iota + 1
	// KindAgent is an agent, such as an LLM agent (see [FromAgent]).
	KindAgent
	// KindWorkflow is a nested workflow (see [FromAgent]).
	KindWorkflow
	// KindTool is a tool called with the node's input as arguments (see
	// [FromTool]).
	KindTool
	// KindJoin waits for its predecessors (see [Join]).
	KindJoin
)

// String returns the kind's name, as the graph view shows it.
func (k Kind) String() string {
	switch k {
	case KindFunc:
		return "function"
	case KindAgent:
		return "agent"
	case KindWorkflow:
		return "workflow"
	case KindTool:
		return "tool"
	case KindJoin:
		return "join"
	}
	return "unknown"
}

// Retry is a node's retry policy: a failed attempt is tried again after a
// backoff that doubles from Backoff up to MaxBackoff, for at most
// MaxAttempts attempts in all. The zero value tries once.
type Retry struct {
	MaxAttempts int
	Backoff     time.Duration
	MaxBackoff  time.Duration
}

// delay returns the backoff before attempt n (n >= 2).
func (r Retry) delay(n int) time.Duration {
	d := r.Backoff
	for i := 2; i < n && d > 0; i++ {
		d *= 2
		if r.MaxBackoff > 0 && d >= r.MaxBackoff {
			return r.MaxBackoff
		}
	}
	if r.MaxBackoff > 0 && d > r.MaxBackoff {
		return r.MaxBackoff
	}
	return d
}

// NodeOptions are a node's optional settings (see [Node.With]). The zero
// value is the default: one attempt, no timeout, the description of the
// node's agent or tool.
type NodeOptions struct {
	// Description is what the graph view shows; empty keeps the node's.
	Description string
	// Retry is the node's retry policy.
	Retry Retry
	// Timeout, when positive, bounds each attempt of the node: its context
	// is cancelled after it. A node that ignores its context cannot be
	// stopped early.
	Timeout time.Duration
}

// Node is one step of a workflow. Build it with [Func], [FromAgent],
// [FromTool], [Join] or [ParallelWorker], and set its options with
// [Node.With]; it is immutable and may be shared by workflows.
type Node struct {
	name        string
	description string
	kind        Kind
	fn          func(ctx context.Context, nc *Context, in any) (any, error)
	agent       agent.Agent
	tool        tool.Function
	retry       Retry
	timeout     time.Duration
}

// Name returns the node's name, unique within its workflow.
func (n *Node) Name() string { return n.name }

// Description returns the node's description: its options', or its
// agent's or tool's.
func (n *Node) Description() string { return n.description }

// Kind returns what the node runs.
func (n *Node) Kind() Kind { return n.kind }

// Agent returns the agent of an agent or workflow node, or nil.
func (n *Node) Agent() agent.Agent { return n.agent }

// With returns a copy of n with opts; n itself is unchanged.
//
//	fetch := graph.Func("fetch", fetchPage).With(graph.NodeOptions{
//		Retry:   graph.Retry{MaxAttempts: 3, Backoff: time.Second},
//		Timeout: 30 * time.Second,
//	})
func (n *Node) With(opts NodeOptions) *Node {
	c := *n
	if opts.Description != "" {
		c.description = opts.Description
	}
	c.retry = opts.Retry
	c.timeout = opts.Timeout
	return &c
}

// Named returns a copy of a function, tool or join node under another
// name, such as a registered function given the name a config file uses.
// An agent or workflow node is named by its agent, and cannot be renamed.
func (n *Node) Named(name string) (*Node, error) {
	if n.agent != nil && name != n.name {
		return nil, fmt.Errorf("%w: node %q runs an agent, which names it", ErrInvalidConfig, n.name)
	}
	c := *n
	c.name = name
	return &c, nil
}

func newNode(name string, kind Kind) *Node { return &Node{name: name, kind: kind} }

// Func returns a node that runs fn. Its input is the output of the node
// before it (for the start node, the text of the user message), in the
// JSON form the session log records (so the same whether or not the
// invocation resumed in between), converted to In: directly when it
// already has that type, otherwise through JSON. Its output is fn's
// result. fn is run again from the start when the invocation
// resumes before the node finished (after a human-input answer, say), so
// what it does before [Context.RequestInput] should be repeatable.
func Func[In, Out any](name string, fn func(ctx context.Context, nc *Context, in In) (Out, error)) *Node {
	n := newNode(name, KindFunc)
	n.fn = func(ctx context.Context, nc *Context, in any) (any, error) {
		v, err := Convert[In](in)
		if err != nil {
			return nil, fmt.Errorf("node input: %w", err)
		}
		return fn(ctx, nc, v)
	}
	return n
}

// FromAgent returns a node that runs a: its input is handed to the agent as
// a message (unless it is the invocation's user message), and its output is
// the text of the agent's final response. A *Workflow becomes a nested
// workflow node: it gets the input directly and its output is the nested
// workflow's output. The node takes the agent's name.
func FromAgent(a agent.Agent) *Node {
	kind := KindAgent
	if _, ok := a.(*Workflow); ok {
		kind = KindWorkflow
	}
	n := newNode(a.Name(), kind)
	n.agent = a
	n.description = a.Description()
	return n
}

// FromTool returns a node that calls t with its input as the arguments (a
// map, or a value converted to one through JSON); its output is the tool's
// result. State written through the tool context is committed with the
// node's end.
func FromTool(t tool.Function) *Node {
	n := newNode(t.Name(), KindTool)
	n.tool = t
	n.description = t.Description()
	return n
}

// Join returns a node that waits until every node with an edge to it that
// can still deliver has delivered an output (a predecessor a route skipped
// is not waited for), then outputs them as one map from predecessor name to
// output.
func Join(name string) *Node {
	n := newNode(name, KindJoin)
	n.fn = func(_ context.Context, _ *Context, in any) (any, error) { return in, nil }
	return n
}

// Convert converts v to T: directly when v is a T, otherwise through JSON.
// Nodes get their inputs through it; it is exported for nodes that read
// outputs themselves.
func Convert[T any](v any) (T, error) {
	var zero T
	if t, ok := v.(T); ok {
		return t, nil
	}
	if v == nil {
		return zero, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return zero, fmt.Errorf("workflow: convert %T: %w", v, err)
	}
	var t T
	if err := json.Unmarshal(b, &t); err != nil {
		return zero, fmt.Errorf("workflow: convert %T to %T: %w", v, zero, err)
	}
	return t, nil
}

// plain returns v in the form the session log gives back (JSON values), so
// that a node sees the same input whether or not the invocation resumed.
// Values already in that form are returned as they are.
func plain(v any) (any, error) {
	switch v.(type) {
	case nil, string, bool, float64, map[string]any, []any:
		return v, nil
	}
	return event.JSONForm(v)
}

// funcAgent is the identity a function, tool or join node has in the
// invocation: events it yields are authored by the node's name.
type funcAgent struct{ name, description string }

func (f *funcAgent) Name() string        { return f.name }
func (f *funcAgent) Description() string { return f.description }
func (f *funcAgent) Run(context.Context, *agent.Invocation) iter.Seq2[*event.Event, error] {
	return func(func(*event.Event, error) bool) {}
}

// jsonText encodes a JSON value as text.
func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
