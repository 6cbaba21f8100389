package skilltool

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/genai"

	"github.com/loomkit/loom/codeexec"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/tool"
)

// The tools' names.
const (
	ListName     = "list_skills"
	LoadName     = "load_skill"
	UnloadName   = "unload_skill"
	ResourceName = "load_skill_resource"
	ScriptName   = "execute_skill_script"
)

// ActiveStateKey is the session state key listing the active skills'
// names, oldest first.
const ActiveStateKey = "_loom_active_skills"

// DefaultMaxActive is the default of Config.MaxActive.
const DefaultMaxActive = 3

// SpanLoad and SpanUnload name the spans of skill loads and unloads,
// followed by a space and the skill's name.
const (
	SpanLoad   = "load_skill"
	SpanUnload = "unload_skill"
)

// SystemInstruction is the instruction ADK adds, before the list of
// skills, to every request of an agent with skills.
const SystemInstruction = `You can use specialized 'skills' to help you with complex tasks. You MUST use the skill tools to interact with these skills.

Skills are folders of instructions and resources that extend your capabilities for specialized tasks. Each skill folder contains:
- **SKILL.md** (required): The main instruction file with skill metadata and detailed markdown instructions.
- **references/** (Optional): Additional documentation or examples for skill usage.
- **assets/** (Optional): Templates, scripts or other resources used by the skill.
- **scripts/** (Optional): Executable scripts that can be run via bash.

This is very important:

1. If a skill seems relevant to the current user query, you MUST use the ` + "`load_skill`" + ` tool with ` + "`name=\"<SKILL_NAME>\"`" + ` to read its full instructions before proceeding.
2. Once you have read the instructions, follow them exactly as documented before replying to the user. For example, If the instruction lists multiple steps, please make sure you complete all of them in order.
3. The ` + "`load_skill_resource`" + ` tool is for viewing files within a skill's directory (e.g., ` + "`references/*`, `assets/*`, `scripts/*`" + `). Do NOT use other tools to access these files.
4. Use ` + "`execute_skill_script`" + ` to run scripts from a skill's ` + "`scripts/`" + ` directory. Use ` + "`load_skill_resource`" + ` to view script content first if needed.
`

// Config configures a Toolset.
type Config struct {
	// Name names the toolset (default "skills").
	Name string
	// Skills are the skills offered. Their names must differ.
	Skills []*Skill
	// Executor runs the scripts of execute_skill_script, as Python (a
	// shell script runs under bash from Python). Without one, the tool
	// answers that scripts cannot run: they never run directly.
	Executor codeexec.Executor
	// MaxActive bounds the skills active at once in a session (default
	// DefaultMaxActive): loading one more unloads the oldest.
	MaxActive int
	// TracerProvider receives a span per skill load and unload (SpanLoad,
	// SpanUnload), children of the span in the tool call's context.
	// Default: none.
	TracerProvider trace.TracerProvider
}

// Toolset is the skill tools of a set of skills. It is a tool.Toolset
// (give it to an LLM agent's Toolsets) and safe for concurrent use.
type Toolset struct {
	cfg    Config
	byName map[string]*Skill
	tools  []tool.Tool
	tracer trace.Tracer
}

