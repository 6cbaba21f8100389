package agentconfig

import (
	"bytes"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/agent/workflowagent"
	"github.com/loomkit/loom/codeexec"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/advisortool"
	"github.com/loomkit/loom/tool/agenttool"
	"github.com/loomkit/loom/tool/builtintool"
	"github.com/loomkit/loom/tool/exampletool"
	"github.com/loomkit/loom/tool/exitlooptool"
	"github.com/loomkit/loom/tool/loadartifactstool"
	"github.com/loomkit/loom/tool/loadmemorytool"
	"github.com/loomkit/loom/tool/mcptool"
	"github.com/loomkit/loom/tool/skilltool"
)

// builtinClasses are the agent classes every load knows, and builtinKinds
// the tool kinds files configure with args. Both are built at the first
// load, not at start-up: their schemas parse schema.json. (They are set in
// init because their constructors lead back to them.)
var (
	builtinClasses func() map[string]AgentClass
	builtinKinds   func() map[string]ToolKind
)

func init() {
	builtinClasses = sync.OnceValue(func() map[string]AgentClass {
		return map[string]AgentClass{
			"LlmAgent":        {Schema: Def("LlmAgentConfig"), New: newLLM},
			"SequentialAgent": {Schema: Def("BaseAgentConfig"), New: newWorkflowAgent("SequentialAgent")},
			"ParallelAgent":   {Schema: Def("BaseAgentConfig"), New: newWorkflowAgent("ParallelAgent")},
			"LoopAgent":       {Schema: Def("LoopAgentConfig"), New: newWorkflowAgent("LoopAgent")},
			"Workflow":        {Schema: Def("WorkflowConfig"), New: newGraph},
		}
	})
	builtinKinds = sync.OnceValue(func() map[string]ToolKind {
		return map[string]ToolKind{
			"McpToolset":              {Args: Def("McpToolsetArgs"), New: newMCP},
			"OpenAPIToolset":          {Args: Def("OpenAPIToolsetArgs"), New: newOpenAPI},
			"AgentTool":               {Args: Def("AgentToolArgs"), New: newAgentTool},
			"ExampleTool":             {Args: Def("ExampleToolArgs"), New: newExampleTool},
			"AdvisorTool":             {Args: Def("AdvisorToolArgs"), New: newAdvisorTool},
			"VertexAiSearchTool":      {Args: Def("VertexAiSearchToolArgs"), New: newVertexAISearch},
			"LongRunningFunctionTool": {Args: Def("LongRunningFunctionToolArgs"), New: newLongRunning},
			"SkillToolset":            {Args: skillToolsetArgs, New: newSkillToolset},
		}
	})
}

// builtinTools are the tools files name without args: ADK's ready-made
// tools by the names its files use.
var builtinTools = sync.OnceValue(func() map[string]func() (tool.Tool, error) {
	return map[string]func() (tool.Tool, error){
		exitlooptool.Name:                   func() (tool.Tool, error) { return exitlooptool.New(), nil },
		"load_artifacts":                    func() (tool.Tool, error) { return loadartifactstool.New() },
		"load_memory":                       func() (tool.Tool, error) { return loadmemorytool.New() },
		builtintool.GoogleSearchName:        func() (tool.Tool, error) { return builtintool.GoogleSearch(), nil },
		builtintool.URLContextName:          func() (tool.Tool, error) { return builtintool.URLContext(), nil },
		builtintool.GoogleMapsName:          func() (tool.Tool, error) { return builtintool.GoogleMaps(), nil },
		builtintool.EnterpriseWebSearchName: func() (tool.Tool, error) { return builtintool.EnterpriseWebSearch(), nil },
	}
})

func newWorkflowAgent(class string) func(*Spec) (agent.Agent, error) {
	return func(s *Spec) (agent.Agent, error) {
		subs, err := s.SubAgents()
		if err != nil {
			return nil, err
		}
		before, after, err := s.AgentCallbacks()
		if err != nil {
			return nil, err
		}
		cfg := workflowagent.Config{Name: s.Name(), Description: s.Description(), SubAgents: subs, BeforeAgent: before, AfterAgent: after}
		switch class {
		case "SequentialAgent":
			return workflowagent.NewSequential(cfg)
		case "ParallelAgent":
			return workflowagent.NewParallel(cfg)
		}
		lc := workflowagent.LoopConfig{Config: cfg}
		if _, err := s.Decode("max_iterations", &lc.MaxIterations); err != nil {
			return nil, err
		}
		return workflowagent.NewLoop(lc)
	}
}

