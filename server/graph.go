package server

import (
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/tool"
)

// The graph routes of ADK's web UI: GET /dev/apps/{app}/build_graph
// describes the app's agent tree, with the graph of each workflow and the
// tools of each LLM agent, and GET
// /dev/apps/{app}/build_graph_image draws it as Graphviz DOT source.

// graphInfo is one agent of build_graph's tree, in the shape of ADK's
// serialized agents: a workflow also has its graph, and as a node of a
// graph an agent also has its type.
type graphInfo struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Type        string         `json:"type,omitempty"`
	SubAgents   []graphInfo    `json:"sub_agents"`
	Tools       []graphNode    `json:"tools,omitempty"`
	Graph       *workflowGraph `json:"graph,omitempty"`
}

// graphTool is a tool of an agent as the graph shows it; agent is true for
// an agent used as a tool.
type graphTool struct {
	name  string
	agent bool
}

// toolsOf returns the tools an agent gives its model, as ADK draws them:
// its tools, then its toolsets by name (listing a toolset's tools may reach
// a server, which a graph route does not wait for), leaving out any named
// like one of its sub-agents, which are drawn as agents.
func toolsOf(a agent.Agent) []graphTool {
	subs := map[string]bool{}
	for _, sub := range agent.SubAgents(a) {
		subs[sub.Name()] = true
	}
	var out []graphTool
	add := func(name string, isAgent bool) {
		if name != "" && !subs[name] {
			out = append(out, graphTool{name: name, agent: isAgent})
		}
	}
	if ts, ok := a.(interface{ Tools() []tool.Tool }); ok {
		for _, t := range ts.Tools() {
			if t == nil {
				continue
			}
			_, isAgent := t.(interface{ Agent() agent.Agent })
			add(t.Name(), isAgent)
		}
	}
	if ts, ok := a.(interface{ Toolsets() []tool.Toolset }); ok {
		for _, set := range ts.Toolsets() {
			if set != nil {
				add(set.Name(), false)
			}
		}
	}
	return out
}

// workflowGraph is a workflow's nodes and edges. The first node is ADK's
// START node, with an edge to the start node.
type workflowGraph struct {
	Nodes []any       `json:"nodes"`
	Edges []graphEdge `json:"edges"`
}

// graphNode is a node that is not an agent.
type graphNode struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
}

// graphEdge is an edge; Max (the bound of a loop edge) is Loom's.
type graphEdge struct {
	From  any    `json:"from_node"`
	To    any    `json:"to_node"`
	Route string `json:"route,omitempty"`
	Max   int    `json:"max,omitempty"`
}

var startNode = graphNode{Name: "__START__", Type: "start"}

func describeGraph(a agent.Agent) graphInfo {
	info := graphInfo{Name: a.Name(), Description: a.Description(), SubAgents: []graphInfo{}}
	for _, sub := range agent.SubAgents(a) {
		info.SubAgents = append(info.SubAgents, describeGraph(sub))
	}
	for _, t := range toolsOf(a) {
		info.Tools = append(info.Tools, graphNode{Name: t.name, Type: "tool"})
	}
	w, ok := a.(*graph.Workflow)
	if !ok {
		return info
	}
	g := &workflowGraph{Nodes: []any{startNode}, Edges: []graphEdge{}}
	byName := map[string]any{}
	for _, n := range w.Nodes() {
		var node any = graphNode{Name: n.Name(), Type: n.Kind().String()}
		if n.Agent() != nil {
			sub := describeGraph(n.Agent())
			sub.Type = n.Kind().String()
			node = sub
		}
		byName[n.Name()] = node
		g.Nodes = append(g.Nodes, node)
	}
	for _, name := range w.Starts() {
		g.Edges = append(g.Edges, graphEdge{From: startNode, To: byName[name]})
	}
	for _, e := range w.Edges() {
		g.Edges = append(g.Edges, graphEdge{From: byName[e.From], To: byName[e.To], Route: e.Route, Max: e.Max})
	}
	info.Graph = g
	return info
}

func (s *Server) buildGraph(w http.ResponseWriter, r *http.Request) error {
	a, err := s.app(r.PathValue("app"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"name": r.PathValue("app"), "root_agent": describeGraph(a.Tree().Root()), "readme": ""})
}

func (s *Server) buildGraphImage(w http.ResponseWriter, r *http.Request) error {
	a, err := s.app(r.PathValue("app"))
	if err != nil {
		return err
	}
	dark := r.URL.Query().Get("dark_mode") == "true"
	root := a.Tree().Root()
	if node := r.URL.Query().Get("node"); node != "" {
		target := findByPath(root, node)
		if target == nil {
			return &detailError{detail: "Node not found: " + node, err: errNotFound}
		}
		return writeJSON(w, http.StatusOK, map[string]string{"dotSrc": dot(target, dark)})
	}
	out := map[string]map[string]string{"": {"dotSrc": dot(root, dark)}}
	var walk func(a agent.Agent, path string)
	walk = func(a agent.Agent, path string) {
		for _, sub := range agent.SubAgents(a) {
			p := sub.Name()
			if path != "" {
				p = path + "/" + p
			}
			if _, ok := sub.(*graph.Workflow); ok {
				out[p] = map[string]string{"dotSrc": dot(sub, dark)}
			}
			walk(sub, p)
		}
	}
	walk(root, "")
	return writeJSON(w, http.StatusOK, out)
}

