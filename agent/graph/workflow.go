// Package graph runs graph workflows: nodes (Go functions, agents, tools,
// nested workflows, joins) connected by edges (plain, conditional on a route
// the node chose, fan-out to branches that run concurrently, loops with a
// bound). A [Workflow] is an [agent.Agent]: it can be the root of a runner,
// a node of another workflow, a sub-agent an LLM agent transfers to, or an
// LLM agent's tool through tool/agenttool (a node's question then pauses
// the tool's call).
//
// # Running
//
// The start nodes (those edges from [Entry] lead to, or else
// [Config.Start]) get the text of the user message that started the
// invocation, even when the workflow runs only after an answer resumed it
// (a nested workflow, the input of its node). When a node finishes, each
// of its outgoing edges whose route matches the node's route (an edge
// without a route always matches) and whose bound is not used up schedules
// its target with the node's output as input (in the JSON form the log
// records, so that a resumed run hands on the same values). A node starts as
// soon as it is scheduled: alone, on the workflow's branch; while others run,
// concurrently on a branch of its own (like the branches of a parallel
// agent), so a slow branch holds back only the nodes after it. A join runs
// once every predecessor that can still deliver has delivered: the ones a
// route skipped (not running, scheduled, or reachable from a node that is)
// are not waited for, and its input holds the outputs that arrived. The
// workflow ends when nothing is scheduled or running; its output is the
// output of the last node that scheduled nothing.
//
// # The log
//
// Every node run has a path, such as "triage/classify@1", carried by its
// events in [event.Event.NodeInfo]. A node's end is recorded as an end of
// agent event of the node with its output ([event.Event.Output]) and the
// route it chose; an agent node's start is a checkpoint of the workflow. So
// when an invocation resumes (an answer to a paused call, or
// runner.Runner.Resume after a crash), the workflow replays its graph from
// the log: finished nodes are not run again, their recorded outputs are used;
// an agent node that was running continues from its own events; other nodes
// run.
//
// # Failures
//
// A node that fails (returns an error or panics) is tried again according to its [Retry] policy, each
// attempt bounded by its timeout; a node that still fails ends the workflow
// with an error event (error code [ErrorCodeNodeFailed]) naming the node.
//
// A Workflow is immutable after construction and safe for concurrent use by
// many invocations.
package graph

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/tool"
)

// ErrInvalidConfig is returned by New for a malformed graph.
var ErrInvalidConfig = errors.New("workflow: invalid configuration")

// ErrorCodeNodeFailed is the error code of the event that ends a workflow
// whose node failed.
const ErrorCodeNodeFailed = "WORKFLOW_NODE_FAILED"

// DefaultMaxSteps bounds the node runs of one workflow run when
// Config.MaxSteps is zero.
const DefaultMaxSteps = 1000

// DefaultRoute is the route of an edge taken when the node's route (or the
// absence of one) matches no other edge out of the node: the fallback of a
// router, ADK's default route.
const DefaultRoute = "__DEFAULT__"

// Entry stands for the workflow's entry in edges, ADK's START: an edge
// {From: Entry, To: "classify"} makes classify a start node. Every start
// node gets the workflow's input; several start concurrently.
const Entry = "START"

// Edge connects two nodes. With a Route, it is taken only when the node
// chose that route ([Context.SetRoute]), or, with [DefaultRoute], when no
// other edge out of the node has the route it chose; without one, always. Max, when
// positive, bounds how often the edge is taken in one workflow run, which
// is how loops end.
type Edge struct {
	From, To string
	Route    string
	Max      int
}

// Config configures a workflow.
type Config struct {
	// Name is required; Description is recommended.
	Name        string
	Description string
	// Nodes are the workflow's nodes; names are unique.
	Nodes []*Node
	// Edges connect them; an edge from Entry marks a start node.
	Edges []Edge
	// Start names the first node when no edge leaves Entry; empty means
	// the first of Nodes.
	Start string
	// MaxSteps bounds the node runs of one workflow run, dynamic ones
	// (Context.RunNode) included (DefaultMaxSteps when zero): a workflow
	// that exceeds it ends with an error event.
	MaxSteps int
	// BeforeAgent and AfterAgent callbacks run around the workflow.
	BeforeAgent []agent.BeforeAgentCallback
	AfterAgent  []agent.AfterAgentCallback
}

