// Package tool defines the tools an LLM agent can call and the context a
// tool runs in.
//
// A [Tool] declares itself to the model with a genai function declaration
// and runs with the model's arguments. Its [Context] gives it the
// function-call id, the session state (reads see uncommitted writes of the
// same invocation; writes are staged into the state delta of the tool's
// response event and become durable when that event is committed), artifacts,
// memory search, and the event actions it may set (skip summarization,
// escalate, transfer).
//
// Ready-made tools live in sub-packages: functiontool turns a Go function into
// a tool, agenttool runs an agent as a tool.
package tool

import (
	"context"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/model"
)

// Tool is anything an LLM agent can hold in its tools: a function the
// model calls (Function), a tool that only changes the agent's model
// requests (RequestProcessor, such as a provider's built-in search), or
// both. Implementations must be safe for concurrent use: the calls of one
// model response run concurrently.
type Tool interface {
	// Name is the function name the model calls, or the name a
	// request-only tool is known by.
	Name() string
	// Description tells the model what the tool does.
	Description() string
}

// Function is a tool the model calls as a function: its declaration is
// sent with every request of the agent that has it, and the runtime runs
// it for each of the model's calls to its name.
type Function interface {
	Tool
	// Declaration returns the function declaration sent to the model.
	Declaration() *genai.FunctionDeclaration
	// Run executes the tool. args are the call's own (a copy of the
	// model's), for the tool to use as it likes. The result becomes the
	// function response, committed as it is: the tool hands it over and
	// does not change it afterwards. An error becomes an error function
	// response the model can read.
	Run(ctx context.Context, tc Context, args map[string]any) (map[string]any, error)
}

// MediaTool is implemented by tools whose responses can carry media
// (images, audio, documents) besides the JSON object. The LLM agent calls
// RunMedia instead of Run: the parts go into the function response's Parts
// (genai.FunctionResponse.Parts), are stored with the event, and reach the
// model as each adapter supports it (see the model adapters' docs). Run
// stays the plain form for callers that only read JSON.
type MediaTool interface {
	Function
	RunMedia(ctx context.Context, tc Context, args map[string]any) (map[string]any, []*genai.FunctionResponsePart, error)
}

// LongRunning is implemented by tools whose work continues after Run
// returns: their call ids are listed in the event's long-running tool ids and
// the invocation pauses until a client sends the final function response.
type LongRunning interface {
	Function
	IsLongRunning() bool
}

// Confirmable is implemented by tools that need a person's approval before
// some or all of their calls run. When ConfirmationRequired reports true, the
// runtime does not run the call: it asks the client with an
// adk_request_confirmation function call and pauses the invocation; the
// call runs only after an approval, and a rejection answers the model with
// an error. Tools can also ask from inside Run with
// Context.RequestConfirmation.
type Confirmable interface {
	Function
	// ConfirmationRequired reports whether this call needs approval, and
	// the hint shown to the person.
	ConfirmationRequired(ctx context.Context, args map[string]any) (required bool, hint string)
}

// RequestProcessor is implemented by tools that change the model request
// of the agent that has them, before every model call: a provider's
// built-in tool adds itself to the request's tools, a memory tool adds what
// it recalls to the instruction. A tool that is only a request processor
// implements no Function: the model never sees it as a function. The request and its config belong to the
// call, but the contents it holds are the agent's model history, shared
// with later calls: a processor adds contents to req.Contents, or replaces
// the slice, and does not change the contents it finds. Processors run in
// tool-name order, after the request is built and before the before-model
// callbacks. An error fails the model call.
type RequestProcessor interface {
	Tool
	ProcessRequest(ctx context.Context, tc Context, req *model.Request) error
}

// Toolset provides tools that are only known at run time, such as the tools
// of an MCP server.
type Toolset interface {
	// Name identifies the toolset.
	Name() string
	// Tools lists the toolset's tools for the current invocation.
	Tools(ctx context.Context) ([]Tool, error)
}

// State is session state as seen from a callback or tool. Reads see the
// committed state and the uncommitted writes of the current invocation;
// writes are staged into the next event the context emits.
type State interface {
	// Get returns the value of a key (with its prefix, e.g. "user:name").
	Get(key string) (any, bool)
	// Set stages a value; a nil value removes the key when committed.
	Set(key string, value any)
}

// Context is what a tool sees of the invocation it runs in.
type Context interface {
	// FunctionCallID is the id of the function call being answered.
	FunctionCallID() string
	// InvocationID identifies the current invocation.
	InvocationID() string
	// AgentName is the name of the agent that called the tool.
	AgentName() string
	// AppName, UserID and SessionID identify the session.
	AppName() string
	UserID() string
	SessionID() string
	// UserContent is the user message that started the invocation.
	UserContent() *genai.Content
	// State gives access to session state.
	State() State
	// Actions returns the actions of the tool's response event, which the
	// tool may set (SkipSummarization, Escalate, TransferToAgent, ...).
	Actions() *event.Actions
	// SaveArtifact saves a new version of an artifact and records it in the
	// response event's artifact delta.
	SaveArtifact(ctx context.Context, name string, part *genai.Part) (int64, error)
	// LoadArtifact loads a version of an artifact (artifact.Latest for the
	// newest).
	LoadArtifact(ctx context.Context, name string, version int64) (*genai.Part, error)
	// ListArtifacts lists the names of the session's artifacts.
	ListArtifacts(ctx context.Context) ([]string, error)
	// SearchMemory searches the user's long-term memory.
	SearchMemory(ctx context.Context, query string) ([]memory.Entry, error)
	// RequestConfirmation asks a person to approve this call. The tool
	// should return right after it: its result (or, if it returns none,
	// an error saying the call awaits approval) answers the call for now,
	// the client is asked, and the call runs again once approved (then
	// ToolConfirmation returns the answer); the model sees only the final
	// response.
	RequestConfirmation(hint string, payload any)
	// ToolConfirmation returns the person's answer when the call runs after
	// a confirmation, or nil.
	ToolConfirmation() *event.ToolConfirmation
	// RequestCredential asks the client for credentials described by
	// authConfig (for example an OAuth2 or API-key scheme). Like
	// RequestConfirmation, the tool should return right after it; the call
	// runs again once the client has answered, and Credential returns the
	// answer. Credentials are kept in memory for that run only and never
	// written to the session log. For OAuth2, credential/oauth.Token asks,
	// exchanges the answer and keeps the user's tokens.
	RequestCredential(authConfig map[string]any)
	// Credential returns the client's answer to the call's credential
	// request when the call runs after one, or nil.
	Credential() map[string]any
}