func newLLM(s *Spec) (agent.Agent, error) {
	cfg := llmagent.Config{Name: s.Name(), Description: s.Description(), Instruction: s.n.str("instruction"), OutputKey: s.n.str("output_key")}
	var err error
	if cfg.Model, err = s.Model(); err != nil {
		return nil, err
	}
	if _, err := s.Decode("disallow_transfer_to_parent", &cfg.DisallowTransferToParent); err != nil {
		return nil, err
	}
	if _, err := s.Decode("disallow_transfer_to_peers", &cfg.DisallowTransferToPeers); err != nil {
		return nil, err
	}
	if s.n.str("include_contents") == "none" {
		cfg.IncludeContents = llmagent.IncludeNone
	}
	if n, ok := s.n.get("output_schema"); ok {
		name := n.str("name")
		sch, ok := lookup(s.l.opts.Registry, func(r *Registry) map[string]*jsonschema.Schema { return r.schemas }, nil, name)
		if !ok {
			return nil, n.errorf("%v", errNotRegistered("schema", name, names(s.l.opts.Registry, func(r *Registry) map[string]*jsonschema.Schema { return r.schemas }, nil)))
		}
		cfg.OutputSchema = sch
	}
	if n, ok := s.n.get("generate_content_config"); ok {
		if cfg.GenerateConfig, err = generateConfig(n); err != nil {
			return nil, err
		}
	}
	if cfg.Tools, cfg.Toolsets, err = s.Tools(); err != nil {
		return nil, err
	}
	if cfg.SubAgents, err = s.SubAgents(); err != nil {
		return nil, err
	}
	if cfg.BeforeAgent, cfg.AfterAgent, err = s.AgentCallbacks(); err != nil {
		return nil, err
	}
	if cfg.BeforeModel, err = callbacks[agent.BeforeModelCallback](s, "before_model_callbacks"); err != nil {
		return nil, err
	}
	if cfg.AfterModel, err = callbacks[agent.AfterModelCallback](s, "after_model_callbacks"); err != nil {
		return nil, err
	}
	if cfg.BeforeTool, err = callbacks[agent.BeforeToolCallback](s, "before_tool_callbacks"); err != nil {
		return nil, err
	}
	if cfg.AfterTool, err = callbacks[agent.AfterToolCallback](s, "after_tool_callbacks"); err != nil {
		return nil, err
	}
	return llmagent.New(cfg)
}

// reservedGenerate are keys of generate_content_config that the agent's
// own keys set.
var reservedGenerate = map[string]string{
	"systemInstruction":  "instruction",
	"tools":              "tools",
	"responseSchema":     "output_schema",
	"responseJsonSchema": "output_schema",
}

// generateConfig decodes generate_content_config, whose keys may be
// written in snake_case (as in ADK's files) or camelCase. Unknown keys are
// an error.
func generateConfig(n node) (*genai.GenerateContentConfig, error) {
	for k := range n.pairs() {
		if use, ok := reservedGenerate[event.CamelCase(k.n.Value)]; ok {
			return nil, k.errorf("is set by the agent's %s key, not in generate_content_config", use)
		}
	}
	v, err := n.value()
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(camelKeys(v))
	if err != nil {
		return nil, n.errorf("%v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var cfg genai.GenerateContentConfig
	if err := dec.Decode(&cfg); err != nil {
		msg := err.Error()
		if field, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			field = strings.Trim(field, `"`)
			for k := range n.pairs() {
				if event.CamelCase(k.n.Value) == field {
					return nil, k.errorf("is not a key of generate_content_config")
				}
			}
		}
		return nil, n.errorf("%s", msg)
	}
	return &cfg, nil
}

// camelKeys converts the keys of every mapping in v to camelCase.
func camelKeys(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[event.CamelCase(k)] = camelKeys(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = camelKeys(val)
		}
		return out
	}
	return v
}

// mcpArgs are the args of an McpToolset entry (schema: McpToolsetArgs).
type mcpArgs struct {
	StdioServerParams     *stdioParams `yaml:"stdio_server_params"`
	StdioConnectionParams *struct {
		ServerParams stdioParams `yaml:"server_params"`
		Timeout      float64     `yaml:"timeout"`
	} `yaml:"stdio_connection_params"`
	StreamableHTTP *struct {
		URL              string            `yaml:"url"`
		Headers          map[string]string `yaml:"headers"`
		Timeout          float64           `yaml:"timeout"`
		SSEReadTimeout   float64           `yaml:"sse_read_timeout"`
		TerminateOnClose *bool             `yaml:"terminate_on_close"`
	} `yaml:"streamable_http_connection_params"`
	ToolFilter     []string `yaml:"tool_filter"`
	ToolNamePrefix string   `yaml:"tool_name_prefix"`
}

type stdioParams struct {
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	Cwd     string            `yaml:"cwd"`
}

