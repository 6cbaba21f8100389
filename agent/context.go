package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"google.golang.org/genai"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/credential"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/tool"
)

// ErrNoService is returned by context methods whose service is not configured.
var ErrNoService = errors.New("agent: service not configured")

// CallbackContext is what callbacks and tools see of the invocation. State
// writes and artifact saves made through it are recorded at once (later
// reads in the invocation see them) and staged into the actions of the next
// event it produces; they become durable when that event is committed.
//
// A CallbackContext for a tool also carries the function-call id; it
// implements tool.Context. It is safe for concurrent use.
type CallbackContext struct {
	inv          *Invocation
	callID       string
	confirmation *event.ToolConfirmation
	credential   map[string]any

	mu      sync.Mutex
	actions event.Actions
}

var _ tool.Context = (*CallbackContext)(nil)

// NewCallbackContext returns a context for callbacks of the invocation's
// current agent.
func NewCallbackContext(inv *Invocation) *CallbackContext {
	return &CallbackContext{inv: inv}
}

// NewToolContext returns a context for a tool answering the given function
// call.
func NewToolContext(inv *Invocation, functionCallID string) *CallbackContext {
	return &CallbackContext{inv: inv, callID: functionCallID}
}

// ToolResume is what a tool call carries when it runs again after a request
// to the client: the person's confirmation answer, or the credential the
// client supplied.
type ToolResume struct {
	Confirmation *event.ToolConfirmation
	Credential   map[string]any
}

// NewResumedToolContext returns a context for a tool answering the given
// function call after the client answered the call's confirmation or
// credential request.
func NewResumedToolContext(inv *Invocation, functionCallID string, r ToolResume) *CallbackContext {
	return &CallbackContext{inv: inv, callID: functionCallID, confirmation: r.Confirmation, credential: r.Credential}
}

// Invocation returns the invocation.
func (c *CallbackContext) Invocation() *Invocation { return c.inv }

// FunctionCallID returns the function-call id ("" outside tools).
func (c *CallbackContext) FunctionCallID() string { return c.callID }

// InvocationID returns the invocation id.
func (c *CallbackContext) InvocationID() string { return c.inv.ID() }

// AgentName returns the name of the current agent.
func (c *CallbackContext) AgentName() string { return c.inv.Agent().Name() }

// AppName returns the session's app.
func (c *CallbackContext) AppName() string { return c.inv.Session().AppName() }

// UserID returns the session's user.
func (c *CallbackContext) UserID() string { return c.inv.Session().UserID() }

// SessionID returns the session id.
func (c *CallbackContext) SessionID() string { return c.inv.Session().ID() }

// UserContent returns the user message of the invocation.
func (c *CallbackContext) UserContent() *genai.Content { return c.inv.UserContent() }

// State returns the session state as this context sees it.
func (c *CallbackContext) State() tool.State { return contextState{c} }

type contextState struct{ c *CallbackContext }

func (s contextState) Get(key string) (any, bool) { return s.c.inv.Session().Get(key) }

func (s contextState) Set(key string, value any) {
	s.c.mu.Lock()
	if s.c.actions.StateDelta == nil {
		s.c.actions.StateDelta = map[string]any{}
	}
	s.c.actions.StateDelta[key] = event.CloneValue(value)
	s.c.mu.Unlock()
	s.c.inv.Session().SetLocal(key, value)
}

// Actions returns the staged actions, which the caller may modify.
func (c *CallbackContext) Actions() *event.Actions { return &c.actions }

// HasActions reports whether anything has been staged.
func (c *CallbackContext) HasActions() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.actions.IsZero()
}

// TakeActions returns the staged actions and clears them, so that they are
// committed with exactly one event.
func (c *CallbackContext) TakeActions() event.Actions {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.actions
	c.actions = event.Actions{}
	return a
}

// Event returns a new event of the current agent carrying the staged
// actions, which are cleared.
func (c *CallbackContext) Event() *event.Event {
	e := c.inv.NewEvent()
	e.Actions = c.TakeActions()
	return e
}

