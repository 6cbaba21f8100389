// Package llmagent provides the LLM agent: an agent that thinks with a model
// and acts with tools.
//
// On each step the agent builds a model request from its instruction (with
// {state} templating), its tools, and the conversation history of the
// session; calls the model; commits the model's response; runs the function
// calls of the response (concurrently, merged into one event in call order);
// commits their results; and repeats until the model gives a final answer,
// transfers to another agent, or a long-running tool pauses the invocation.
//
// The history is built incrementally: each step only converts the events
// committed since the previous step, so the cost of a turn does not grow with
// the length of the session beyond the model request itself.
package llmagent

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/codeexec"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/tool"
)

// IncludeContents selects which history the model receives.
type IncludeContents string

const (
	// IncludeDefault sends the relevant conversation history.
	IncludeDefault IncludeContents = ""
	// IncludeNone sends only the current turn: the latest user message and
	// what followed it.
	IncludeNone IncludeContents = "none"
)

// InstructionProvider computes an instruction at run time. Its result is
// used as is, without {state} templating.
type InstructionProvider func(ctx context.Context, cc *agent.CallbackContext) (string, error)

// Config configures an LLM agent. Name and Model are required.
type Config struct {
	Name        string
	Description string
	// Model answers the agent's requests.
	Model model.LLM
	// Instruction is the system instruction, templated by ADK's rules (see
	// InjectState): {key} (or {{key}}) is replaced by the state value of key
	// ({user:k}, {app:k}, {temp:k} too), {key?} by "" when missing,
	// {artifact.name} by the artifact's text; a name that is not an
	// identifier is left as written. A missing required key is an error.
	Instruction string
	// InstructionProvider, if set, computes the instruction instead.
	InstructionProvider InstructionProvider
	// GlobalInstruction, set on the root agent of a tree, is added to the
	// system instruction of every LLM agent in the tree, before the agent's
	// own instruction. It is templated like Instruction. On an agent that
	// is not the root it has no effect.
	GlobalInstruction string
	// StaticInstruction is sent as is (no templating) at the start of the
	// system instruction. With it set, the system instruction stays the
	// same from call to call, which lets providers cache it: the templated
	// Instruction then travels as a user content placed just before the
	// latest user turn, instead of in the system instruction.
	StaticInstruction *genai.Content
	// Tools and Toolsets are the tools the model may call.
	Tools    []tool.Tool
	Toolsets []tool.Toolset
	// SubAgents are agents this agent can transfer to.
	SubAgents []agent.Agent
	// DisallowTransferToParent and DisallowTransferToPeers restrict transfer.
	DisallowTransferToParent bool
	DisallowTransferToPeers  bool
	// DeclareTransferReason adds an optional transfer_reason string to the
	// declaration of transfer_to_agent, so that the model is asked why it
	// hands the conversation over. The transfer function accepts the
	// argument either way; it is off by default because ADK's declaration
	// has only agent_name, which recorded conversations pin.
	DeclareTransferReason bool
	// OutputKey, if set, stores the agent's final text (or, with an output
	// schema, the parsed JSON value) in this state key.
	OutputKey string
	// OutputSchema, if set, asks the model for JSON matching it and
	// validates the final answer. An agent with tools too, on a model that
	// cannot combine tools with a response schema (see
	// model.ToolsWithSchema), gets the answer through a final-answer tool,
	// set_model_response, whose arguments follow the schema; the agent then
	// ends with a model event holding the answer as JSON text.
	OutputSchema *jsonschema.Schema
	// IncludeContents selects the history sent to the model.
	IncludeContents IncludeContents
	// FenceRelayedText fences what other agents and their tools said, as
	// the history relays it to this agent's model, so that it cannot pose
	// as instructions (event.FenceContext). It changes the text the model
	// reads from ADK's ("For context:" and the relayed lines alone), so it
	// is off by default.
	FenceRelayedText bool
	// Planner, if set, plans the model's work: BuiltInPlanner turns on the
	// model's own thinking, PlanReActPlanner asks for a written plan.
	Planner Planner
	// KeepThoughts sends the thought parts of earlier turns back to the
	// model. By default an agent with a planner leaves them out: only the
	// current turn's thoughts (which some providers need during a tool
	// loop) are sent.
	KeepThoughts bool
	// CodeExecutor runs code the model writes. codeexec.BuiltIn adds the
	// provider's code execution tool to every request (Gemini runs the code
	// and returns executableCode and codeExecutionResult parts). Any other
	// executor runs here: the first ```tool_code (or ```python) block of a
	// model response is committed as an executableCode part and run; its
	// output is committed as a codeExecutionResult part, the files it wrote
	// are saved as artifacts, and the model is called again.
	CodeExecutor codeexec.Executor
	// CodeErrorRetries bounds the consecutive failed executions in one
	// invocation after which code blocks are no longer run (the response is
	// then kept as text). Zero means 2; negative means no retry.
	CodeErrorRetries int
	// MaxFileBytes bounds the size of an artifact the agent shows the model
	// as content (file data parts that refer to artifacts, see
	// artifact.URI); a larger one is replaced by a note saying so. Zero
	// means DefaultMaxFileBytes; negative means no limit.
	MaxFileBytes int64
	// MaxRequestFileBytes bounds the artifact bytes shown to the model in
	// one request, over all the file references of its history, so that
	// a history with many files does not load them all. The newest
	// references are shown first; one that no longer fits is replaced by
	// a note saying so. Zero means DefaultMaxRequestFileBytes; negative
	// means no limit.
	MaxRequestFileBytes int64
	// GenerateConfig holds sampling settings and other model parameters. It
	// is copied for every request.
	GenerateConfig *genai.GenerateContentConfig

	// The agent's callbacks run after the global ones (plugins), in
	// order; the first to return a value wins. A request that before-model
	// or model-error callbacks see has contents of its own, a copy of the
	// agent's model history: a callback may change them, in place or slot
	// by slot, for that one model call (and the call then costs time in
	// proportion to the history). See agent.Callbacks.ReadOnlyModelHooks.
	BeforeAgent  []agent.BeforeAgentCallback
	AfterAgent   []agent.AfterAgentCallback
	BeforeModel  []agent.BeforeModelCallback
	AfterModel   []agent.AfterModelCallback
	OnModelError []agent.OnModelErrorCallback
	BeforeTool   []agent.BeforeToolCallback
	AfterTool    []agent.AfterToolCallback
	OnToolError  []agent.OnToolErrorCallback
}

