package agent

import "context"

// ResumeAgentCallback sees an agent that continues an invocation in resume
// mode (see Callbacks.ResumeAgent).
type ResumeAgentCallback func(ctx context.Context, cc *CallbackContext)

// NodeAttempt is one attempt of a node of a graph workflow, as node
// callbacks see it.
type NodeAttempt struct {
	// Workflow names the workflow, Node the node.
	Workflow, Node string
	// Kind is what the node runs: "function", "agent", "workflow", "tool"
	// or "join".
	Kind string
	// Path is the node run's path, as its events record it in
	// event.NodeInfo ("triage/classify@1").
	Path string
	// Attempt counts the attempts of this node run from 1; MaxAttempts is
	// the most its retry policy allows.
	Attempt, MaxAttempts int
}

// NodeOutcome is how a node attempt ended.
type NodeOutcome struct {
	// Route is the route the node chose, if any.
	Route string
	// Err is the attempt's failure; nil when it succeeded, paused or was
	// stopped.
	Err error
	// Paused reports that the node waits for the client (the invocation
	// pauses); Stopped that its caller stopped the run.
	Paused, Stopped bool
}

// BeforeNodeCallback sees a node attempt start. inv is the invocation the
// node runs in: its branch is the node's.
type BeforeNodeCallback func(ctx context.Context, inv *Invocation, a NodeAttempt)

// AfterNodeCallback sees a node attempt end.
type AfterNodeCallback func(ctx context.Context, inv *Invocation, a NodeAttempt, o NodeOutcome)
