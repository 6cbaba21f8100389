package agent

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/tool"
)

// Agent is a unit of agent logic. Implementations must be safe for
// concurrent use by many invocations and immutable after construction.
type Agent interface {
	// Name identifies the agent; it is unique within an agent tree and is
	// the author of the events the agent produces.
	Name() string
	// Description tells other agents (and models choosing a transfer
	// target) what the agent does.
	Description() string
	// Run executes the agent for one invocation and yields its events.
	// After a non-partial event has been yielded and yield has returned
	// true, the event has been committed to inv.Session().
	Run(ctx context.Context, inv *Invocation) iter.Seq2[*event.Event, error]
}

// Parent is implemented by agents that have sub-agents.
type Parent interface {
	SubAgents() []Agent
}

// TransferPolicy is implemented by agents that take part in agent transfer
// (LLM agents). An agent can keep the conversation across user turns only if
// it and all its ancestors implement TransferPolicy and allow transfer to
// their parent.
type TransferPolicy interface {
	DisallowTransferToParent() bool
}

// SubAgents returns a's sub-agents, or nil.
func SubAgents(a Agent) []Agent {
	if p, ok := a.(Parent); ok {
		return p.SubAgents()
	}
	return nil
}

// Tree indexes an agent tree by name and parent. It is immutable and safe
// for concurrent use.
type Tree struct {
	root   Agent
	byName map[string]Agent
	parent map[string]Agent
}

