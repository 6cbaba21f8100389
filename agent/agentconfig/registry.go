package agentconfig

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/tool"
)

// AgentClass builds the agents of one agent_class.
type AgentClass struct {
	// Schema checks the keys of the agent's mapping; every key the class
	// takes must be in it (Def gives the built-in ones).
	Schema *jsonschema.Schema
	// New builds the agent of spec, which has passed Schema.
	New func(spec *Spec) (agent.Agent, error)
}

// ToolKind builds the tool or toolset of a tools entry naming it, from its
// args.
type ToolKind struct {
	// Args checks the args; nil means the kind takes none.
	Args *jsonschema.Schema
	// New builds the tool (or toolset) of an entry whose args passed Args.
	New func(spec *ToolSpec) (tool.Tool, tool.Toolset, error)
}

// Registry holds what config files can name beyond the built-ins: tools,
// toolsets, callbacks, schemas and agents written in Go, and further agent
// classes and tool kinds. A nil *Registry has only the built-ins. It is
// safe for concurrent use; register everything before loading.
type Registry struct {
	mu        sync.RWMutex
	tools     map[string]func() (tool.Tool, error)
	toolsets  map[string]func() (tool.Toolset, error)
	callbacks map[string]any
	schemas   map[string]*jsonschema.Schema
	agents    map[string]func() (agent.Agent, error)
	classes   map[string]AgentClass
	kinds     map[string]ToolKind
	nodes     map[string]*graph.Node
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{
		tools:     map[string]func() (tool.Tool, error){},
		toolsets:  map[string]func() (tool.Toolset, error){},
		callbacks: map[string]any{},
		schemas:   map[string]*jsonschema.Schema{},
		agents:    map[string]func() (agent.Agent, error){},
		classes:   map[string]AgentClass{},
		kinds:     map[string]ToolKind{},
		nodes:     map[string]*graph.Node{},
	}
}

// Tool registers a tool under name, for tools entries such as
// "- name: my_tools.lookup". A tool is stateless enough to be shared by
// every load; for one instance per load, use ToolFunc.
func (r *Registry) Tool(name string, t tool.Tool) *Registry {
	return r.ToolFunc(name, func() (tool.Tool, error) { return t, nil })
}

// ToolFunc registers a constructor called for every agent naming the tool.
func (r *Registry) ToolFunc(name string, fn func() (tool.Tool, error)) *Registry {
	return register(r, r.tools, name, fn)
}

// Toolset registers a toolset constructor under name. It is called for
// every agent naming the toolset; the loaded App closes what it returns
// when it implements Close() error.
func (r *Registry) Toolset(name string, fn func() (tool.Toolset, error)) *Registry {
	return register(r, r.toolsets, name, fn)
}

// Callback registers a callback under name, for the *_callbacks lists of a
// config. fn must be one of the callback types of package agent
// (agent.BeforeAgentCallback, agent.AfterModelCallback, ...) or a function
// of the same signature; loading checks that it fits the list naming it.
func (r *Registry) Callback(name string, fn any) *Registry {
	return register(r, r.callbacks, name, fn)
}

// Schema registers a JSON schema under name, for output_schema.
func (r *Registry) Schema(name string, s *jsonschema.Schema) *Registry {
	return register(r, r.schemas, name, s)
}

// Agent registers an agent constructor under name, for sub-agents given by
// code ("- code: my_agents.search"). It is called on every load: an agent
// belongs to one tree.
func (r *Registry) Agent(name string, fn func() (agent.Agent, error)) *Registry {
	return register(r, r.agents, name, fn)
}

// Node registers a graph workflow node under its name, for the nodes of a
// Workflow config ("- function: classify"). Nodes are immutable, so one is
// shared by every load.
func (r *Registry) Node(n *graph.Node) *Registry {
	return register(r, r.nodes, n.Name(), n)
}

// AgentClass registers an agent class under name, or replaces a built-in
// one. This is how agent kinds beyond the built-in LlmAgent,
// SequentialAgent, ParallelAgent and LoopAgent become available to files.
func (r *Registry) AgentClass(name string, c AgentClass) *Registry {
	return register(r, r.classes, name, c)
}

// ToolKind registers a tool kind under name, or replaces a built-in one
// (McpToolset, AgentTool). This is how toolsets configured by args beyond
// the built-in ones become available to files.
func (r *Registry) ToolKind(name string, k ToolKind) *Registry {
	return register(r, r.kinds, name, k)
}

// register sets m[name] = v under the registry's lock.
func register[V any](r *Registry, m map[string]V, name string, v V) *Registry {
	r.mu.Lock()
	defer r.mu.Unlock()
	m[name] = v
	return r
}

// lookup finds name in the registry's map m, then in builtin.
func lookup[V any](r *Registry, m func(*Registry) map[string]V, builtin map[string]V, name string) (V, bool) {
	if r != nil {
		r.mu.RLock()
		v, ok := m(r)[name]
		r.mu.RUnlock()
		if ok {
			return v, true
		}
	}
	v, ok := builtin[name]
	return v, ok
}

// names lists the names of a registry map and the built-ins, sorted.
func names[V any](r *Registry, m func(*Registry) map[string]V, builtin map[string]V) string {
	var out []string
	for k := range builtin {
		out = append(out, k)
	}
	if r != nil {
		r.mu.RLock()
		for k := range m(r) {
			if _, dup := builtin[k]; !dup {
				out = append(out, k)
			}
		}
		r.mu.RUnlock()
	}
	slices.Sort(out)
	if len(out) == 0 {
		return "none registered"
	}
	return strings.Join(out, ", ")
}

// className maps ADK's qualified spellings of the built-in classes to
// their short names.
func className(s string) string {
	if s == "" || s == "Agent" {
		return "LlmAgent"
	}
	if s == "google.adk.workflow.Workflow" || s == "google.adk.Workflow" {
		return "Workflow"
	}
	if rest, ok := strings.CutPrefix(s, "google.adk.agents."); ok {
		s = rest[strings.LastIndex(rest, ".")+1:]
		if s == "Agent" {
			s = "LlmAgent"
		}
	}
	return s
}

// toolName maps ADK's qualified spellings of the built-in tools to their
// short names ("google.adk.tools.exit_loop" → "exit_loop").
func toolName(s string) string {
	if rest, ok := strings.CutPrefix(s, "google.adk.tools."); ok {
		s = rest[strings.LastIndex(rest, ".")+1:]
	}
	if s == "MCPToolset" {
		s = "McpToolset"
	}
	return s
}

func errNotRegistered(what, name, have string) error {
	return fmt.Errorf("no %s named %q (have: %s)", what, name, have)
}
