package agentconfig

import (
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/tool"
)

// StartNode is the name that stands for a graph workflow's entry in the
// edges of a Workflow config, as in ADK: the nodes edges from START lead
// to are the first to run.
const StartNode = graph.Entry

// The agent classes of node files, as ADK names them.
const (
	functionNodeClass = "FunctionNode"
	toolNodeClass     = "ToolNode"
	joinNodeClass     = "JoinNode"
)

// graphBuild is the building of one Workflow config: its nodes by name,
// and where each is written.
type graphBuild struct {
	s     *Spec
	cfg   graph.Config
	at    map[string]node   // where each node is first written, by name
	files map[string]string // node files read, by path: the node's name
}

// newGraph builds a graph workflow (agent_class: Workflow) in ADK's form:
//
//	agent_class: Workflow
//	name: support
//	edges:
//	  - [START, classify, {refund: refunds.yaml, question: faq.yaml}]
//	  - [refunds.yaml, done.yaml]
//
// A chain's items are node references: START, a node file (a name ending
// in .yaml or .yml: a FunctionNode, ToolNode or JoinNode, or an agent of
// any class), a node of the Loom key nodes, or a node registered from Go
// code (Registry.Node). Each item has an edge to the next; maps after the
// last item route out of it ("default" or "__DEFAULT__" is the default
// route). A node file named twice is one node. Every mistake is an *Error
// at the line that makes it.
func newGraph(s *Spec) (agent.Agent, error) {
	g := &graphBuild{s: s, at: map[string]node{}, files: map[string]string{},
		cfg: graph.Config{Name: s.Name(), Description: s.Description()}}
	var err error
	if g.cfg.BeforeAgent, g.cfg.AfterAgent, err = s.AgentCallbacks(); err != nil {
		return nil, err
	}
	if _, err := s.Decode("max_steps", &g.cfg.MaxSteps); err != nil {
		return nil, err
	}
	if nodes, ok := s.n.get("nodes"); ok {
		for i, item := range nodes.n.Content {
			e := nodes.index(i, item)
			n, err := s.graphNode(e)
			if err != nil {
				return nil, err
			}
			if err := g.add(n, e); err != nil {
				return nil, err
			}
		}
	}
	if edges, ok := s.n.get("edges"); ok {
		for i, item := range edges.n.Content {
			if err := g.edges(edges.index(i, item)); err != nil {
				return nil, err
			}
		}
	}
	if len(g.cfg.Nodes) == 0 {
		return nil, s.Errorf("edges", "a workflow needs at least one node")
	}
	w, err := graph.New(g.cfg)
	if err != nil {
		return nil, s.Errorf("edges", "%v", err)
	}
	return w, nil
}

// add adds a node written at e, refusing a second node of the same name.
func (g *graphBuild) add(n *graph.Node, e node) error {
	if prev, dup := g.at[n.Name()]; dup {
		return e.errorf("a second node named %q (the first is at line %d)", n.Name(), prev.n.Line)
	}
	g.at[n.Name()] = e
	g.cfg.Nodes = append(g.cfg.Nodes, n)
	return nil
}

// edges reads one entry of edges: a chain, or one edge written as a
// mapping (a Loom form).
func (g *graphBuild) edges(e node) error {
	if e.n.Kind == yaml.MappingNode {
		fv, _ := e.get("from")
		tv, _ := e.get("to")
		from, err := g.ref(fv)
		if err != nil {
			return err
		}
		to, err := g.target(tv)
		if err != nil {
			return err
		}
		ed := graph.Edge{From: from, To: to, Route: route(e.str("route"))}
		if m, ok := e.get("max"); ok {
			if err := m.decode(&ed.Max); err != nil {
				return err
			}
		}
		if from == StartNode && (ed.Route != "" || ed.Max != 0) {
			return e.errorf("the edge from %s takes no route or bound", StartNode)
		}
		g.cfg.Edges = append(g.cfg.Edges, ed)
		return nil
	}
	var chain []string
	routes := false
	for i, item := range e.n.Content {
		v := e.index(i, item)
		if v.n.Kind == yaml.MappingNode {
			if len(chain) == 0 {
				return v.errorf("a map of routes follows the node that chooses the route")
			}
			if chain[len(chain)-1] == StartNode {
				return v.errorf("%s takes no routes", StartNode)
			}
			routes = true
			for k, t := range v.pairs() {
				to, err := g.target(t)
				if err != nil {
					return err
				}
				g.cfg.Edges = append(g.cfg.Edges, graph.Edge{From: chain[len(chain)-1], To: to, Route: route(k.n.Value)})
			}
			continue
		}
		if routes {
			return v.errorf("a node after a map of routes: the maps come last in a chain")
		}
		var name string
		var err error
		if i == 0 {
			name, err = g.ref(v)
		} else {
			name, err = g.target(v)
		}
		if err != nil {
			return err
		}
		if len(chain) > 0 {
			g.cfg.Edges = append(g.cfg.Edges, graph.Edge{From: chain[len(chain)-1], To: name})
		}
		chain = append(chain, name)
	}
	if len(chain) < 2 && !routes {
		return e.errorf("a chain names at least two nodes, or a node and a map of routes")
	}
	return nil
}