// Workflow is a graph workflow. Create it with New.
type Workflow struct {
	cfg    Config
	nodes  map[string]*Node
	selves map[string]*funcAgent      // identities of function, tool and join nodes
	out    map[string][]int           // edge indexes by source
	preds  map[string][]string        // distinct predecessors of each join
	routes map[string]map[string]bool // the routes of each node's edges, DefaultRoute aside
	starts []string                   // the start nodes, in edge order
	edges  []Edge                     // the edges between nodes (Edges)
	subs   []agent.Agent
}

var (
	_ agent.Agent   = (*Workflow)(nil)
	_ agent.Parent  = (*Workflow)(nil)
	_ agent.Resumer = (*Workflow)(nil)
)

// New checks the graph and returns the workflow.
func New(cfg Config) (*Workflow, error) {
	if cfg.Name == "" || cfg.Name == event.AuthorUser {
		return nil, fmt.Errorf("%w: invalid name %q", ErrInvalidConfig, cfg.Name)
	}
	if len(cfg.Nodes) == 0 {
		return nil, fmt.Errorf("%w: %s: no nodes", ErrInvalidConfig, cfg.Name)
	}
	if cfg.MaxSteps < 0 {
		return nil, fmt.Errorf("%w: %s: negative MaxSteps", ErrInvalidConfig, cfg.Name)
	}
	w := &Workflow{cfg: cfg, nodes: map[string]*Node{}, selves: map[string]*funcAgent{}, out: map[string][]int{}, preds: map[string][]string{}, routes: map[string]map[string]bool{}}
	for i, n := range cfg.Nodes {
		switch {
		case n == nil:
			return nil, fmt.Errorf("%w: %s: node %d is nil", ErrInvalidConfig, cfg.Name, i)
		case n.name == "" || n.name == event.AuthorUser || n.name == cfg.Name || n.name == Entry:
			return nil, fmt.Errorf("%w: %s: invalid node name %q", ErrInvalidConfig, cfg.Name, n.name)
		case w.nodes[n.name] != nil:
			return nil, fmt.Errorf("%w: %s: duplicate node %q", ErrInvalidConfig, cfg.Name, n.name)
		}
		w.nodes[n.name] = n
		if n.agent != nil {
			w.subs = append(w.subs, n.agent)
		} else {
			w.selves[n.name] = &funcAgent{name: n.name, description: n.description}
		}
	}
	for i, e := range cfg.Edges {
		if e.From == Entry {
			switch {
			case w.nodes[e.To] == nil:
				return nil, fmt.Errorf("%w: %s: edge %s → %s names an unknown node", ErrInvalidConfig, cfg.Name, e.From, e.To)
			case e.Route != "" || e.Max != 0:
				return nil, fmt.Errorf("%w: %s: the edge %s → %s has a route or a bound: an entry edge has neither", ErrInvalidConfig, cfg.Name, e.From, e.To)
			case w.nodes[e.To].kind == KindJoin:
				return nil, fmt.Errorf("%w: %s: join %q cannot start the workflow", ErrInvalidConfig, cfg.Name, e.To)
			case cfg.Start != "":
				return nil, fmt.Errorf("%w: %s: both Start and an edge from %s", ErrInvalidConfig, cfg.Name, Entry)
			}
			if !slices.Contains(w.starts, e.To) {
				w.starts = append(w.starts, e.To)
			}
			continue
		}
		if w.nodes[e.From] == nil || w.nodes[e.To] == nil {
			return nil, fmt.Errorf("%w: %s: edge %s → %s names an unknown node", ErrInvalidConfig, cfg.Name, e.From, e.To)
		}
		if e.Max < 0 {
			return nil, fmt.Errorf("%w: %s: edge %s → %s has a negative bound", ErrInvalidConfig, cfg.Name, e.From, e.To)
		}
		w.out[e.From] = append(w.out[e.From], i)
		w.edges = append(w.edges, e)
		if e.Route != "" && e.Route != DefaultRoute {
			if w.routes[e.From] == nil {
				w.routes[e.From] = map[string]bool{}
			}
			w.routes[e.From][e.Route] = true
		}
		if w.nodes[e.To].kind == KindJoin && !slices.Contains(w.preds[e.To], e.From) {
			w.preds[e.To] = append(w.preds[e.To], e.From)
		}
	}
	if len(w.starts) == 0 {
		if w.cfg.Start == "" {
			w.cfg.Start = cfg.Nodes[0].name
		}
		if w.nodes[w.cfg.Start] == nil {
			return nil, fmt.Errorf("%w: %s: start node %q is not a node", ErrInvalidConfig, cfg.Name, w.cfg.Start)
		}
		w.starts = []string{w.cfg.Start}
	}
	for name, n := range w.nodes {
		if n.kind == KindJoin && len(w.preds[name]) == 0 {
			return nil, fmt.Errorf("%w: %s: join %q has no incoming edge", ErrInvalidConfig, cfg.Name, name)
		}
	}
	return w, nil
}

