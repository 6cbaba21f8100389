package agentconfig

import (
	"errors"
	"fmt"
	"io"
	"reflect"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/fallback"
	"github.com/loomkit/loom/tool"
)

// Spec is one agent's mapping in a config file, as an AgentClass sees it.
type Spec struct {
	l     *loader
	n     node
	model string // the model name in effect: the agent's own or inherited
}

// File returns the path of the config file the agent is written in.
func (s *Spec) File() string { return s.n.file }

// Name returns the agent's name.
func (s *Spec) Name() string { return s.n.str("name") }

// Description returns the agent's description.
func (s *Spec) Description() string { return s.n.str("description") }

// Has reports whether the agent's mapping has key.
func (s *Spec) Has(key string) bool {
	_, ok := s.n.get(key)
	return ok
}

// Decode decodes the value of key into v (a pointer, as for yaml.Unmarshal)
// and reports whether the key is present.
func (s *Spec) Decode(key string, v any) (bool, error) {
	n, ok := s.n.get(key)
	if !ok {
		return false, nil
	}
	return true, n.decode(v)
}

// Errorf returns an *Error located at key (at the agent when key is absent).
func (s *Spec) Errorf(key, format string, args ...any) error {
	if n, ok := s.n.get(key); ok {
		return n.errorf(format, args...)
	}
	return s.n.errorf(format, args...)
}

// Model returns the model of the agent: the one its model key names, or
// its nearest ancestor's, through Options.Model. When the agent lists
// fallback_models (a Loom key), it is a model/fallback chain of that model
// and those, in order.
func (s *Spec) Model() (model.LLM, error) {
	var fallbacks []string
	if _, err := s.Decode("fallback_models", &fallbacks); err != nil {
		return nil, err
	}
	return s.l.chain(s.n, "model", s.model, fallbacks)
}

// chain opens a model and its fallbacks through Options.Model; errors are
// located at key of n (fallback_models for a fallback's).
func (l *loader) chain(n node, key, name string, fallbacks []string) (model.LLM, error) {
	at := func(k, format string, args ...any) error {
		if c, ok := n.get(k); ok {
			return c.errorf(format, args...)
		}
		return n.errorf(format, args...)
	}
	if l.opts.Model == nil {
		return nil, at(key, "no model resolver: the program loading this config gives none")
	}
	m, err := l.opts.Model(name)
	if err != nil {
		return nil, at(key, "%v", err)
	}
	if len(fallbacks) == 0 {
		return m, nil
	}
	models := []model.LLM{m}
	for _, f := range fallbacks {
		fm, err := l.opts.Model(f)
		if err != nil {
			return nil, at("fallback_models", "%s: %v", f, err)
		}
		models = append(models, fm)
	}
	return fallback.New(models)
}