// route maps ADK's names of the default route to Loom's.
func route(r string) string {
	if strings.EqualFold(r, "default") || r == graph.DefaultRoute {
		return graph.DefaultRoute
	}
	return r
}

// target resolves a reference an edge leads to: any but START.
func (g *graphBuild) target(v node) (string, error) {
	if v.n.Kind == yaml.ScalarNode && v.n.Value == StartNode {
		return "", v.errorf("no edge leads to %s: it comes first in a chain", StartNode)
	}
	return g.ref(v)
}

// ref resolves a node reference of an edge to the node's name, adding the
// node to the workflow the first time.
func (g *graphBuild) ref(v node) (string, error) {
	if v.n.Kind != yaml.ScalarNode || v.n.Value == "" {
		return "", v.errorf("is %s, want a node reference", article(kindOf(v.n)))
	}
	ref := v.n.Value
	if ref == StartNode {
		return ref, nil
	}
	if ext := filepath.Ext(ref); ext == ".yaml" || ext == ".yml" {
		return g.file(v)
	}
	if _, ok := g.at[ref]; ok {
		return ref, nil
	}
	reg := g.s.l.opts.Registry
	n, ok := lookup(reg, func(r *Registry) map[string]*graph.Node { return r.nodes }, nil, ref)
	if !ok {
		have := nodeNames(g.at)
		if r := names(reg, func(r *Registry) map[string]*graph.Node { return r.nodes }, nil); r != "none registered" {
			have += "; registered: " + r
		}
		return "", v.errorf("names no node (nodes: %s)", have)
	}
	if n.Name() != ref {
		var err error
		if n, err = n.Named(ref); err != nil {
			return "", v.errorf("%v", err)
		}
	}
	return ref, g.add(n, v)
}

// file resolves a node file: read once, whatever the number of references.
func (g *graphBuild) file(v node) (string, error) {
	path, err := g.s.l.path(v)
	if err != nil {
		return "", err
	}
	if name, ok := g.files[path]; ok {
		return name, nil
	}
	l := g.s.l
	if l.reads >= MaxFileReads {
		return "", v.errorf("the app reads more than %d config files (a file is read once for every reference to it)", MaxFileReads)
	}
	var n *graph.Node
	switch class, err := nodeClass(path); {
	case err != nil:
		return "", err
	case class == functionNodeClass || class == toolNodeClass || class == joinNodeClass:
		doc, err := l.doc(path)
		if err != nil {
			return "", err
		}
		if n, err = g.s.nodeFile(doc, class); err != nil {
			return "", err
		}
	default:
		a, err := l.file(path, g.s.model)
		if err != nil {
			return "", err
		}
		n = graph.FromAgent(a)
	}
	g.files[path] = n.Name()
	return n.Name(), g.add(n, v)
}

// nodeClass reads the agent_class of a config file without counting it
// as read (the node or agent built from it reads it).
func nodeClass(path string) (string, error) {
	data, err := readFile(path)
	if err != nil {
		return "", err
	}
	var head struct {
		Class string `yaml:"agent_class"`
	}
	_ = yaml.Unmarshal(data, &head) // the full read reports a malformed file
	c := head.Class
	if rest, ok := strings.CutPrefix(c, "google.adk.workflow."); ok {
		c = rest
	}
	return c, nil
}

