// Package task lets an LLM agent delegate a task to another agent with
// structured input and get structured output back, in ADK's two modes:
//
//   - [SingleTurn]: the delegate runs once on the input, in a child session,
//     and its answer (JSON, when the delegate has an output schema) comes
//     back as the tool's result, like controlled output.
//   - [MultiTurn] (task mode): the coordinator's call hands the
//     conversation to the delegate, which talks with the user for as many
//     turns as it needs (asking for what it lacks, pausing on its own
//     long-running tools or confirmations) until it calls the finish_task
//     tool ([NewFinishTool]) with its output; the conversation then goes
//     back to the coordinator, whose history holds that output as the
//     finish_task response, and the output is in session state under
//     [OutputKey].
//
// The coordinator gets the delegate as a tool ([NewTool]) named after it,
// whose parameters are the task's input schema ({"goal", "background"} by
// default). In multi-turn mode the delegate must also be a sub-agent of the
// coordinator, so that the conversation can go to it and come back.
//
// A delegate is an ordinary agent: as a node of a graph workflow
// (graph.FromAgent), an agent that ends with a finish_task call outputs
// that call's arguments.
package task

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/agenttool"
)

// FinishTaskName is the name of the tool a delegate calls to finish a
// multi-turn task, ADK's name.
const FinishTaskName = "finish_task"

// Mode is how a task is delegated.
type Mode uint8

// The delegation modes.
const (
	// SingleTurn runs the delegate once and returns its answer.
	SingleTurn Mode = iota + 1
	// MultiTurn hands the conversation to the delegate until it finishes.
	MultiTurn
)

// ErrInvalidConfig is returned for a malformed configuration.
var ErrInvalidConfig = errors.New("task: invalid configuration")

// Config configures a task tool.
type Config struct {
	// Mode is SingleTurn or MultiTurn (zero means SingleTurn).
	Mode Mode
	// InputSchema is the schema of the task's input, the tool's parameters;
	// nil means {"goal": string, "background": string}.
	InputSchema *jsonschema.Schema
	// Description tells the coordinator's model what the delegate does; the
	// delegate's description when empty.
	Description string
}

// InputKey is the session state key under which a multi-turn task's input
// is kept while the delegate works on it (a delegate's instruction may use
// it: "{task_researcher_input?}").
func InputKey(delegate string) string { return "task_" + delegate + "_input" }

// OutputKey is the session state key that holds a finished task's output.
func OutputKey(delegate string) string { return "task_" + delegate + "_output" }

// requesterKey is the state key naming the agent that asked for the task.
func requesterKey(delegate string) string { return "task_" + delegate + "_requester" }

var defaultInput = &jsonschema.Schema{
	Type: "object",
	Properties: map[string]*jsonschema.Schema{
		"goal":       {Type: "string", Description: "The goal or objective of the task."},
		"background": {Type: "string", Description: "Background the agent needs for the task."},
	},
	Required: []string{"goal"},
}

var defaultOutput = &jsonschema.Schema{
	Type: "object",
	Properties: map[string]*jsonschema.Schema{
		"result": {Type: "string", Description: "A brief summary of what was accomplished."},
	},
	Required: []string{"result"},
}

// Tool delegates a task to an agent. Create it with NewTool.
type Tool struct {
	delegate agent.Agent
	cfg      Config
	schema   *jsonschema.Resolved
	single   *agenttool.Tool
}

var _ tool.Function = (*Tool)(nil)