// New returns the toolset of cfg.
func New(cfg Config) (*Toolset, error) {
	if cfg.Name == "" {
		cfg.Name = "skills"
	}
	if cfg.MaxActive <= 0 {
		cfg.MaxActive = DefaultMaxActive
	}
	tp := cfg.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	ts := &Toolset{cfg: cfg, byName: map[string]*Skill{}, tracer: tp.Tracer("github.com/loomkit/loom/tool/skilltool")}
	for _, s := range cfg.Skills {
		if s == nil {
			return nil, fmt.Errorf("skilltool: a nil skill")
		}
		if _, dup := ts.byName[s.Name]; dup {
			return nil, fmt.Errorf("skilltool: duplicate skill name %q", s.Name)
		}
		ts.byName[s.Name] = s
	}
	ts.tools = []tool.Tool{
		&skillTool{ts: ts, name: ListName, desc: "Lists all available skills with their names and descriptions.",
			params: map[string]any{"type": "object", "properties": map[string]any{}}, run: ts.list},
		&skillTool{ts: ts, name: LoadName, desc: "Loads the SKILL.md instructions for a given skill.",
			params: object(map[string]any{"name": str("The name of the skill to load.")}, "name"), run: ts.load},
		&skillTool{ts: ts, name: UnloadName, desc: "Unloads a skill whose task is done, taking its instructions out of the context.",
			params: object(map[string]any{"name": str("The name of the skill to unload.")}, "name"), run: ts.unload},
		&skillTool{ts: ts, name: ResourceName, desc: "Loads a resource file (from references/, assets/, or scripts/) from within a skill.",
			params: object(map[string]any{
				"skill_name": str("The name of the skill."),
				"path":       str("The relative path to the resource (e.g., 'references/my_doc.md', 'assets/template.txt', or 'scripts/setup.sh')."),
			}, "skill_name", "path"), run: ts.resource},
		&skillTool{ts: ts, name: ScriptName, desc: "Executes a script from a skill's scripts/ directory and returns its output.",
			params: object(map[string]any{
				"skill_name":  str("The name of the skill."),
				"script_name": str("The name of the script to execute (e.g., 'setup.sh' or 'scripts/setup.sh')."),
				"input_args":  str("Optional space-separated arguments to pass to the script."),
			}, "skill_name", "script_name"), run: ts.script},
	}
	return ts, nil
}

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }

func object(props map[string]any, required ...string) map[string]any {
	return map[string]any{"type": "object", "properties": props, "required": required}
}

// Name implements tool.Toolset.
func (ts *Toolset) Name() string { return ts.cfg.Name }

// Tools implements tool.Toolset: the five skill tools.
func (ts *Toolset) Tools(context.Context) ([]tool.Tool, error) { return ts.tools, nil }

// Skills returns the toolset's skills, in the order given.
func (ts *Toolset) Skills() []*Skill { return slices.Clone(ts.cfg.Skills) }

// skillTool is one of the toolset's tools.
type skillTool struct {
	ts         *Toolset
	name, desc string
	params     map[string]any
	run        func(ctx context.Context, tc tool.Context, args map[string]any) map[string]any
}

func (t *skillTool) Name() string        { return t.name }
func (t *skillTool) Description() string { return t.desc }
func (t *skillTool) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{Name: t.name, Description: t.desc, ParametersJsonSchema: t.params}
}
func (t *skillTool) Run(ctx context.Context, tc tool.Context, args map[string]any) (map[string]any, error) {
	return t.run(ctx, tc, args), nil
}

// ProcessRequest implements tool.RequestProcessor for list_skills, once
// per request: it adds ADK's skill instruction and the list of skills to
// the system instruction, and takes unloaded skills' instructions out of
// the history.
func (t *skillTool) ProcessRequest(_ context.Context, tc tool.Context, req *model.Request) error {
	if t.name != ListName {
		return nil
	}
	req.AppendInstructions(SystemInstruction, skillsXML(t.ts.cfg.Skills))
	req.Contents = unloaded(req.Contents, active(tc))
	return nil
}

func failure(code, msg string) map[string]any {
	return map[string]any{"error": msg, "error_code": code}
}

func arg(args map[string]any, key string) string {
	s, _ := args[key].(string)
	return s
}

func (ts *Toolset) list(_ context.Context, _ tool.Context, _ map[string]any) map[string]any {
	// ADK's list_skills returns the XML text; a function response is an
	// object, and a text result is wrapped as {"result": text}.
	return map[string]any{"result": skillsXML(ts.cfg.Skills)}
}

func (ts *Toolset) load(ctx context.Context, tc tool.Context, args map[string]any) map[string]any {
	name := arg(args, "name")
	if name == "" {
		return failure("MISSING_SKILL_NAME", "Skill name is required.")
	}
	s := ts.byName[name]
	if s == nil {
		return failure("SKILL_NOT_FOUND", fmt.Sprintf("Skill '%s' not found.", name))
	}
	now := slices.DeleteFunc(active(tc), func(n string) bool { return n == name })
	now = append(now, name)
	var evicted []string
	if len(now) > ts.cfg.MaxActive {
		evicted = now[:len(now)-ts.cfg.MaxActive]
		now = now[len(now)-ts.cfg.MaxActive:]
	}
	_, span := ts.tracer.Start(ctx, SpanLoad+" "+name, trace.WithAttributes(
		attribute.String("loom.skill.name", name),
		attribute.StringSlice("loom.skill.unloaded", evicted),
		attribute.Int("loom.skill.active", len(now)),
		attribute.String("gen_ai.tool.call.id", tc.FunctionCallID()),
	))
	span.End()
	setActive(tc, now)
	return map[string]any{"skill_name": name, "instructions": s.Instructions, "frontmatter": s.frontmatter()}
}