func newMCP(t *ToolSpec) (tool.Tool, tool.Toolset, error) {
	var a mcpArgs
	if err := t.Decode(&a); err != nil {
		return nil, nil, err
	}
	cfg := mcptool.Config{ToolNames: a.ToolFilter, Stderr: t.spec.l.opts.Stderr}
	if a.ToolNamePrefix != "" {
		cfg.Name = a.ToolNamePrefix
		cfg.NamePrefix = a.ToolNamePrefix + "_"
	}
	n := 0
	stdio := a.StdioServerParams
	if stdio != nil {
		n++
	}
	if c := a.StdioConnectionParams; c != nil {
		n++
		stdio = &c.ServerParams
	}
	if h := a.StreamableHTTP; h != nil {
		n++
		cfg.URL, cfg.Headers = h.URL, h.Headers
		if h.SSEReadTimeout > 0 {
			cfg.CallTimeout = seconds(h.SSEReadTimeout)
		}
	}
	if n != 1 {
		return nil, nil, t.Errorf("", "set exactly one of stdio_server_params, stdio_connection_params and streamable_http_connection_params")
	}
	if stdio != nil {
		cfg.Command, cfg.Args = stdio.Command, stdio.Args
		for _, k := range slices.Sorted(maps.Keys(stdio.Env)) {
			cfg.Env = append(cfg.Env, k+"="+stdio.Env[k])
		}
		if cfg.Dir = stdio.Cwd; cfg.Dir != "" && !filepath.IsAbs(cfg.Dir) {
			cfg.Dir = filepath.Join(filepath.Dir(t.spec.File()), cfg.Dir)
		}
	}
	ts, err := mcptool.New(cfg)
	if err != nil {
		return nil, nil, t.Errorf("", "%v", err)
	}
	return nil, ts, nil
}

func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second))
}

func newAgentTool(t *ToolSpec) (tool.Tool, tool.Toolset, error) {
	var a struct {
		SkipSummarization bool `yaml:"skip_summarization"`
	}
	if n, ok := t.args.get("skip_summarization"); ok {
		if err := n.decode(&a.SkipSummarization); err != nil {
			return nil, nil, err
		}
	}
	ag, err := t.BuildAgent("agent")
	if err != nil {
		return nil, nil, err
	}
	at, err := agenttool.New(ag, &agenttool.Config{SkipSummarization: a.SkipSummarization})
	if err != nil {
		return nil, nil, t.Errorf("agent", "%v", err)
	}
	return at, nil, nil
}

// newExampleTool builds ADK's ExampleTool from its examples, each an
// input content and a list of output contents written as in ADK's files
// (snake_case or camelCase keys).
// newAdvisorTool builds tool/advisortool from its args: the advisor's
// model (and fallbacks) opened through Options.Model, the budgets, and
// optionally the function name, description and instruction.
func newAdvisorTool(t *ToolSpec) (tool.Tool, tool.Toolset, error) {
	var args struct {
		Model         string   `yaml:"model"`
		Fallbacks     []string `yaml:"fallback_models"`
		Name          string   `yaml:"name"`
		Description   string   `yaml:"description"`
		Instruction   string   `yaml:"instruction"`
		MaxPerTurn    int      `yaml:"max_per_turn"`
		MaxPerSession int      `yaml:"max_per_session"`
	}
	if err := t.Decode(&args); err != nil {
		return nil, nil, err
	}
	m, err := t.spec.l.chain(t.args, "model", args.Model, args.Fallbacks)
	if err != nil {
		return nil, nil, err
	}
	at, err := advisortool.New(advisortool.Config{Model: m, Name: args.Name, Description: args.Description,
		Instruction: args.Instruction, MaxPerTurn: args.MaxPerTurn, MaxPerSession: args.MaxPerSession})
	if err != nil {
		return nil, nil, t.Errorf("model", "%v", err)
	}
	return at, nil, nil
}

func newExampleTool(t *ToolSpec) (tool.Tool, tool.Toolset, error) {
	n, _ := t.args.get("examples")
	v, err := n.value()
	if err != nil {
		return nil, nil, err
	}
	data, err := json.Marshal(contentKeys(v, false))
	if err != nil {
		return nil, nil, n.errorf("%v", err)
	}
	var examples []exampletool.Example
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&examples); err != nil {
		return nil, nil, n.errorf("not a list of examples: %v", err)
	}
	return exampletool.New(examples), nil, nil
}

// contentKeys converts the keys of the mappings in v to camelCase, except
// inside a function call's args or a function response's response, whose
// keys are data.
func contentKeys(v any, data bool) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if data {
				out[k] = contentKeys(val, true)
				continue
			}
			out[event.CamelCase(k)] = contentKeys(val, k == "args" || k == "response")
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = contentKeys(val, data)
		}
		return out
	}
	return v
}