// Name implements agent.Agent.
func (w *Workflow) Name() string { return w.cfg.Name }

// Description implements agent.Agent.
func (w *Workflow) Description() string { return w.cfg.Description }

// SubAgents implements agent.Parent: the agents of its agent and workflow
// nodes.
func (w *Workflow) SubAgents() []agent.Agent { return w.subs }

// ResumesFromLog implements agent.Resumer.
func (w *Workflow) ResumesFromLog() bool { return true }

// Nodes returns the workflow's nodes, in configuration order.
func (w *Workflow) Nodes() []*Node { return slices.Clone(w.cfg.Nodes) }

// Edges returns the workflow's edges between nodes (those from Entry are
// Starts).
func (w *Workflow) Edges() []Edge { return slices.Clone(w.edges) }

// Start returns the name of the (first) start node.
func (w *Workflow) Start() string { return w.starts[0] }

// Starts returns the names of the start nodes, which all get the
// workflow's input.
func (w *Workflow) Starts() []string { return slices.Clone(w.starts) }

// Run implements agent.Agent.
func (w *Workflow) Run(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
	return agent.RunWithCallbacks(ctx, inv, w.cfg.BeforeAgent, w.cfg.AfterAgent, w.run)
}

// call is how a parent workflow runs a nested one: the path and input it
// gives, and what the nested workflow reports back.
type call struct {
	w      *Workflow
	id     string // the parent's run id
	path   string
	input  any
	output any
	err    error
}

type callKey struct{}

// activation is one scheduled run of a node.
type activation struct {
	node     *Node
	input    any
	path     string
	fromUser bool // the input is the invocation's user message
}

// result is how a node run ended.
type result struct {
	output  any
	route   string
	paused  bool // waiting for the client
	stopped bool // the caller stopped ranging
	err     error
}

// record is a finished node run as the log holds it.
type record struct {
	output any
	route  string
}

// run is one run of a workflow in an invocation.
type run struct {
	w       *Workflow
	inv     *agent.Invocation
	base    string
	id      string            // names this run: the id of its first event
	done    map[string]record // finished node runs, from the log
	started map[string]int    // session index of agent nodes' start checkpoints

	mu      sync.Mutex
	dynamic map[string]int // runs of dynamic children, by parent path + name
	steps   int            // node runs so far, scheduled and dynamic
}

