package agentconfig

import (
	"go.yaml.in/yaml/v3"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/workflow"
)

// StartNode is the name that stands for a graph workflow's entry in the
// edges of a Workflow config, as in ADK: the node an edge from START leads
// to is the first to run.
const StartNode = "START"

// newGraph builds a graph workflow (agent_class: Workflow):
//
//	agent_class: Workflow
//	name: support
//	nodes:
//	  - function: classify            # registered with Registry.Node
//	  - agent: {config_path: refunds.yaml}
//	  - tool: {name: lookup_order}
//	    retry: {max_attempts: 3, initial_delay: 0.5}
//	    timeout: 10
//	edges:
//	  - [START, classify]
//	  - [classify, {refund: refunds, question: lookup_order}]
//	  - {from: lookup_order, to: classify, route: again, max: 2}
//
// A node is named by what it runs (its agent, tool, registered node or
// join name); edges name nodes, and every mistake is an *Error at the line
// that makes it.
func newGraph(s *Spec) (agent.Agent, error) {
	cfg := workflow.Config{Name: s.Name(), Description: s.Description()}
	var err error
	if cfg.BeforeAgent, cfg.AfterAgent, err = s.AgentCallbacks(); err != nil {
		return nil, err
	}
	if _, err := s.Decode("max_steps", &cfg.MaxSteps); err != nil {
		return nil, err
	}
	nodes, _ := s.n.get("nodes")
	if len(nodes.n.Content) == 0 {
		return nil, nodes.errorf("a workflow needs at least one node")
	}
	at := map[string]node{} // where each node is written, by name
	for i, item := range nodes.n.Content {
		e := nodes.index(i, item)
		n, err := s.graphNode(e)
		if err != nil {
			return nil, err
		}
		if prev, dup := at[n.Name()]; dup {
			return nil, e.errorf("a second node named %q (the first is at line %d)", n.Name(), prev.n.Line)
		}
		at[n.Name()] = e
		cfg.Nodes = append(cfg.Nodes, n)
	}
	if edges, ok := s.n.get("edges"); ok {
		var start node // the edge from START, once found
		for i, item := range edges.n.Content {
			e := edges.index(i, item)
			es, from, err := graphEdges(e, at)
			if err != nil {
				return nil, err
			}
			for _, ed := range es {
				if ed.From != StartNode {
					cfg.Edges = append(cfg.Edges, ed)
					continue
				}
				if cfg.Start != "" && cfg.Start != ed.To {
					return nil, from.errorf("a second edge from %s (to %s; the first, at line %d, goes to %s): a workflow has one entry",
						StartNode, ed.To, start.n.Line, cfg.Start)
				}
				if ed.Route != "" || ed.Max != 0 {
					return nil, from.errorf("the edge from %s takes no route or bound", StartNode)
				}
				cfg.Start, start = ed.To, from
			}
		}
	}
	w, err := workflow.New(cfg)
	if err != nil {
		return nil, s.Errorf("edges", "%v", err)
	}
	return w, nil
}