// Agent is an LLM agent. It is immutable and safe for concurrent use.
type Agent struct {
	cfg   Config
	tools map[string]tool.Tool
	// order names the tools in the order requests list them: the
	// runtime's own tool first, then the configured ones as given.
	order []string
	decls []*genai.FunctionDeclaration // of tools, in order
	// processors names the tools that are request processors, in order.
	processors []string
	schema     *jsonschema.Resolved
	body       func(context.Context, *agent.Invocation) iter.Seq2[*event.Event, error] // a.run, bound once
	// identity is the agent's identity instruction, and instructed the
	// instruction followed by it when the instruction has no placeholder
	// and no provider (else ""): both made once, not for every request.
	identity, instructed string

	histories sync.Map // historyKey → *history
}

var (
	_ agent.Agent          = (*Agent)(nil)
	_ agent.Parent         = (*Agent)(nil)
	_ agent.TransferPolicy = (*Agent)(nil)
)

// New returns an LLM agent.
func New(cfg Config) (*Agent, error) {
	if cfg.Name == "" {
		return nil, errors.New("llmagent: name is required")
	}
	if cfg.Model == nil {
		return nil, fmt.Errorf("llmagent: %s: model is required", cfg.Name)
	}
	a := &Agent{cfg: cfg, tools: map[string]tool.Tool{}}
	a.body = a.run
	a.identity = identityInstruction(a)
	if cfg.InstructionProvider == nil && !strings.Contains(cfg.Instruction, "{") {
		a.instructed = joinInstructions(cfg.Instruction, a.identity)
	}
	for _, t := range cfg.Tools {
		if t == nil {
			return nil, fmt.Errorf("llmagent: %s: nil tool", cfg.Name)
		}
		if _, dup := a.tools[t.Name()]; dup {
			return nil, fmt.Errorf("llmagent: %s: duplicate tool %q", cfg.Name, t.Name())
		}
		if t.Name() == transferToolName || t.Name() == SetModelResponseName {
			return nil, fmt.Errorf("llmagent: %s: tool name %q is reserved", cfg.Name, t.Name())
		}
		a.tools[t.Name()] = t
		a.order = append(a.order, t.Name())
	}
	if cfg.OutputSchema != nil {
		r, err := cfg.OutputSchema.Resolve(nil)
		if err != nil {
			return nil, fmt.Errorf("llmagent: %s: output schema: %w", cfg.Name, err)
		}
		a.schema = r
		if len(cfg.Tools)+len(cfg.Toolsets) > 0 && !combinesToolsAndSchema(cfg.Model) {
			a.tools[SetModelResponseName] = newSetModelResponseTool(cfg.OutputSchema, r)
			a.order = append([]string{SetModelResponseName}, a.order...)
		}
	}
	a.decls = declarations(a.tools, a.order)
	a.processors = requestProcessors(a.tools, a.order)
	return a, nil
}

// Name implements agent.Agent.
func (a *Agent) Name() string { return a.cfg.Name }

// Description implements agent.Agent.
func (a *Agent) Description() string { return a.cfg.Description }

// SubAgents implements agent.Parent.
func (a *Agent) SubAgents() []agent.Agent { return a.cfg.SubAgents }

// DisallowTransferToParent implements agent.TransferPolicy.
func (a *Agent) DisallowTransferToParent() bool { return a.cfg.DisallowTransferToParent }

// Model returns the agent's model.
func (a *Agent) Model() model.LLM { return a.cfg.Model }

// Tools returns the agent's tools (not including toolsets).
func (a *Agent) Tools() []tool.Tool { return a.cfg.Tools }

// Toolsets returns the agent's toolsets.
func (a *Agent) Toolsets() []tool.Toolset { return a.cfg.Toolsets }

// Run implements agent.Agent.
func (a *Agent) Run(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
	return agent.RunWithCallbacks(ctx, inv, a.cfg.BeforeAgent, a.cfg.AfterAgent, a.body)
}