// NewTree indexes the tree under root. Agent names must be unique and not
// "user". A nil agent, including an interface holding a nil pointer, is an
// error.
func NewTree(root Agent) (*Tree, error) {
	if isNil(root) {
		return nil, errors.New("agent: nil root agent")
	}
	t := &Tree{root: root, byName: map[string]Agent{}, parent: map[string]Agent{}}
	var walk func(a, parent Agent) error
	walk = func(a, parent Agent) error {
		name := a.Name()
		if name == "" || name == event.AuthorUser {
			return fmt.Errorf("agent: invalid agent name %q", name)
		}
		if _, dup := t.byName[name]; dup {
			return fmt.Errorf("agent: duplicate agent name %q in the tree", name)
		}
		t.byName[name] = a
		if parent != nil {
			t.parent[name] = parent
		}
		for _, sub := range SubAgents(a) {
			if isNil(sub) {
				return fmt.Errorf("agent: %s has a nil sub-agent", name)
			}
			if err := walk(sub, a); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root, nil); err != nil {
		return nil, err
	}
	return t, nil
}

// isNil reports whether a is nil or an interface holding a nil pointer (or
// another nil value of a kind that can be nil), on which the Agent methods
// would typically panic.
func isNil(a Agent) bool {
	if a == nil {
		return true
	}
	switch v := reflect.ValueOf(a); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// Root returns the root agent.
func (t *Tree) Root() Agent { return t.root }

// Find returns the agent with the given name, or nil.
func (t *Tree) Find(name string) Agent { return t.byName[name] }

// Parent returns the parent of the named agent, or nil for the root.
func (t *Tree) Parent(name string) Agent { return t.parent[name] }

// Transferable reports whether the named agent may keep the conversation
// across user turns: it and every ancestor allow transfer to their parent.
func (t *Tree) Transferable(name string) bool {
	for a := t.Find(name); a != nil; a = t.Parent(a.Name()) {
		p, ok := a.(TransferPolicy)
		if !ok || p.DisallowTransferToParent() {
			return false
		}
	}
	return true
}

// BeforeAgentCallback runs before an agent. Returning non-nil content skips
// the agent: the content becomes the agent's response and the invocation
// ends.
type BeforeAgentCallback func(ctx context.Context, cc *CallbackContext) (*genai.Content, error)

// AfterAgentCallback runs after an agent. Non-nil content is emitted as an
// additional response of the agent.
type AfterAgentCallback func(ctx context.Context, cc *CallbackContext) (*genai.Content, error)

// BeforeModelCallback runs before a model call. A non-nil response skips
// the model and is used instead. It may modify req.
type BeforeModelCallback func(ctx context.Context, cc *CallbackContext, req *model.Request) (*model.Response, error)

// AfterModelCallback runs after each complete (non-partial) model response.
// A non-nil response replaces it.
type AfterModelCallback func(ctx context.Context, cc *CallbackContext, resp *model.Response) (*model.Response, error)

// OnModelErrorCallback runs when a model call fails. A non-nil response is
// used instead of failing the invocation.
type OnModelErrorCallback func(ctx context.Context, cc *CallbackContext, req *model.Request, err error) (*model.Response, error)

// BeforeToolCallback runs before a tool. A non-nil result skips the tool and
// becomes its result.
type BeforeToolCallback func(ctx context.Context, tc tool.Context, t tool.Tool, args map[string]any) (map[string]any, error)

// AfterToolCallback runs after a tool succeeded. A non-nil result replaces
// the tool's result.
type AfterToolCallback func(ctx context.Context, tc tool.Context, t tool.Tool, args, result map[string]any) (map[string]any, error)

// OnToolErrorCallback runs when a tool fails. A non-nil result is used as
// the tool's result instead of an error response.
type OnToolErrorCallback func(ctx context.Context, tc tool.Context, t tool.Tool, args map[string]any, err error) (map[string]any, error)

// Callbacks are global callbacks applied around every agent, model call and
// tool call of an invocation, before the agents' own callbacks. The runner
// fills them from its plugins. In each list the first callback returning a
// value wins and the rest (including the agent's own) are skipped.
type Callbacks struct {
	BeforeAgent  []BeforeAgentCallback
	AfterAgent   []AfterAgentCallback
	BeforeModel  []BeforeModelCallback
	AfterModel   []AfterModelCallback
	OnModelError []OnModelErrorCallback
	BeforeTool   []BeforeToolCallback
	AfterTool    []AfterToolCallback
	OnToolError  []OnToolErrorCallback
	// ResumeAgent callbacks see an agent that continues an invocation in
	// resume mode, where its before-agent callbacks do not run again (they
	// ran before the pause); its after-agent callbacks run as usual. They
	// observe and cannot change the run (tracing starts the agent's span
	// there).
	ResumeAgent []ResumeAgentCallback
	// BeforeNode and AfterNode callbacks see each attempt of a node of a
	// graph workflow (package agent/graph), before it runs and when it
	// has ended. They observe and cannot change the run.
	BeforeNode []BeforeNodeCallback
	AfterNode  []AfterNodeCallback
	// ReadOnlyModelHooks declares that the BeforeModel and OnModelError
	// callbacks above read the model request without changing it. A
	// request that callbacks may change has contents of its own, a copy of
	// the agent's model history, so that what a callback changes reaches
	// that one model call and no later one; a request that only read-only
	// callbacks see shares the history, and a model call then costs the
	// same whatever the length of the session. Observers (logging,
	// tracing) should set it.
	ReadOnlyModelHooks bool
}

// Config configures a custom agent built with New.
type Config struct {
	// Name is required; Description is recommended.
	Name        string
	Description string
	// SubAgents are the agent's children.
	SubAgents []Agent
	// Run is the agent's logic.
	Run func(ctx context.Context, inv *Invocation) iter.Seq2[*event.Event, error]
	// BeforeAgent and AfterAgent callbacks run in order; the first to return
	// content wins.
	BeforeAgent []BeforeAgentCallback
	AfterAgent  []AfterAgentCallback
}

// Custom is an agent built from a function. Create it with New.
type Custom struct {
	cfg Config
}

// New returns a custom agent.
func New(cfg Config) (*Custom, error) {
	if cfg.Name == "" {
		return nil, errors.New("agent: name is required")
	}
	if cfg.Run == nil {
		return nil, fmt.Errorf("agent: %s: Run is required", cfg.Name)
	}
	return &Custom{cfg: cfg}, nil
}

// Name implements Agent.
func (c *Custom) Name() string { return c.cfg.Name }

// Description implements Agent.
func (c *Custom) Description() string { return c.cfg.Description }

// SubAgents implements Parent.
func (c *Custom) SubAgents() []Agent { return c.cfg.SubAgents }

// Run implements Agent: it runs the callbacks around the configured function.
func (c *Custom) Run(ctx context.Context, inv *Invocation) iter.Seq2[*event.Event, error] {
	return RunWithCallbacks(ctx, inv, c.cfg.BeforeAgent, c.cfg.AfterAgent, c.cfg.Run)
}

// RunWithCallbacks runs body between before- and after-agent callbacks. It is
// how every agent of this module applies its callbacks; custom Agent
// implementations may use it too. inv must already be the agent's own
// invocation (see Invocation.For).
func RunWithCallbacks(ctx context.Context, inv *Invocation, before []BeforeAgentCallback, after []AfterAgentCallback,
	body func(context.Context, *Invocation) iter.Seq2[*event.Event, error]) iter.Seq2[*event.Event, error] {
	global := inv.Callbacks()
	if len(global.BeforeAgent) > 0 {
		before = append(slices.Clip(global.BeforeAgent), before...)
	}
	if len(global.AfterAgent) > 0 {
		after = append(slices.Clip(global.AfterAgent), after...)
	}
	return func(yield func(*event.Event, error) bool) {
		if inv.Ended() {
			return
		}
		if inv.Resuming() && len(global.ResumeAgent) > 0 {
			cc := NewCallbackContext(inv)
			for _, cb := range global.ResumeAgent {
				cb(ctx, cc)
			}
		}
		if len(before) > 0 && !inv.Resuming() { // a resumed agent has run them already
			cc := NewCallbackContext(inv)
			for _, cb := range before {
				content, err := cb(ctx, cc)
				if err != nil {
					yield(nil, fmt.Errorf("agent %s: before-agent callback: %w", inv.Agent().Name(), err))
					return
				}
				if content != nil {
					ev := cc.Event()
					ev.Content = content
					inv.End()
					yield(ev, nil)
					return
				}
			}
			if cc.HasActions() {
				if !yield(cc.Event(), nil) {
					return
				}
			}
		}
		for ev, err := range body(ctx, inv) {
			if !yield(ev, err) || err != nil {
				return
			}
		}
		if len(after) > 0 && !inv.Ended() {
			cc := NewCallbackContext(inv)
			for _, cb := range after {
				content, err := cb(ctx, cc)
				if err != nil {
					yield(nil, fmt.Errorf("agent %s: after-agent callback: %w", inv.Agent().Name(), err))
					return
				}
				if content != nil {
					ev := cc.Event()
					ev.Content = content
					yield(ev, nil)
					return
				}
			}
			if cc.HasActions() {
				yield(cc.Event(), nil)
			}
		}
	}
}
