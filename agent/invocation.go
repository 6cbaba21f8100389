package agent

import (
	"errors"
	"fmt"
	"sync/atomic"

	"google.golang.org/genai"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/credential"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/session"
)

// ErrLLMCallLimit is returned when an invocation exceeds its maximum number
// of model calls.
var ErrLLMCallLimit = errors.New("agent: maximum number of LLM calls per invocation exceeded")

// DefaultMaxLLMCalls is the per-invocation model call limit used when
// RunConfig.MaxLLMCalls is zero and the environment sets none (see
// MaxLLMCallsEnv).
const DefaultMaxLLMCalls = 500

// RunConfig holds the per-run settings of an invocation.
type RunConfig struct {
	// Streaming makes models stream: partial events are yielded as text
	// arrives, followed by one aggregated event.
	Streaming bool
	// MaxLLMCalls limits model calls per invocation, counted across every
	// run that resumes it (see InvocationConfig.LLMCalls): zero means
	// the limit of the environment (ResolveMaxLLMCalls), a negative value
	// means no limit.
	MaxLLMCalls int
}

// InvocationConfig holds what the runner knows when it starts an invocation.
type InvocationConfig struct {
	// ID is the invocation id; event.NewInvocationID() if empty.
	ID          string
	Tree        *Tree
	Session     *session.Session
	Artifacts   *artifact.Service
	Memory      *memory.Service
	UserContent *genai.Content
	RunConfig   RunConfig
	// LLMCalls is the number of model calls the invocation made before
	// this run. When it resumes an invocation, the runner counts them in
	// the session log (the invocation's events for which IsLLMCall holds),
	// so that they count against RunConfig.MaxLLMCalls.
	LLMCalls int
	// Resumable says the application is resumable: agents that orchestrate
	// others (the workflow agents) record their checkpoints, so that an
	// interrupted invocation can continue from the middle (see resume.go).
	// False, ADK's default, writes no checkpoint event.
	Resumable bool
	// Callbacks are global callbacks (from plugins) applied before the
	// agents' own.
	Callbacks Callbacks
	// Credentials are the client's answers to credential requests carried
	// by the user message, by request call id. The runner takes them out of
	// the message before it is stored, so they live only in memory.
	Credentials map[string]map[string]any
	// CredentialService, when set, keeps the credentials users grant to
	// tools (OAuth2 tokens, see credential/oauth) per user, encrypted.
	// Tools reach it through their context (CallbackContext.CredentialService).
	CredentialService *credential.Service
	// PendingArtifacts, when set, records every artifact version saved
	// through the invocation's contexts, so that the committer can delete
	// those no committed event records (see PendingArtifacts). The runner
	// sets it; nil records nothing.
	PendingArtifacts *PendingArtifacts
	// CallKey, when set, authenticates stored function calls: the runner
	// signs the calls of every event the agents yield before it commits
	// it, and a call read back from the session log runs only if
	// CheckStoredCalls accepts its event. Nil authenticates nothing.
	CallKey *event.CallKey
}

// Invocation is everything one user turn shares, from the user message to
// the final response: the id, the live session, the services, the run
// configuration. Each agent sees it through its own copy, which records the
// running agent and its branch. It is safe for concurrent use.
type Invocation struct {
	agent  Agent
	branch string
	shared *shared
	// scope, when set, is the innermost end scope (a parallel branch):
	// End ends only that scope (see resume.go).
	scope *endScope
	// resume, when set, marks an agent that continues from the session log
	// (see resume.go).
	resume *resumePoint
}

type shared struct {
	cfg      InvocationConfig
	ended    atomic.Bool
	llmCalls atomic.Int64
	limit    int64    // resolved RunConfig.MaxLLMCalls; <= 0: none
	answers  []Answer // set before the agents run (pending.go)
}

// NewInvocation starts an invocation. The runner calls it; tests of custom
// agents may call it too.
func NewInvocation(cfg InvocationConfig) *Invocation {
	if cfg.ID == "" {
		cfg.ID = event.NewInvocationID()
	}
	var root Agent
	if cfg.Tree != nil {
		root = cfg.Tree.Root()
	}
	// One allocation for the invocation and what its copies share.
	b := &struct {
		inv Invocation
		sh  shared
	}{sh: shared{cfg: cfg, limit: int64(ResolveMaxLLMCalls(cfg.RunConfig.MaxLLMCalls))}}
	b.sh.llmCalls.Store(int64(cfg.LLMCalls))
	b.inv = Invocation{agent: root, shared: &b.sh}
	return &b.inv
}