// step counts n node runs, and fails once the run has made more than the
// workflow's MaxSteps.
func (r *run) step(n int) error {
	limit := r.w.cfg.MaxSteps
	if limit == 0 {
		limit = DefaultMaxSteps
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.steps += n; r.steps > limit {
		return fmt.Errorf("more than %d node runs", limit)
	}
	return nil
}

func (w *Workflow) run(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
	return func(yield func(*event.Event, error) bool) {
		c, _ := ctx.Value(callKey{}).(*call)
		if c != nil && c.w != w {
			c = nil // meant for another workflow
		}
		r := &run{w: w, inv: inv, base: w.Name(), dynamic: map[string]int{}}
		var input any
		fromUser := true
		if c != nil {
			r.base, r.id, input, fromUser = c.path, c.id, c.input, false
		} else {
			input = r.userText()
		}
		if inv.Resuming() {
			if _, ended := agent.Checkpoint(inv, w.Name()); ended {
				return
			}
			r.load()
		}
		if r.id == "" {
			// The workflow's first event: a resumed invocation is continued
			// by the workflow, not by one of its nodes. Its id names the
			// run, so that a workflow run again in the same invocation (by
			// a loop agent, say) does not take an earlier run's answers.
			cp := agent.NewCheckpoint(inv, map[string]any{stateStarted: true})
			cp.NodeInfo = &event.NodeInfo{Path: r.base}
			r.id = cp.ID
			if !yield(cp, nil) {
				return
			}
		}
		last, ok := r.schedule(ctx, c, input, fromUser, yield)
		if !ok {
			return
		}
		out, err := plain(last)
		if err != nil {
			r.fail(c, r.base, fmt.Errorf("output: %w", err), yield)
			return
		}
		if c != nil {
			c.output = out
		}
		end := agent.NewEndOfAgent(inv)
		end.Output = out
		end.NodeInfo = &event.NodeInfo{Path: r.base, OutputFor: []string{r.base}}
		yield(end, nil)
	}
}

// fail ends the workflow with an error event for the node at path. A
// nested workflow reports the failure to its parent instead, for which it
// is a failed attempt of the workflow node (tried again, or reported by
// the parent's own error event).
func (r *run) fail(c *call, path string, err error, yield func(*event.Event, error) bool) {
	if c != nil {
		c.err = fmt.Errorf("node %s failed: %w", path, err)
		return
	}
	ev := r.inv.NewEvent()
	ev.ErrorCode = ErrorCodeNodeFailed
	ev.ErrorMessage = fmt.Sprintf("workflow %s: node %s failed: %v", r.w.Name(), path, err)
	ev.NodeInfo = &event.NodeInfo{Path: path}
	if !yield(ev, nil) {
		return
	}
	r.inv.End()
}

// load reads the finished node runs and the started agent nodes of this
// invocation from the log, from the workflow's resume point on.
func (r *run) load() {
	r.done, r.started = map[string]record{}, map[string]int{}
	evs := agent.ResumeEvents(r.inv)
	if len(evs) == 0 {
		return
	}
	sess := r.inv.Session()
	first := len(evs) - 1
	i := sess.Len() - 1
	for ; i >= 0 && first >= 0; i-- {
		if sess.At(i).ID == evs[first].ID {
			first--
		}
	}
	for j := i + 1; j < sess.Len(); j++ {
		ev := sess.At(j)
		if ev.InvocationID != r.inv.ID() {
			continue
		}
		if r.id == "" && ev.Author == r.w.Name() && ev.Actions.AgentState[stateStarted] == true {
			r.id = ev.ID
		}
		if ev.NodeInfo != nil && ev.Actions.EndOfAgent {
			route, ok := ev.Actions.Route.(string)
			if !ok {
				// Logs written before routes had their own action field.
				route, _ = ev.Actions.AgentState["route"].(string)
			}
			for _, p := range ev.NodeInfo.OutputFor {
				r.done[p] = record{output: ev.Output, route: route}
			}
		}
		if p, ok := ev.Actions.AgentState[stateNode].(string); ok {
			r.started[p] = j
		}
	}
}

// userText returns the text of the message that started the invocation
// (in an invocation that resumed, the user content is the message that
// resumed it, an answer, whether this workflow resumes or starts only
// now).
func (r *run) userText() any {
	for _, ev := range r.inv.Session().InvocationEvents(r.inv.ID()) {
		if ev.Author == event.AuthorUser {
			return model.Text(ev.Content, "")
		}
	}
	if uc := r.inv.UserContent(); uc != nil {
		return model.Text(uc, "")
	}
	return nil
}

// finishTask is the name of the tool with which a task agent finishes its
// task (package agent/task): an agent node that calls it outputs the call's
// arguments.
const finishTask = "finish_task"

// stateNode is the agent-state key of the checkpoint that starts an agent
// node: its path.
const stateNode = "node"

// stateStarted is the agent-state key of the workflow's first checkpoint.
const stateStarted = "started"

// matches reports whether edge e out of node from is taken for the route
// the node chose: an edge without a route always is, one with a route when
// it is the node's, one with DefaultRoute when no other edge out of the node
// has the node's route.
func (w *Workflow) matches(from string, e Edge, route string) bool {
	switch e.Route {
	case "", route:
		return true
	case DefaultRoute:
		return !w.routes[from][route]
	}
	return false
}

// branchOf returns the branch a node runs on when it runs concurrently with
// others.
func (r *run) branchOf(n *Node) string {
	if b := r.inv.Branch(); b != "" {
		return b + "." + n.name
	}
	return r.w.Name() + "." + n.name
}

// execute runs one node run with its retries, or takes its result from the
// log when it had finished.
func (r *run) execute(ctx context.Context, winv *agent.Invocation, a activation, resumable bool, emit func(*event.Event) bool) result {
	if rec, ok := r.done[a.path]; ok {
		return result{output: rec.output, route: rec.route}
	}
	attempts := max(1, a.node.retry.MaxAttempts)
	cbs := winv.Callbacks()
	for n := 1; ; n++ {
		na := agent.NodeAttempt{Workflow: r.w.Name(), Node: a.node.name, Kind: a.node.kind.String(), Path: a.path,
			Attempt: n, MaxAttempts: attempts}
		for _, cb := range cbs.BeforeNode {
			cb(ctx, winv, na)
		}
		res := r.attempt(ctx, winv, a, resumable && n == 1, emit)
		for _, cb := range cbs.AfterNode {
			cb(ctx, winv, na, agent.NodeOutcome{Route: res.route, Err: res.err, Paused: res.paused, Stopped: res.stopped})
		}
		if res.err == nil || res.paused || res.stopped {
			return res
		}
		if n >= attempts {
			if attempts > 1 {
				res.err = fmt.Errorf("after %d attempts: %w", attempts, res.err)
			}
			return res
		}
		if d := a.node.retry.delay(n + 1); d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return result{err: ctx.Err()}
			}
		}
	}
}