// findByPath walks a node path ("a/b", segments may carry "@run" suffixes
// and may start with the root's name) from root.
func findByPath(root agent.Agent, path string) agent.Agent {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for i := range segs {
		segs[i], _, _ = strings.Cut(segs[i], "@")
	}
	if len(segs) > 0 && segs[0] == root.Name() {
		segs = segs[1:]
	}
	cur := root
	for _, seg := range segs {
		var next agent.Agent
		for _, sub := range agent.SubAgents(cur) {
			if sub.Name() == seg {
				next = sub
			}
		}
		if next == nil {
			return nil
		}
		cur = next
	}
	return cur
}

// theme is the palette of a drawing.
type theme struct{ bg, fg, fill, accent string }

var (
	lightTheme = theme{bg: "#ffffff", fg: "#202124", fill: "#e8f0fe", accent: "#1a73e8"}
	darkTheme  = theme{bg: "#202124", fg: "#e8eaed", fill: "#303134", accent: "#8ab4f8"}
)

// dot draws an agent as Graphviz DOT: a workflow as its graph, any other
// agent as its tree of sub-agents, each LLM agent with its tools (a box
// labelled 🔧, or 🤖 for an agent used as a tool, with an edge from the
// agent, as ADK draws them).
func dot(a agent.Agent, dark bool) string {
	t := lightTheme
	if dark {
		t = darkTheme
	}
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n", quote(a.Name()))
	fmt.Fprintf(&b, "  bgcolor=%s;\n  rankdir=LR;\n", quote(t.bg))
	fmt.Fprintf(&b, "  node [style=\"rounded,filled\" shape=box color=%s fillcolor=%s fontcolor=%s];\n", quote(t.accent), quote(t.fill), quote(t.fg))
	fmt.Fprintf(&b, "  edge [color=%s fontcolor=%s];\n", quote(t.fg), quote(t.fg))
	if w, ok := a.(*graph.Workflow); ok {
		b.WriteString("  \"__start__\" [label=\"START\" shape=circle];\n")
		for _, n := range w.Nodes() {
			shape := "box"
			switch n.Kind() {
			case graph.KindJoin:
				shape = "diamond"
			case graph.KindWorkflow:
				shape = "box3d"
			case graph.KindTool:
				shape = "component"
			case graph.KindAgent:
				shape = "ellipse"
			}
			fmt.Fprintf(&b, "  %s [shape=%s tooltip=%s];\n", quote(n.Name()), shape, quote(n.Kind().String()))
		}
		for _, name := range w.Starts() {
			fmt.Fprintf(&b, "  \"__start__\" -> %s;\n", quote(name))
		}
		for _, e := range w.Edges() {
			label := e.Route
			if e.Max > 0 {
				label = strings.TrimSpace(fmt.Sprintf("%s ≤%d", label, e.Max))
			}
			if label != "" {
				fmt.Fprintf(&b, "  %s -> %s [label=%s];\n", quote(e.From), quote(e.To), quote(label))
			} else {
				fmt.Fprintf(&b, "  %s -> %s;\n", quote(e.From), quote(e.To))
			}
		}
	} else {
		var names []string
		var agents []agent.Agent
		var walk func(a agent.Agent)
		edges := map[string][]string{}
		walk = func(a agent.Agent) {
			names = append(names, a.Name())
			agents = append(agents, a)
			for _, sub := range agent.SubAgents(a) {
				edges[a.Name()] = append(edges[a.Name()], sub.Name())
				walk(sub)
			}
		}
		walk(a)
		drawn := map[string]bool{}
		for _, n := range names {
			fmt.Fprintf(&b, "  %s;\n", quote(n))
			drawn[n] = true
		}
		var toolEdges []string
		for _, ag := range agents {
			n := ag.Name()
			for _, t := range toolsOf(ag) {
				if !drawn[t.name] {
					icon := "🔧 "
					if t.agent {
						icon = "🤖 "
					}
					fmt.Fprintf(&b, "  %s [label=%s shape=box];\n", quote(t.name), quote(icon+t.name))
					drawn[t.name] = true
				}
				toolEdges = append(toolEdges, fmt.Sprintf("  %s -> %s;\n", quote(n), quote(t.name)))
			}
		}
		parents := make([]string, 0, len(edges))
		for p := range edges {
			parents = append(parents, p)
		}
		sort.Strings(parents)
		for _, p := range parents {
			for _, c := range edges[p] {
				fmt.Fprintf(&b, "  %s -> %s;\n", quote(p), quote(c))
			}
		}
		for _, e := range toolEdges {
			b.WriteString(e)
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// quote returns s as a DOT quoted string.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}