// NewTool returns the tool with which a coordinator delegates tasks to
// delegate.
func NewTool(delegate agent.Agent, cfg Config) (*Tool, error) {
	if delegate == nil {
		return nil, fmt.Errorf("%w: nil delegate", ErrInvalidConfig)
	}
	if cfg.Mode == 0 {
		cfg.Mode = SingleTurn
	}
	if cfg.Mode != SingleTurn && cfg.Mode != MultiTurn {
		return nil, fmt.Errorf("%w: unknown mode %d", ErrInvalidConfig, cfg.Mode)
	}
	if cfg.InputSchema == nil {
		cfg.InputSchema = defaultInput
	}
	resolved, err := cfg.InputSchema.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("%w: input schema: %w", ErrInvalidConfig, err)
	}
	t := &Tool{delegate: delegate, cfg: cfg, schema: resolved}
	if cfg.Mode == SingleTurn {
		if t.single, err = agenttool.New(delegate, nil); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Name implements tool.Tool: the delegate's name.
func (t *Tool) Name() string { return t.delegate.Name() }

// Description implements tool.Tool.
func (t *Tool) Description() string {
	d := t.cfg.Description
	if d == "" {
		d = t.delegate.Description()
	}
	if t.cfg.Mode == MultiTurn {
		return fmt.Sprintf("Delegates a task to the %s agent, which works on it with the user until it is done. %s", t.delegate.Name(), d)
	}
	return fmt.Sprintf("Delegates a task to the %s agent and returns its result. %s", t.delegate.Name(), d)
}

// Declaration implements tool.Function: the input schema as parameters.
func (t *Tool) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{Name: t.Name(), Description: t.Description(), ParametersJsonSchema: t.cfg.InputSchema}
}

// Run implements tool.Function.
func (t *Tool) Run(ctx context.Context, tc tool.Context, args map[string]any) (map[string]any, error) {
	if err := t.schema.Validate(args); err != nil {
		return nil, fmt.Errorf("task %s: input does not match the schema: %w", t.Name(), err)
	}
	if t.cfg.Mode == MultiTurn {
		tc.State().Set(InputKey(t.Name()), args)
		tc.State().Set(requesterKey(t.Name()), tc.AgentName())
		tc.State().Set(OutputKey(t.Name()), nil)
		tc.Actions().TransferToAgent = t.Name()
		return map[string]any{"status": "delegated", "agent": t.Name()}, nil
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", t.Name(), err)
	}
	res, err := t.single.Run(ctx, tc, map[string]any{"request": string(b)})
	if err != nil {
		return nil, err
	}
	text, _ := res["result"].(string)
	var out any = text
	var v any
	if json.Unmarshal([]byte(text), &v) == nil {
		out = v // the delegate answered in JSON (an output schema)
	}
	tc.State().Set(OutputKey(t.Name()), out)
	return map[string]any{"output": out}, nil
}

// FinishTool is the tool a delegate calls to finish a multi-turn task.
// Create it with NewFinishTool.
type FinishTool struct {
	schema   *jsonschema.Schema
	resolved *jsonschema.Resolved
}

var _ tool.Function = (*FinishTool)(nil)

// NewFinishTool returns the finish_task tool; its parameters are the task's
// output schema (nil: {"result": string}).
func NewFinishTool(output *jsonschema.Schema) (*FinishTool, error) {
	if output == nil {
		output = defaultOutput
	}
	r, err := output.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("%w: output schema: %w", ErrInvalidConfig, err)
	}
	return &FinishTool{schema: output, resolved: r}, nil
}

// Name implements tool.Tool.
func (f *FinishTool) Name() string { return FinishTaskName }

// Description implements tool.Tool.
func (f *FinishTool) Description() string {
	return "Finishes the task you were given, with its result; call it once the task is done."
}

// Declaration implements tool.Function.
func (f *FinishTool) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{Name: FinishTaskName, Description: f.Description(), ParametersJsonSchema: f.schema}
}

// Run implements tool.Function: it checks the output against the schema,
// records it in state, clears the task's input and hands the conversation
// back to the agent that asked for the task.
func (f *FinishTool) Run(_ context.Context, tc tool.Context, args map[string]any) (map[string]any, error) {
	if err := f.resolved.Validate(args); err != nil {
		return nil, fmt.Errorf("finish_task: the output does not match the schema: %w", err)
	}
	name := tc.AgentName()
	tc.State().Set(OutputKey(name), args)
	tc.State().Set(InputKey(name), nil)
	if req, ok := tc.State().Get(requesterKey(name)); ok {
		if r, _ := req.(string); r != "" {
			tc.Actions().TransferToAgent = r
		}
		tc.State().Set(requesterKey(name), nil)
	}
	return map[string]any{"result": "task finished", "output": args}, nil
}