// attempt runs a node once. A panic of the node is its failure; a panic
// of the caller, raised while an event is handed to it, goes on.
func (r *run) attempt(ctx context.Context, winv *agent.Invocation, a activation, resumable bool, emit func(*event.Event) bool) (res result) {
	emitting := false
	caller := emit
	emit = func(ev *event.Event) bool {
		emitting = true
		ok := caller(ev)
		emitting = false
		return ok
	}
	p := agent.Safely(func() { res = r.attemptNode(ctx, winv, a, resumable, emit) })
	if p != nil {
		if emitting {
			panic(p.Value)
		}
		res = result{err: p}
	}
	return res
}

// attemptNode runs a node once, within its timeout.
func (r *run) attemptNode(ctx context.Context, winv *agent.Invocation, a activation, resumable bool, emit func(*event.Event) bool) (res result) {
	n := a.node
	actx := ctx
	if n.timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, n.timeout)
		defer cancel()
	}
	if n.agent != nil {
		res = r.runAgent(actx, winv, a, resumable, emit)
	} else {
		res = r.runFunc(actx, winv, a, emit)
	}
	if res.err != nil && n.timeout > 0 && actx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
		res.err = fmt.Errorf("timed out after %v: %w", n.timeout, res.err)
	}
	return res
}

