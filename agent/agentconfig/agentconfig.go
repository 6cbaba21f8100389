// Package agentconfig builds agent trees from config files in ADK's Agent
// Config format: a root_agent.yaml naming the agent class, its model,
// instruction, tools and sub-agents, which may live in further files
// referenced by a path relative to the file naming them.
//
//	name: assistant
//	model: gemini-2.5-flash
//	instruction: You answer questions about the weather.
//	tools:
//	  - name: load_memory
//	  - name: weather.lookup        # registered from Go code
//	sub_agents:
//	  - config_path: researcher.yaml
//
// Files written for ADK Python load unchanged when they use only what Loom
// has. The agent classes are LlmAgent (the default; also Agent),
// SequentialAgent, ParallelAgent and LoopAgent, with or without ADK's
// "google.adk.agents." prefix, and Workflow, a graph workflow in ADK's
// form: edges are chains of node references from START, whose nodes are
// node files (FunctionNode, ToolNode, JoinNode, or an agent of any
// class), nodes registered from Go code with [Registry.Node], or nodes
// written inline under the Loom key nodes; maps after a chain's last node
// route out of it:
//
//	agent_class: Workflow
//	name: support
//	edges:
//	  - [START, classify, {refund: refunds.yaml, default: faq.yaml}]
//	  - [refunds.yaml, done.yaml]
//	  - [faq.yaml, done.yaml]
//
// Tools are named: the built-in exit_loop, load_artifacts and load_memory; the kinds McpToolset (the tools of an MCP
// server, by its connection settings in args), OpenAPIToolset (the
// operations of an OpenAPI document, args as ADK's OpenAPIToolset takes
// them: spec_dict, spec_str or Loom's spec_path, tool_filter,
// tool_name_prefix, and an auth_scheme for every operation with an oauth2
// auth_credential whose client secret client_secret_env may name in the
// environment), AgentTool (an agent as a tool) and Loom's SkillToolset (the Agent Skills of a directory beside
// the file: args skills_dir, max_active, code_executor: local); and tools, toolsets, callbacks, output schemas and agents that Go
// code registers by name in a [Registry], which can also add agent classes
// and tool kinds.
//
// Every agent's keys are checked against the JSON schema of its class
// ([Schema]); an unknown key, a missing one, a wrong type or an unknown name
// is an [*Error] naming the file, line and field. A file holds at most
// [MaxFileBytes] and one Load reads at most [MaxFileReads] files. Models are the caller's:
// [Options.Model] turns each LLM agent's model name (inherited from the
// nearest ancestor that names one) into a model.LLM.
package agentconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/model"
)

// RootFile is the name of an app's root config file.
const RootFile = "root_agent.yaml"

// MaxFileBytes bounds the size of one config file.
const MaxFileBytes = 1 << 20

// MaxFileReads bounds the config files one Load reads. A file referenced
// from several places is read (and its agent built) once per reference, so
// files that reference each other twice over would otherwise double the
// tree at every file.
const MaxFileReads = 1000

// Options configure Load.
type Options struct {
	// Registry holds what files may name beyond the built-ins; nil for
	// none.
	Registry *Registry
	// Model returns the model of an LLM agent given the name its file (or
	// the nearest ancestor's) gives, "" when none does. Required to load
	// LLM agents.
	Model func(name string) (model.LLM, error)
	// Stderr receives the standard error of MCP servers started over
	// stdio; nil discards it.
	Stderr io.Writer
}

// App is an agent tree loaded from config files.
type App struct {
	// Root is the root agent.
	Root agent.Agent
	// Files are the config files read, the root first: a change to any of
	// them changes the app.
	Files []string
	// closers end what the tree holds open (MCP sessions).
	closers []io.Closer
}

// Close closes what the app's tools hold open, such as MCP server
// sessions. The agents must not run afterwards.
func (a *App) Close() error {
	var errs []error
	for _, c := range a.closers {
		errs = append(errs, c.Close())
	}
	a.closers = nil
	return errors.Join(errs...)
}