// SubAgents builds the agents of sub_agents.
func (s *Spec) SubAgents() ([]agent.Agent, error) {
	n, ok := s.n.get("sub_agents")
	if !ok {
		return nil, nil
	}
	out := make([]agent.Agent, 0, len(n.n.Content))
	for i, item := range n.n.Content {
		a, err := s.l.ref(n.index(i, item), s.model)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// AgentCallbacks returns the callbacks of before_agent_callbacks and
// after_agent_callbacks.
func (s *Spec) AgentCallbacks() ([]agent.BeforeAgentCallback, []agent.AfterAgentCallback, error) {
	before, err := callbacks[agent.BeforeAgentCallback](s, "before_agent_callbacks")
	if err != nil {
		return nil, nil, err
	}
	after, err := callbacks[agent.AfterAgentCallback](s, "after_agent_callbacks")
	return before, after, err
}

// callbacks resolves the registered callbacks listed under key, checking
// that each has the type T the list takes.
func callbacks[T any](s *Spec, key string) ([]T, error) {
	n, ok := s.n.get(key)
	if !ok {
		return nil, nil
	}
	want := reflect.TypeFor[T]()
	var out []T
	for i, item := range n.n.Content {
		e := n.index(i, item)
		if _, has := e.get("args"); has {
			return nil, e.errorf("callbacks take no args")
		}
		name := e.str("name")
		fn, ok := lookup(s.l.opts.Registry, func(r *Registry) map[string]any { return r.callbacks }, nil, name)
		if !ok {
			return nil, e.errorf("%v", errNotRegistered("callback", name, names(s.l.opts.Registry, func(r *Registry) map[string]any { return r.callbacks }, nil)))
		}
		v := reflect.ValueOf(fn)
		if !v.IsValid() || v.IsNil() || !v.Type().ConvertibleTo(want) {
			return nil, e.errorf("callback %q is a %T; %s takes %s", name, fn, key, want)
		}
		out = append(out, v.Convert(want).Interface().(T))
	}
	return out, nil
}

// Tools builds the tools and toolsets of the tools key.
func (s *Spec) Tools() ([]tool.Tool, []tool.Toolset, error) {
	n, ok := s.n.get("tools")
	if !ok {
		return nil, nil, nil
	}
	var tools []tool.Tool
	var sets []tool.Toolset
	for i, item := range n.n.Content {
		e := n.index(i, item)
		t, ts, err := s.tool(e)
		if err != nil {
			return nil, nil, err
		}
		if t != nil {
			tools = append(tools, t)
		}
		if ts != nil {
			sets = append(sets, ts)
			if c, ok := ts.(io.Closer); ok {
				s.l.app.closers = append(s.l.app.closers, c)
			}
		}
	}
	return tools, sets, nil
}

func (s *Spec) tool(e node) (tool.Tool, tool.Toolset, error) {
	v, _ := e.get("name")
	args, hasArgs := e.get("args")
	return s.toolNamed(e, v, args, hasArgs)
}

// toolNamed builds the tool or toolset the scalar v names, with args if
// hasArgs; errors about the entry as a whole are located at e.
func (s *Spec) toolNamed(e, v, args node, hasArgs bool) (tool.Tool, tool.Toolset, error) {
	raw := v.n.Value
	name := toolName(raw)
	reg := s.l.opts.Registry
	if k, ok := lookup(reg, func(r *Registry) map[string]ToolKind { return r.kinds }, builtinKinds(), name); ok {
		if !hasArgs && k.Args != nil {
			return nil, nil, e.errorf("tool %s needs args", raw)
		}
		if hasArgs {
			if k.Args == nil {
				return nil, nil, args.errorf("tool %s takes no args", raw)
			}
			if err := validate(args, k.Args); err != nil {
				return nil, nil, err
			}
		}
		t, ts, err := k.New(&ToolSpec{spec: s, entry: e, args: args, hasArgs: hasArgs})
		if err != nil {
			var ce *Error
			if errors.As(err, &ce) {
				return nil, nil, err
			}
			return nil, nil, e.errorf("%v", err)
		}
		return t, ts, nil
	}
	if hasArgs {
		return nil, nil, args.errorf("tool %s takes no args: args are for tool kinds (%s)", raw, names(reg, func(r *Registry) map[string]ToolKind { return r.kinds }, builtinKinds()))
	}
	if fn, ok := lookup(reg, func(r *Registry) map[string]func() (tool.Tool, error) { return r.tools }, builtinTools(), name); ok {
		t, err := fn()
		if err != nil {
			return nil, nil, e.errorf("tool %s: %v", raw, err)
		}
		return t, nil, nil
	}
	if fn, ok := lookup(reg, func(r *Registry) map[string]func() (tool.Toolset, error) { return r.toolsets }, nil, raw); ok {
		ts, err := fn()
		if err != nil {
			return nil, nil, e.errorf("toolset %s: %v", raw, err)
		}
		return nil, ts, nil
	}
	have := names(reg, func(r *Registry) map[string]func() (tool.Tool, error) { return r.tools }, builtinTools())
	if ts := names(reg, func(r *Registry) map[string]func() (tool.Toolset, error) { return r.toolsets }, nil); ts != "none registered" {
		have += "; toolsets: " + ts
	}
	have += "; kinds: " + names(reg, func(r *Registry) map[string]ToolKind { return r.kinds }, builtinKinds())
	return nil, nil, v.errorf("%v", errNotRegistered("tool", raw, have))
}

// ToolSpec is one tools entry naming a tool kind, as the ToolKind sees it.
type ToolSpec struct {
	spec    *Spec
	entry   node
	args    node
	hasArgs bool
}

// Agent returns the spec of the agent whose tools list holds the entry.
func (t *ToolSpec) Agent() *Spec { return t.spec }

// Decode decodes the args into v (a pointer, as for yaml.Unmarshal).
func (t *ToolSpec) Decode(v any) error {
	if !t.hasArgs {
		return nil
	}
	return t.args.decode(v)
}

// Errorf returns an *Error located at key of the args (at the entry when
// absent).
func (t *ToolSpec) Errorf(key, format string, args ...any) error {
	if t.hasArgs {
		if n, ok := t.args.get(key); ok {
			return n.errorf(format, args...)
		}
		return t.args.errorf(format, args...)
	}
	return t.entry.errorf(format, args...)
}

// BuildAgent builds the agent at key of the args: a reference (config_path
// or code) or an inline agent config, inheriting the model of the agent
// holding the tool.
func (t *ToolSpec) BuildAgent(key string) (agent.Agent, error) {
	n, ok := t.args.get(key)
	if !t.hasArgs || !ok {
		return nil, t.Errorf(key, "missing %s", key)
	}
	return t.spec.l.ref(n, t.spec.model)
}

// String names the spec by its agent and its file, for messages.
func (s *Spec) String() string { return fmt.Sprintf("%s (%s)", s.Name(), s.File()) }