// runFunc runs a function, tool or join node.
func (r *run) runFunc(ctx context.Context, winv *agent.Invocation, a activation, emit func(*event.Event) bool) result {
	n := a.node
	self := r.w.selves[n.name]
	if self == nil { // a dynamic node of another graph
		self = &funcAgent{name: n.name, description: n.description}
	}
	ninv := winv.Fresh().For(self)
	nc := &Context{run: r, inv: ninv, cc: agent.NewToolContext(ninv, a.path), path: a.path, emit: emit}
	var out any
	var err error
	if n.tool != nil {
		out, err = callTool(ctx, nc, n.tool, a.input)
	} else {
		out, err = n.fn(ctx, nc, a.input)
	}
	switch {
	case nc.err != nil:
		return result{stopped: true}
	case errors.Is(err, ErrWaitingForInput):
		ninv.End()
		return result{paused: true}
	case err != nil:
		return result{err: err}
	}
	p, err := plain(out)
	if err != nil {
		return result{err: fmt.Errorf("output: %w", err)}
	}
	end := nc.cc.Event()
	end.Actions.EndOfAgent = true
	if nc.route != "" {
		end.Actions.Route = nc.route
	}
	end.Output = p
	end.NodeInfo = &event.NodeInfo{Path: a.path, OutputFor: []string{a.path}}
	if !emit(end) {
		return result{stopped: true}
	}
	return result{output: p, route: nc.route}
}

// rejectedMessage is the output of a tool node whose call the person did
// not approve, the words ADK's tool confirmation uses.
const rejectedMessage = "This tool call is rejected."

// callTool runs a tool node. A tool that needs approval for these arguments
// asks for it first with [Context.RequestInput] (payload: the tool's name
// and arguments; answer: {"confirmed": bool}), and runs only when the answer
// confirms.
func callTool(ctx context.Context, nc *Context, t tool.Function, input any) (any, error) {
	args, err := Convert[map[string]any](input)
	if err != nil {
		return nil, err
	}
	if c, ok := t.(tool.Confirmable); ok {
		if required, hint := c.ConfirmationRequired(ctx, args); required {
			msg := hint
			if msg == "" {
				msg = "Please approve or reject the call to " + t.Name() + "."
			}
			ans, err := nc.RequestInput(InputRequest{
				Message: msg,
				Payload: map[string]any{"tool": t.Name(), "args": args},
				ResponseSchema: map[string]any{"type": "object", "required": []any{"confirmed"},
					"properties": map[string]any{"confirmed": map[string]any{"type": "boolean"}}},
			})
			if err != nil {
				return nil, err
			}
			if ans["confirmed"] != true {
				return map[string]any{"error": rejectedMessage}, nil
			}
		}
	}
	return t.Run(ctx, nc.cc, args)
}

// agentOutput is an agent node's output, taken from the agent's own events.
type agentOutput struct {
	agent     string         // the agent's name
	path      string         // the node run's path
	final     string         // the last text the agent said
	finished  map[string]any // the arguments of a finish_task call
	selfEnded bool           // the agent recorded its end with the output
}

// observe takes what an event says about the output.
func (o *agentOutput) observe(ev *event.Event) {
	if ev.Partial || ev.Author != o.agent {
		return
	}
	if ev.Actions.EndOfAgent && ev.NodeInfo != nil && slices.Contains(ev.NodeInfo.OutputFor, o.path) {
		o.selfEnded = true
	}
	for _, fc := range ev.FunctionCalls() {
		if fc.Name == finishTask {
			o.finished = fc.Args
		}
	}
	if ev.Content != nil && len(ev.FunctionCalls()) == 0 && len(ev.FunctionResponses()) == 0 {
		if t := model.Text(ev.Content, ""); t != "" {
			o.final = t
		}
	}
}

// value returns the output: a nested workflow's (c is its call), a
// finish_task call's arguments, or the last text.
func (o *agentOutput) value(c *call) any {
	switch {
	case c != nil:
		return c.output
	case o.finished != nil:
		return o.finished
	case o.final != "":
		return o.final
	}
	return nil
}