func (c *CallbackContext) ref(name string) artifact.Ref {
	s := c.inv.Session()
	return artifact.Ref{AppName: s.AppName(), UserID: s.UserID(), SessionID: s.ID(), Name: name}
}

// SaveArtifact saves a new version of an artifact and records it in the
// staged artifact delta. The version is part of the commit of the event that
// carries the delta: if that event is not committed, the runner deletes the
// version (see PendingArtifacts).
func (c *CallbackContext) SaveArtifact(ctx context.Context, name string, part *genai.Part) (int64, error) {
	svc := c.inv.Artifacts()
	if svc == nil {
		return 0, fmt.Errorf("save artifact %q: %w", name, ErrNoService)
	}
	ref := c.ref(name)
	v, err := svc.Save(ctx, ref, part)
	if err != nil {
		return 0, err
	}
	c.inv.shared.cfg.PendingArtifacts.Saved(ref, v)
	c.mu.Lock()
	if c.actions.ArtifactDelta == nil {
		c.actions.ArtifactDelta = map[string]int64{}
	}
	c.actions.ArtifactDelta[name] = v
	c.mu.Unlock()
	return v, nil
}

// LoadArtifact loads a version of an artifact (artifact.Latest for newest).
func (c *CallbackContext) LoadArtifact(ctx context.Context, name string, version int64) (*genai.Part, error) {
	svc := c.inv.Artifacts()
	if svc == nil {
		return nil, fmt.Errorf("load artifact %q: %w", name, ErrNoService)
	}
	return svc.Load(ctx, c.ref(name), version)
}

// ListArtifacts lists the session's artifact names.
func (c *CallbackContext) ListArtifacts(ctx context.Context) ([]string, error) {
	svc := c.inv.Artifacts()
	if svc == nil {
		return nil, fmt.Errorf("list artifacts: %w", ErrNoService)
	}
	s := c.inv.Session()
	return svc.List(ctx, s.AppName(), s.UserID(), s.ID())
}

// SearchMemory searches the user's long-term memory.
func (c *CallbackContext) SearchMemory(ctx context.Context, query string) ([]memory.Entry, error) {
	svc := c.inv.Memory()
	if svc == nil {
		return nil, fmt.Errorf("search memory: %w", ErrNoService)
	}
	s := c.inv.Session()
	return svc.Search(ctx, s.AppName(), s.UserID(), query, nil)
}

// RequestConfirmation asks a person to approve the current tool call; it is
// recorded in the staged actions' RequestedToolConfirmations.
func (c *CallbackContext) RequestConfirmation(hint string, payload any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.actions.RequestedToolConfirmations == nil {
		c.actions.RequestedToolConfirmations = map[string]event.ToolConfirmation{}
	}
	c.actions.RequestedToolConfirmations[c.callID] = event.ToolConfirmation{Hint: hint, Payload: payload}
}

// ToolConfirmation returns the answer to the call's confirmation request,
// when the call runs after one; otherwise nil.
func (c *CallbackContext) ToolConfirmation() *event.ToolConfirmation { return c.confirmation }

// ConfirmationRequested reports whether the tool asked for a confirmation.
func (c *CallbackContext) ConfirmationRequested() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.actions.RequestedToolConfirmations[c.callID]
	return ok
}

// RequestCredential asks the client for credentials for the current tool
// call; it is recorded in the staged actions' RequestedAuthConfigs.
func (c *CallbackContext) RequestCredential(authConfig map[string]any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.actions.RequestedAuthConfigs == nil {
		c.actions.RequestedAuthConfigs = map[string]any{}
	}
	c.actions.RequestedAuthConfigs[c.callID] = event.CloneMap(authConfig)
}

// Credential returns the client's answer to the call's credential request,
// when the call runs after one; otherwise nil.
func (c *CallbackContext) Credential() map[string]any { return c.credential }

// CredentialService returns the runtime's service keeping users'
// credentials (see credential/oauth), or nil if none is configured.
func (c *CallbackContext) CredentialService() *credential.Service {
	return c.inv.CredentialService()
}

// CredentialRequested reports whether the tool asked for credentials.
func (c *CallbackContext) CredentialRequested() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.actions.RequestedAuthConfigs[c.callID]
	return ok
}