func (ts *Toolset) unload(ctx context.Context, tc tool.Context, args map[string]any) map[string]any {
	name := arg(args, "name")
	if name == "" {
		return failure("MISSING_SKILL_NAME", "Skill name is required.")
	}
	if ts.byName[name] == nil {
		return failure("SKILL_NOT_FOUND", fmt.Sprintf("Skill '%s' not found.", name))
	}
	was := active(tc)
	if !slices.Contains(was, name) {
		return failure("SKILL_NOT_LOADED", fmt.Sprintf("Skill '%s' is not loaded.", name))
	}
	_, span := ts.tracer.Start(ctx, SpanUnload+" "+name, trace.WithAttributes(
		attribute.String("loom.skill.name", name),
		attribute.String("gen_ai.tool.call.id", tc.FunctionCallID()),
	))
	span.End()
	setActive(tc, slices.DeleteFunc(was, func(n string) bool { return n == name }))
	return map[string]any{"skill_name": name, "status": "unloaded"}
}

func (ts *Toolset) resource(_ context.Context, _ tool.Context, args map[string]any) map[string]any {
	name, p := arg(args, "skill_name"), arg(args, "path")
	if name == "" {
		return failure("MISSING_SKILL_NAME", "Skill name is required.")
	}
	if p == "" {
		return failure("MISSING_RESOURCE_PATH", "Resource path is required.")
	}
	s := ts.byName[name]
	if s == nil {
		return failure("SKILL_NOT_FOUND", fmt.Sprintf("Skill '%s' not found.", name))
	}
	if !strings.HasPrefix(p, "references/") && !strings.HasPrefix(p, "assets/") && !strings.HasPrefix(p, "scripts/") {
		return failure("INVALID_RESOURCE_PATH", "Path must start with 'references/', 'assets/', or 'scripts/'.")
	}
	b, err := s.Resource(p)
	if err != nil {
		return failure("RESOURCE_NOT_FOUND", fmt.Sprintf("Resource '%s' not found in skill '%s'.", p, name))
	}
	return map[string]any{"skill_name": name, "path": p, "content": string(b)}
}

func (ts *Toolset) script(ctx context.Context, _ tool.Context, args map[string]any) map[string]any {
	name, script, input := arg(args, "skill_name"), arg(args, "script_name"), arg(args, "input_args")
	if name == "" {
		return failure("MISSING_SKILL_NAME", "Skill name is required.")
	}
	if script == "" {
		return failure("MISSING_SCRIPT_NAME", "Script name is required.")
	}
	script = strings.TrimPrefix(script, "scripts/")
	s := ts.byName[name]
	if s == nil {
		return failure("SKILL_NOT_FOUND", fmt.Sprintf("Skill '%s' not found.", name))
	}
	src, err := s.Resource("scripts/" + script)
	if err != nil {
		return failure("SCRIPT_NOT_FOUND", fmt.Sprintf("Script '%s' not found in skill '%s'.", script, name))
	}
	if ts.cfg.Executor == nil {
		return failure("NO_CODE_EXECUTOR", "No code executor configured. A code executor is required to run scripts.")
	}
	code, ok := scriptCode(script, string(src), input)
	if !ok {
		return failure("UNSUPPORTED_SCRIPT_TYPE", fmt.Sprintf("Unsupported script type '%s'. Supported types: .py, .sh, .bash", path.Ext(script)))
	}
	res, err := ts.cfg.Executor.Execute(ctx, codeexec.Input{Code: code})
	if err != nil {
		msg := err.Error()
		if len(msg) > 200 {
			msg = msg[:200] + "..."
		}
		return failure("EXECUTION_ERROR", fmt.Sprintf("Failed to execute script '%s': %s", script, msg))
	}
	status := "success"
	if res.Stderr != "" || res.Failed {
		status = "error"
	}
	return map[string]any{"skill_name": name, "script_name": script, "stdout": res.Stdout, "stderr": res.Stderr, "status": status}
}