// Load loads the app whose root config is path: a root_agent.yaml file, or
// a directory holding one. On failure it closes whatever it opened.
func Load(path string, opts *Options) (*App, error) {
	if opts == nil {
		opts = &Options{}
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, RootFile)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
	if err != nil {
		return nil, fmt.Errorf("agentconfig: %w", err)
	}
	l := &loader{opts: opts, dir: dir, app: &App{}}
	rootPath, err := l.inside(filepath.Join(dir, filepath.Base(abs)))
	if err != nil {
		return nil, fmt.Errorf("agentconfig: %s: the file %w", path, err)
	}
	root, err := l.file(rootPath, "")
	if err != nil {
		l.app.Close()
		return nil, err
	}
	if _, err := agent.NewTree(root); err != nil {
		l.app.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	l.app.Root = root
	return l.app, nil
}

// loader is one Load.
type loader struct {
	opts  *Options
	dir   string // the app's directory: config paths stay inside it
	app   *App
	stack []string // files being loaded, to refuse cycles
	reads int      // config files read so far
}

// file loads the agent of one config file; model is the inherited model
// name.
func (l *loader) file(path, model string) (agent.Agent, error) {
	if slices.Contains(l.stack, path) {
		return nil, fmt.Errorf("%s: config files reference each other in a cycle: %s", path, strings.Join(append(l.stack, path), " → "))
	}
	n, err := l.doc(path)
	if err != nil {
		return nil, err
	}
	l.stack = append(l.stack, path)
	defer func() { l.stack = l.stack[:len(l.stack)-1] }()
	return l.agent(n, model)
}

// doc reads a config file and returns its one document, counted among the
// app's files.
func (l *loader) doc(path string) (node, error) {
	l.reads++
	data, err := readFile(path)
	if err != nil {
		return node{}, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		return node{}, fmt.Errorf("%s: %w", path, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return node{}, &Error{File: path, Line: 1, Column: 1, Msg: "the file is empty: an agent config is a mapping with at least a name"}
	}
	// A second document would be ignored without a word; ADK refuses it
	// too.
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		return node{}, &Error{File: path, Line: next.Line, Column: next.Column, Msg: "the file holds more than one YAML document: an agent config is one document"}
	} else if err != io.EOF {
		return node{}, fmt.Errorf("%s: %w", path, err)
	}
	n := node{file: path, n: doc.Content[0]}
	if err := noAliases(n.n, path); err != nil {
		return node{}, err
	}
	l.app.Files = append(l.app.Files, path)
	return n, nil
}

// readFile reads a config file. Anything but a regular file is refused
// before it is opened: opening a named pipe waits for a writer, and a
// device may never end.
func readFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("agentconfig: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, &Error{File: path, Msg: "not a regular file but " + fileKind(fi.Mode())}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("agentconfig: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("agentconfig: %s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, &Error{File: path, Msg: fmt.Sprintf("the file is larger than %d bytes", MaxFileBytes)}
	}
	return data, nil
}

// fileKind names the kind of a file that is not a regular one.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// noAliases refuses YAML anchors and aliases, which a config does not need
// and which could expand a small file into a huge tree.
func noAliases(n *yaml.Node, file string) error {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return &Error{File: file, Line: n.Line, Column: n.Column, Msg: "YAML anchors and aliases are not supported in agent configs"}
	}
	for _, c := range n.Content {
		if err := noAliases(c, file); err != nil {
			return err
		}
	}
	return nil
}

// agent builds the agent of a mapping node (a file's document or an inline
// sub-agent).
func (l *loader) agent(n node, model string) (agent.Agent, error) {
	if n.n.Kind != yaml.MappingNode {
		return nil, n.errorf("is %s, want an object (an agent config)", article(kindOf(n.n)))
	}
	cls := className(n.str("agent_class"))
	c, ok := lookup(l.opts.Registry, func(r *Registry) map[string]AgentClass { return r.classes }, builtinClasses(), cls)
	if !ok {
		v, _ := n.get("agent_class")
		return nil, v.errorf("%v", errNotRegistered("agent class", cls, names(l.opts.Registry, func(r *Registry) map[string]AgentClass { return r.classes }, builtinClasses())))
	}
	if err := validate(n, c.Schema); err != nil {
		return nil, err
	}
	if name, ok := n.get("name"); ok {
		if err := CheckName(name.n.Value); err != nil {
			return nil, name.errorf("%v", err)
		}
	}
	spec := &Spec{l: l, n: n, model: model}
	if m := n.str("model"); m != "" {
		spec.model = m
	}
	a, err := c.New(spec)
	if err != nil {
		var ce *Error
		if errors.As(err, &ce) {
			return nil, err
		}
		return nil, n.errorf("%v", err)
	}
	return a, nil
}

// ref builds a sub-agent: a reference by config_path or code, or an agent
// written inline.
func (l *loader) ref(n node, model string) (agent.Agent, error) {
	if _, inline := n.get("name"); inline {
		return l.agent(n, model)
	}
	cp, hasPath := n.get("config_path")
	code, hasCode := n.get("code")
	switch {
	case hasPath && hasCode:
		return nil, n.errorf("set config_path or code, not both")
	case hasPath:
		p, err := l.path(cp)
		if err != nil {
			return nil, err
		}
		if l.reads >= MaxFileReads {
			return nil, cp.errorf("the app reads more than %d config files (a file is read once for every reference to it)", MaxFileReads)
		}
		return l.file(p, model)
	case hasCode:
		fn, ok := lookup(l.opts.Registry, func(r *Registry) map[string]func() (agent.Agent, error) { return r.agents }, nil, code.n.Value)
		if !ok {
			return nil, code.errorf("%v", errNotRegistered("agent", code.n.Value, names(l.opts.Registry, func(r *Registry) map[string]func() (agent.Agent, error) { return r.agents }, nil)))
		}
		a, err := fn()
		if err != nil {
			return nil, code.errorf("%v", err)
		}
		return a, nil
	}
	return nil, n.errorf("a sub-agent needs config_path, code, or an inline config with a name")
}

// inside resolves the links of path, a file the app reads, and refuses it
// if it then lies outside the app's directory: the root file and every
// config_path are held to the directory the same way.
func (l *loader) inside(path string) (string, error) {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if rel, err := filepath.Rel(l.dir, path); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("is outside the app's directory %s", l.dir)
	}
	return path, nil
}

// path resolves a config_path relative to the file naming it, refusing
// absolute paths and paths leaving the app's directory.
func (l *loader) path(n node) (string, error) {
	p := n.n.Value
	if p == "" || filepath.IsAbs(p) || filepath.VolumeName(p) != "" {
		return "", n.errorf("must be a path relative to %s", filepath.Base(n.file))
	}
	full, err := l.inside(filepath.Join(filepath.Dir(n.file), filepath.FromSlash(p)))
	if err != nil {
		return "", n.errorf("%s %v", p, err)
	}
	fi, err := os.Stat(full)
	if err != nil {
		return "", n.errorf("%v", err)
	}
	if !fi.Mode().IsRegular() {
		return "", n.errorf("%s is not a regular file but %s", p, fileKind(fi.Mode()))
	}
	return full, nil
}