// runAgent runs an agent or nested workflow node.
func (r *run) runAgent(ctx context.Context, winv *agent.Invocation, a activation, resumable bool, emit func(*event.Event) bool) result {
	n := a.node
	ag := n.agent
	out := &agentOutput{agent: ag.Name(), path: a.path}
	cinv, ok := r.startAgent(winv, a, resumable, out, emit)
	if !ok {
		return result{stopped: true}
	}
	var c *call
	if n.kind == KindWorkflow {
		c = &call{w: ag.(*Workflow), id: r.id, path: a.path, input: a.input}
		ctx = context.WithValue(ctx, callKey{}, c)
	}
	for ev, err := range ag.Run(ctx, cinv) {
		if err != nil {
			return result{err: err}
		}
		if ev == nil {
			continue
		}
		if ev.NodeInfo == nil {
			ev.NodeInfo = &event.NodeInfo{Path: a.path}
		}
		if !emit(ev) {
			return result{stopped: true}
		}
		out.observe(ev)
	}
	if c != nil && c.err != nil {
		return result{err: c.err}
	}
	if cinv.Ended() {
		return result{paused: true}
	}
	p, err := plain(out.value(c))
	if err != nil {
		return result{err: fmt.Errorf("output: %w", err)}
	}
	if out.selfEnded {
		return result{output: p}
	}
	end := agent.NewEndOfAgent(cinv)
	end.Output = p
	end.NodeInfo = &event.NodeInfo{Path: a.path, OutputFor: []string{a.path}}
	if !emit(end) {
		return result{stopped: true}
	}
	return result{output: p}
}

// startAgent returns the invocation an agent node runs in, after emitting
// the node's start (a checkpoint) and its input, unless a resumed run
// recorded them already; what the agent said before an interruption goes to
// out. ok is false when the caller stopped.
func (r *run) startAgent(winv *agent.Invocation, a activation, resumable bool, out *agentOutput, emit func(*event.Event) bool) (cinv *agent.Invocation, ok bool) {
	ag := a.node.agent
	needsInput := a.node.kind == KindAgent && a.input != nil && !a.fromUser
	if idx, started := r.started[a.path]; started && resumable {
		// The node had started: what it said before the interruption
		// counts towards its output, and its input is given now if the
		// interruption came before it was.
		cinv = winv.Fresh().For(ag).ResumeFrom(idx)
		sess := r.inv.Session()
		for j := idx + 1; j < sess.Len(); j++ {
			ev := sess.At(j)
			if ev.InvocationID != r.inv.ID() || ev.NodeInfo == nil || ev.NodeInfo.Path != a.path {
				continue
			}
			if ev.Author == winv.Agent().Name() && ev.Content != nil {
				needsInput = false
			}
			out.observe(ev)
		}
	} else {
		cp := agent.NewCheckpoint(winv, map[string]any{stateNode: a.path})
		cp.NodeInfo = &event.NodeInfo{Path: r.base}
		if !emit(cp) {
			return nil, false
		}
		cinv = winv.Fresh().For(ag)
	}
	if needsInput {
		ev := winv.NewEvent()
		ev.Content = genai.NewContentFromText(inputText(a.input), genai.RoleUser)
		ev.NodeInfo = &event.NodeInfo{Path: a.path}
		if !emit(ev) {
			return nil, false
		}
	}
	return cinv, true
}

// inputText renders a node input as the text of a message.
func inputText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if p, err := plain(v); err == nil {
		if b, err := jsonText(p); err == nil {
			return b
		}
	}
	return fmt.Sprint(v)
}

// answer returns the user's answer to the input request id of this
// invocation, if the log holds one.
func (r *run) answer(inv *agent.Invocation, id string) (map[string]any, bool) {
	for _, a := range inv.Answers() {
		if a.Call.ID == id {
			return a.Response.Response, true
		}
	}
	// An answer the node used in an earlier run: only a workflow that
	// resumes has one, among its events since its resume point.
	evs := agent.ResumeEvents(r.inv)
	for i := len(evs) - 1; i >= 0; i-- {
		ev := evs[i]
		if ev.Author != event.AuthorUser {
			continue
		}
		for _, fr := range ev.FunctionResponses() {
			if fr.ID == id {
				return fr.Response, true
			}
		}
	}
	return nil, false
}