// scriptCode returns the Python program that runs a script with its
// arguments: a Python script as it is, with sys.argv set; a shell script
// under bash, its arguments passed as positional parameters (never
// through a shell's parsing of the command line).
func scriptCode(name, src, input string) (string, bool) {
	switch strings.ToLower(strings.TrimPrefix(path.Ext(name), ".")) {
	case "py", "":
		if input == "" {
			return src, true
		}
		return "import sys, shlex\nsys.argv = [" + pyStr(name) + "] + shlex.split(" + pyStr(input) + ")\n" + src, true
	case "sh", "bash":
		argv := ""
		if input != "" {
			argv = " + shlex.split(" + pyStr(input) + ")"
		}
		return "import subprocess, shlex\n" +
			"_result = subprocess.run(['bash', '-c', " + pyStr(src) + ", " + pyStr(name) + "]" + argv + ", capture_output=True, text=True, check=True)\n" +
			"print(_result.stdout, end='')\n", true
	}
	return "", false
}

// pyStr is s as a Python string literal.
func pyStr(s string) string {
	// Go's quoting of valid UTF-8 (\n, \", \\, \u and \U escapes) is
	// read by Python as the same text.
	return strconv.Quote(strings.ToValidUTF8(s, "\uFFFD"))
}

// active returns the names of the session's active skills, oldest first.
func active(tc tool.Context) []string {
	v, _ := tc.State().Get(ActiveStateKey)
	var out []string
	switch l := v.(type) {
	case []any:
		for _, e := range l {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
	case []string:
		out = slices.Clone(l)
	}
	return out
}

func setActive(tc tool.Context, names []string) {
	l := make([]any, len(names))
	for i, n := range names {
		l[i] = n
	}
	tc.State().Set(ActiveStateKey, l)
}

// unloaded returns contents with the load_skill responses of skills not
// active, and any but the latest of an active one, replaced by a note that
// the skill was unloaded. The contents are the agent's history: a content
// changed is a copy.
func unloaded(contents []*genai.Content, activeNames []string) []*genai.Content {
	latest := map[string]bool{}
	var out []*genai.Content
	for i := len(contents) - 1; i >= 0; i-- {
		c := contents[i]
		if c == nil {
			continue
		}
		var parts []*genai.Part
		for j, p := range c.Parts {
			if p == nil || p.FunctionResponse == nil || p.FunctionResponse.Name != LoadName {
				continue
			}
			name, _ := p.FunctionResponse.Response["skill_name"].(string)
			if _, ok := p.FunctionResponse.Response["instructions"]; !ok || name == "" {
				continue
			}
			if slices.Contains(activeNames, name) && !latest[name] {
				latest[name] = true
				continue
			}
			if parts == nil {
				parts = slices.Clone(c.Parts)
			}
			fr := *p.FunctionResponse
			fr.Response = map[string]any{"skill_name": name, "status": "unloaded"}
			parts[j] = &genai.Part{FunctionResponse: &fr}
		}
		if parts != nil {
			if out == nil {
				out = slices.Clone(contents)
			}
			out[i] = &genai.Content{Role: c.Role, Parts: parts}
		}
	}
	if out == nil {
		return contents
	}
	return out
}

// skillsXML lists skills as ADK does.
func skillsXML(skills []*Skill) string {
	if len(skills) == 0 {
		return "<available_skills>\n</available_skills>"
	}
	var b strings.Builder
	b.WriteString("<available_skills>")
	for _, s := range skills {
		b.WriteString("\n<skill>\n<name>\n" + htmlEscape(s.Name) + "\n</name>\n<description>\n" + htmlEscape(s.Description) + "\n</description>\n</skill>")
	}
	b.WriteString("\n</available_skills>")
	return b.String()
}

// htmlEscape escapes as Python's html.escape does.
var htmlEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#x27;").Replace