// graphNode builds one entry of nodes.
func (s *Spec) graphNode(e node) (*workflow.Node, error) {
	var n *workflow.Node
	var kinds []string
	for _, k := range []string{"agent", "tool", "function", "join"} {
		if _, ok := e.get(k); ok {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) != 1 {
		return nil, e.errorf("a node has exactly one of agent, tool, function or join (has %d)", len(kinds))
	}
	v, _ := e.get(kinds[0])
	switch kinds[0] {
	case "agent":
		a, err := s.l.ref(v, s.model)
		if err != nil {
			return nil, err
		}
		n = workflow.FromAgent(a)
	case "tool":
		t, ts, err := s.tool(v)
		if err != nil {
			return nil, err
		}
		if ts != nil || t == nil {
			return nil, v.errorf("a tool node runs one tool, not a toolset")
		}
		n = workflow.FromTool(t)
	case "function":
		reg := s.l.opts.Registry
		fn, ok := lookup(reg, func(r *Registry) map[string]*workflow.Node { return r.nodes }, nil, v.n.Value)
		if !ok {
			return nil, v.errorf("%v", errNotRegistered("node", v.n.Value, names(reg, func(r *Registry) map[string]*workflow.Node { return r.nodes }, nil)))
		}
		n = fn
	case "join":
		n = workflow.Join(v.n.Value)
	}
	if n.Name() == StartNode {
		return nil, v.errorf("%s names the workflow's entry, not a node", StartNode)
	}
	var opts workflow.NodeOptions
	opts.Description = e.str("description")
	if r, ok := e.get("retry"); ok {
		var rc struct {
			MaxAttempts  int     `yaml:"max_attempts"`
			InitialDelay float64 `yaml:"initial_delay"`
			MaxDelay     float64 `yaml:"max_delay"`
		}
		if err := r.decode(&rc); err != nil {
			return nil, err
		}
		opts.Retry = workflow.Retry{MaxAttempts: rc.MaxAttempts, Backoff: seconds(rc.InitialDelay), MaxBackoff: seconds(rc.MaxDelay)}
	}
	if t, ok := e.get("timeout"); ok {
		var secs float64
		if err := t.decode(&secs); err != nil {
			return nil, err
		}
		opts.Timeout = seconds(secs)
	}
	if opts != (workflow.NodeOptions{}) {
		n = n.With(opts)
	}
	return n, nil
}

// graphEdges reads one entry of edges: a chain of node names (the last
// item may map routes to node names), or one edge written as a mapping.
// It returns the edges and the node of the item each START edge comes
// from, for errors.
func graphEdges(e node, at map[string]node) ([]workflow.Edge, node, error) {
	name := func(v node) (string, error) {
		if v.n.Kind != yaml.ScalarNode || v.n.Value == "" {
			return "", v.errorf("is %s, want a node name", article(kindOf(v.n)))
		}
		if _, ok := at[v.n.Value]; !ok && v.n.Value != StartNode {
			return "", v.errorf("names no node (nodes: %s)", nodeNames(at))
		}
		return v.n.Value, nil
	}
	if e.n.Kind == yaml.MappingNode {
		fv, _ := e.get("from")
		tv, _ := e.get("to")
		from, err := name(fv)
		if err != nil {
			return nil, fv, err
		}
		to, err := name(tv)
		if err != nil {
			return nil, fv, err
		}
		if to == StartNode {
			return nil, tv, tv.errorf("no edge leads to %s", StartNode)
		}
		ed := workflow.Edge{From: from, To: to, Route: e.str("route")}
		if m, ok := e.get("max"); ok {
			if err := m.decode(&ed.Max); err != nil {
				return nil, m, err
			}
		}
		return []workflow.Edge{ed}, fv, nil
	}
	if len(e.n.Content) < 2 {
		return nil, e, e.errorf("a chain names at least two nodes")
	}
	var out []workflow.Edge
	var prev string
	for i, item := range e.n.Content {
		v := e.index(i, item)
		if v.n.Kind == yaml.MappingNode {
			if i == 0 || i != len(e.n.Content)-1 {
				return nil, v, v.errorf("a map of routes comes last in a chain, after the node that chooses the route")
			}
			for k, t := range v.pairs() {
				to, err := name(t)
				if err != nil {
					return nil, v, err
				}
				if to == StartNode {
					return nil, t, t.errorf("no edge leads to %s", StartNode)
				}
				out = append(out, workflow.Edge{From: prev, To: to, Route: k.n.Value})
			}
			break
		}
		n, err := name(v)
		if err != nil {
			return nil, v, err
		}
		if i > 0 {
			if n == StartNode {
				return nil, v, v.errorf("%s comes first in a chain: no edge leads to it", StartNode)
			}
			out = append(out, workflow.Edge{From: prev, To: n})
		}
		prev = n
	}
	first := e.index(0, e.n.Content[0])
	return out, first, nil
}

// nodeNames lists the names of a workflow's nodes, sorted, for errors.
func nodeNames(at map[string]node) string {
	m := make(map[string]struct{}, len(at))
	for k := range at {
		m[k] = struct{}{}
	}
	return names[struct{}](nil, nil, m)
}