// nodeFile builds the node of a FunctionNode, ToolNode or JoinNode file.
func (s *Spec) nodeFile(doc node, class string) (*graph.Node, error) {
	if doc.n.Kind != yaml.MappingNode {
		return nil, doc.errorf("is %s, want an object (a node config)", article(kindOf(doc.n)))
	}
	if err := validate(doc, Def(class+"Config")); err != nil {
		return nil, err
	}
	name := doc.str("name")
	if err := CheckName(name); err != nil {
		v, _ := doc.get("name")
		return nil, v.errorf("%v", err)
	}
	var n *graph.Node
	switch class {
	case joinNodeClass:
		n = graph.Join(name)
	case functionNodeClass:
		v, _ := doc.get("func_code")
		reg := s.l.opts.Registry
		fn, ok := lookup(reg, func(r *Registry) map[string]*graph.Node { return r.nodes }, nil, v.n.Value)
		if !ok {
			return nil, v.errorf("%v", errNotRegistered("node", v.n.Value, names(reg, func(r *Registry) map[string]*graph.Node { return r.nodes }, nil)))
		}
		var err error
		if n, err = fn.Named(name); err != nil {
			return nil, v.errorf("%v", err)
		}
	case toolNodeClass:
		v, _ := doc.get("tool_code")
		args, hasArgs := doc.get("args")
		t, ts, err := s.toolNamed(doc, v, args, hasArgs)
		if err != nil {
			return nil, err
		}
		f, err := toolNodeFunction(v, t, ts)
		if err != nil {
			return nil, err
		}
		if n, err = graph.FromTool(f).Named(name); err != nil {
			return nil, v.errorf("%v", err)
		}
	}
	if v, ok := doc.get("rerun_on_resume"); ok && v.n.Value != "true" {
		return nil, v.errorf("is not supported: a node that asks for input runs again with the answer (rerun_on_resume: true)")
	}
	var parallel bool
	if v, ok := doc.get("parallel_worker"); ok {
		if err := v.decode(&parallel); err != nil {
			return nil, err
		}
	}
	if parallel {
		n = graph.ParallelWorker(n, 0)
	}
	return nodeOptions(n, doc)
}

// graphNode builds one entry of nodes, a Loom key.
func (s *Spec) graphNode(e node) (*graph.Node, error) {
	var n *graph.Node
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
		n = graph.FromAgent(a)
	case "tool":
		t, ts, err := s.tool(v)
		if err != nil {
			return nil, err
		}
		f, err := toolNodeFunction(v, t, ts)
		if err != nil {
			return nil, err
		}
		n = graph.FromTool(f)
	case "function":
		reg := s.l.opts.Registry
		fn, ok := lookup(reg, func(r *Registry) map[string]*graph.Node { return r.nodes }, nil, v.n.Value)
		if !ok {
			return nil, v.errorf("%v", errNotRegistered("node", v.n.Value, names(reg, func(r *Registry) map[string]*graph.Node { return r.nodes }, nil)))
		}
		n = fn
	case "join":
		n = graph.Join(v.n.Value)
	}
	if n.Name() == StartNode {
		return nil, v.errorf("%s names the workflow's entry, not a node", StartNode)
	}
	return nodeOptions(n, e)
}

// nodeOptions applies the description, retry_config and timeout of a
// node's mapping e.
func nodeOptions(n *graph.Node, e node) (*graph.Node, error) {
	var opts graph.NodeOptions
	opts.Description = e.str("description")
	if r, ok := e.get("retry_config"); ok {
		var rc struct {
			MaxAttempts   int      `yaml:"max_attempts"`
			InitialDelay  float64  `yaml:"initial_delay"`
			MaxDelay      float64  `yaml:"max_delay"`
			BackoffFactor *float64 `yaml:"backoff_factor"`
			Jitter        float64  `yaml:"jitter"`
		}
		if err := r.decode(&rc); err != nil {
			return nil, err
		}
		if rc.BackoffFactor != nil && *rc.BackoffFactor != 2 {
			f, _ := r.get("backoff_factor")
			return nil, f.errorf("is %v: the delay between attempts doubles (backoff_factor: 2)", *rc.BackoffFactor)
		}
		if rc.MaxAttempts == 0 {
			rc.MaxAttempts = 1
		}
		opts.Retry = graph.Retry{MaxAttempts: rc.MaxAttempts, Backoff: seconds(rc.InitialDelay), MaxBackoff: seconds(rc.MaxDelay)}
	}
	if t, ok := e.get("timeout"); ok {
		var secs float64
		if err := t.decode(&secs); err != nil {
			return nil, err
		}
		opts.Timeout = seconds(secs)
	}
	if opts == (graph.NodeOptions{}) {
		return n, nil
	}
	return n.With(opts), nil
}

// nodeNames lists the names of a workflow's nodes, sorted, for errors.
func nodeNames(at map[string]node) string {
	m := make(map[string]struct{}, len(at))
	for k := range at {
		m[k] = struct{}{}
	}
	return names[struct{}](nil, nil, m)
}

// toolNodeFunction is the function a tool node at v runs: one tool the
// model could call, not a toolset nor a tool that only changes requests.
func toolNodeFunction(v node, t tool.Tool, ts tool.Toolset) (tool.Function, error) {
	if ts != nil || t == nil {
		return nil, v.errorf("a tool node runs one tool, not a toolset")
	}
	f, ok := t.(tool.Function)
	if !ok {
		return nil, v.errorf("tool %s only changes model requests; a tool node runs a function", t.Name())
	}
	return f, nil
}