// newVertexAISearch builds ADK's VertexAiSearchTool: search grounding over
// one data store or one search engine.
func newVertexAISearch(t *ToolSpec) (tool.Tool, tool.Toolset, error) {
	var a struct {
		DataStore  string `yaml:"data_store_id"`
		Engine     string `yaml:"search_engine_id"`
		Filter     string `yaml:"filter"`
		MaxResults int32  `yaml:"max_results"`
	}
	if err := t.Decode(&a); err != nil {
		return nil, nil, err
	}
	vt, err := builtintool.VertexAISearch(a.DataStore, a.Engine, a.Filter, a.MaxResults)
	if err != nil {
		return nil, nil, t.Errorf("", "%v", err)
	}
	return vt, nil, nil
}

// longRunningNote is what ADK adds to a long-running function's
// description.
const longRunningNote = "NOTE: This is a long-running operation. Do not call this tool again if it has already returned some intermediate or pending status."

// newLongRunning builds ADK's LongRunningFunctionTool around a registered
// tool: the call pauses the invocation until its final result arrives.
func newLongRunning(t *ToolSpec) (tool.Tool, tool.Toolset, error) {
	var a struct {
		Func string `yaml:"func"`
	}
	if err := t.Decode(&a); err != nil {
		return nil, nil, err
	}
	reg := t.spec.l.opts.Registry
	fn, ok := lookup(reg, func(r *Registry) map[string]func() (tool.Tool, error) { return r.tools }, nil, a.Func)
	if !ok {
		return nil, nil, t.Errorf("func", "%v", errNotRegistered("tool", a.Func, names(reg, func(r *Registry) map[string]func() (tool.Tool, error) { return r.tools }, nil)))
	}
	inner, err := fn()
	if err != nil {
		return nil, nil, t.Errorf("func", "tool %s: %v", a.Func, err)
	}
	f, ok := inner.(tool.Function)
	if !ok {
		return nil, nil, t.Errorf("func", "tool %s is not a function and cannot be long-running", a.Func)
	}
	return longRunning{f}, nil, nil
}

// longRunning is a registered tool marked long-running, its description
// carrying ADK's note.
type longRunning struct{ tool.Function }

func (longRunning) IsLongRunning() bool { return true }

func (l longRunning) Description() string {
	if d := l.Function.Description(); d != "" {
		return d + "\n\n" + longRunningNote
	}
	return longRunningNote
}

func (l longRunning) Declaration() *genai.FunctionDeclaration {
	d := l.Function.Declaration()
	if d == nil {
		return nil
	}
	c := *d
	c.Description = l.Description()
	return &c
}

// skillToolsetArgs is the schema of the args of a SkillToolset entry, a
// Loom kind (ADK's files have none): skills_dir (required; relative to the
// file, inside the app's directory), max_active (default
// skilltool.DefaultMaxActive) and code_executor ("local": scripts run in
// codeexec.Local; absent: they do not run).
var skillToolsetArgs = &jsonschema.Schema{
	Type: "object",
	Properties: map[string]*jsonschema.Schema{
		"skills_dir":    {Type: "string", MinLength: new(1)},
		"max_active":    {Type: "integer", Minimum: new(1.0)},
		"code_executor": {Type: "string", Enum: []any{"local"}},
	},
	Required:             []string{"skills_dir"},
	AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
}

// skillToolsetArgsOf are the args of a SkillToolset entry.
type skillToolsetArgsOf struct {
	SkillsDir    string `yaml:"skills_dir"`
	MaxActive    int    `yaml:"max_active"`
	CodeExecutor string `yaml:"code_executor"`
}

func newSkillToolset(t *ToolSpec) (tool.Tool, tool.Toolset, error) {
	var a skillToolsetArgsOf
	if err := t.Decode(&a); err != nil {
		return nil, nil, err
	}
	if filepath.IsAbs(a.SkillsDir) || filepath.VolumeName(a.SkillsDir) != "" {
		return nil, nil, t.Errorf("skills_dir", "must be a path relative to %s", filepath.Base(t.spec.File()))
	}
	dir, err := t.spec.l.inside(filepath.Join(filepath.Dir(t.spec.File()), filepath.FromSlash(a.SkillsDir)))
	if err != nil {
		return nil, nil, t.Errorf("skills_dir", "%s %v", a.SkillsDir, err)
	}
	found, err := skilltool.DiscoverDir(dir)
	if err != nil {
		return nil, nil, t.Errorf("skills_dir", "%v", err)
	}
	cfg := skilltool.Config{Skills: found, MaxActive: a.MaxActive}
	if a.CodeExecutor == "local" {
		cfg.Executor = &codeexec.Local{}
	}
	ts, err := skilltool.New(cfg)
	if err != nil {
		return nil, nil, t.Errorf("skills_dir", "%v", err)
	}
	return nil, ts, nil
}