// For returns the invocation as seen by agent a, on the same branch.
func (inv *Invocation) For(a Agent) *Invocation {
	c := *inv
	c.agent = a
	return &c
}

// WithBranch returns the invocation on another branch.
func (inv *Invocation) WithBranch(branch string) *Invocation {
	c := *inv
	c.branch = branch
	return &c
}

// ID returns the invocation id ("e-" + UUID).
func (inv *Invocation) ID() string { return inv.shared.cfg.ID }

// Agent returns the agent this copy of the invocation belongs to.
func (inv *Invocation) Agent() Agent { return inv.agent }

// Branch returns the agent's branch, such as "parallel.child" ("" at the root).
func (inv *Invocation) Branch() string { return inv.branch }

// Session returns the live session. Its state includes the invocation's
// temp: keys and staged writes.
func (inv *Invocation) Session() *session.Session { return inv.shared.cfg.Session }

// Artifacts returns the artifact service, or nil if none is configured.
func (inv *Invocation) Artifacts() *artifact.Service { return inv.shared.cfg.Artifacts }

// Memory returns the memory service, or nil if none is configured.
func (inv *Invocation) Memory() *memory.Service { return inv.shared.cfg.Memory }

// Tree returns the agent tree, or nil.
func (inv *Invocation) Tree() *Tree { return inv.shared.cfg.Tree }

// UserContent returns the user message that started the invocation.
func (inv *Invocation) UserContent() *genai.Content { return inv.shared.cfg.UserContent }

// RunConfig returns the run configuration.
func (inv *Invocation) RunConfig() RunConfig { return inv.shared.cfg.RunConfig }

// Callbacks returns the invocation's global callbacks.
func (inv *Invocation) Callbacks() *Callbacks { return &inv.shared.cfg.Callbacks }

// Credential returns the client's answer to the credential request with the
// given call id, if the user message carried one.
func (inv *Invocation) Credential(requestID string) (map[string]any, bool) {
	c, ok := inv.shared.cfg.Credentials[requestID]
	return c, ok
}

// CredentialService returns the service keeping users' credentials, or nil
// if none is configured.
func (inv *Invocation) CredentialService() *credential.Service {
	return inv.shared.cfg.CredentialService
}

// CheckStoredCalls verifies, when the invocation authenticates calls
// (InvocationConfig.CallKey), that the function calls of ev, an event read
// back from the session log, are the calls the runtime stored: an agent
// calls it before it runs one of them. The error wraps
// event.ErrCallIntegrity. Without a key it accepts every event.
func (inv *Invocation) CheckStoredCalls(ev *event.Event) error {
	k := inv.shared.cfg.CallKey
	if k == nil {
		return nil
	}
	s := inv.shared.cfg.Session
	return k.Check(ev, s.AppName(), s.UserID())
}

// End ends the invocation: agents stop after their current step. Within a
// branch of a parallel agent it ends that branch; the parallel agent ends
// the invocation once its other branches have finished.
func (inv *Invocation) End() {
	if inv.scope != nil {
		inv.scope.ended.Store(true)
		return
	}
	inv.shared.ended.Store(true)
}

// Ended reports whether End was called for the invocation or for one of the
// enclosing branches.
func (inv *Invocation) Ended() bool {
	return inv.shared.ended.Load() || inv.scope.isEnded()
}

// CountLLMCall records a model call and returns an error wrapping
// ErrLLMCallLimit when the invocation exceeds its limit. The count starts
// at InvocationConfig.LLMCalls: the calls made before the invocation was
// resumed count too.
func (inv *Invocation) CountLLMCall() error {
	n := inv.shared.llmCalls.Add(1)
	limit := inv.shared.limit
	if limit > 0 && n > limit {
		return fmt.Errorf("%w (limit %d)", ErrLLMCallLimit, limit)
	}
	return nil
}

// NewEvent returns a new event of the current agent in this invocation, on
// its branch.
func (inv *Invocation) NewEvent() *event.Event {
	name := ""
	if inv.agent != nil {
		name = inv.agent.Name()
	}
	e := event.New(inv.ID(), name)
	e.Branch = inv.branch
	return e
}
