// Package workflowagent provides agents that orchestrate other agents
// without a model: [Sequential] runs its sub-agents one after another,
// [Parallel] runs them concurrently on separate branches, and [Loop] runs
// them in sequence repeatedly.
//
// # Commit before resume
//
// A workflow agent forwards its sub-agents' events through its own iterator,
// so each sub-agent's yield returns only after the runner has committed the
// event: the next sub-agent of a Sequential, or the next step of the same
// sub-agent, reads the state the event committed. A Parallel agent keeps this
// guarantee for every branch: a child goroutine that has sent an event waits
// until the event has been committed before it continues.
//
// # Stopping
//
// Every workflow agent stops when the invocation has ended
// ([agent.Invocation.End]), when a sub-agent fails, when the caller stops
// ranging over the events, or when the context is done. A Loop also stops
// after an event whose actions escalate; the exit_loop tool of package
// tool/exitlooptool lets an LLM agent request that.
//
// All three agents are immutable after construction and safe for concurrent
// use by many invocations.
package workflowagent

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
)

// ErrInvalidConfig is returned by the constructors for a malformed
// configuration.
var ErrInvalidConfig = errors.New("workflowagent: invalid configuration")

// Config configures a workflow agent.
type Config struct {
	// Name is required; Description is recommended.
	Name        string
	Description string
	// SubAgents are the agents the workflow runs, in order.
	SubAgents []agent.Agent
	// BeforeAgent and AfterAgent callbacks run around the workflow, in
	// order; the first to return content wins (see agent.RunWithCallbacks).
	BeforeAgent []agent.BeforeAgentCallback
	AfterAgent  []agent.AfterAgentCallback
}

// LoopConfig configures a Loop.
type LoopConfig struct {
	Config
	// MaxIterations bounds the number of passes over the sub-agents; zero
	// means no bound (the loop runs until a sub-agent escalates, the
	// invocation ends, or the context is done).
	MaxIterations int
}

func (c *Config) validate() error {
	if c.Name == "" {
		return fmt.Errorf("%w: name is required", ErrInvalidConfig)
	}
	if c.Name == event.AuthorUser {
		return fmt.Errorf("%w: agent name %q is reserved", ErrInvalidConfig, c.Name)
	}
	seen := make(map[string]bool, len(c.SubAgents))
	for i, sub := range c.SubAgents {
		if sub == nil {
			return fmt.Errorf("%w: %s: sub-agent %d is nil", ErrInvalidConfig, c.Name, i)
		}
		if seen[sub.Name()] {
			return fmt.Errorf("%w: %s: duplicate sub-agent %q", ErrInvalidConfig, c.Name, sub.Name())
		}
		seen[sub.Name()] = true
	}
	return nil
}

// base holds what the three workflow agents share.
type base struct {
	cfg Config
}

// Name implements agent.Agent.
func (b *base) Name() string { return b.cfg.Name }

// Description implements agent.Agent.
func (b *base) Description() string { return b.cfg.Description }

// SubAgents implements agent.Parent.
func (b *base) SubAgents() []agent.Agent { return b.cfg.SubAgents }

// runChild forwards the events of one sub-agent. It reports whether the
// caller should go on: false once yield has returned false, an error has
// been forwarded, or (when stopOnEscalate is set) a committed event has
// escalated.
func runChild(ctx context.Context, inv *agent.Invocation, child agent.Agent, stopOnEscalate bool,
	yield func(*event.Event, error) bool) bool {
	for ev, err := range child.Run(ctx, inv.For(child)) {
		if !yield(ev, err) || err != nil {
			return false
		}
		if stopOnEscalate && ev != nil && !ev.Partial && ev.Actions.Escalate {
			return false
		}
	}
	return true
}

// Sequential runs its sub-agents one after another. Each sub-agent sees the
// state committed by the events of those before it. Create it with
// NewSequential.
type Sequential struct {
	base
}

var (
	_ agent.Agent  = (*Sequential)(nil)
	_ agent.Parent = (*Sequential)(nil)
)

// NewSequential returns a sequential agent.
func NewSequential(cfg Config) (*Sequential, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Sequential{base{cfg: cfg}}, nil
}

// Run implements agent.Agent. It stops after the sub-agent that ended the
// invocation, on the first error, or when ctx is done before a sub-agent
// starts.
func (s *Sequential) Run(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
	return agent.RunWithCallbacks(ctx, inv, s.cfg.BeforeAgent, s.cfg.AfterAgent, s.run)
}

func (s *Sequential) run(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
	return func(yield func(*event.Event, error) bool) {
		for _, child := range s.cfg.SubAgents {
			if inv.Ended() {
				return
			}
			if err := ctx.Err(); err != nil {
				yield(nil, fmt.Errorf("workflowagent: %s: %w", s.Name(), err))
				return
			}
			if !runChild(ctx, inv, child, false, yield) {
				return
			}
		}
	}
}

// Loop runs its sub-agents in sequence, over and over: up to MaxIterations
// passes, and until an event escalates (event.Actions.Escalate) or the
// invocation ends. The escalating event is committed; nothing runs after it.
// Create it with NewLoop.
type Loop struct {
	base
	maxIterations int
}

var (
	_ agent.Agent  = (*Loop)(nil)
	_ agent.Parent = (*Loop)(nil)
)

// NewLoop returns a loop agent.
func NewLoop(cfg LoopConfig) (*Loop, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.MaxIterations < 0 {
		return nil, fmt.Errorf("%w: %s: negative max iterations %d", ErrInvalidConfig, cfg.Name, cfg.MaxIterations)
	}
	return &Loop{base: base{cfg: cfg.Config}, maxIterations: cfg.MaxIterations}, nil
}

// MaxIterations returns the bound on passes over the sub-agents (0: none).
func (l *Loop) MaxIterations() int { return l.maxIterations }

// Run implements agent.Agent.
func (l *Loop) Run(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
	return agent.RunWithCallbacks(ctx, inv, l.cfg.BeforeAgent, l.cfg.AfterAgent, l.run)
}

func (l *Loop) run(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
	return func(yield func(*event.Event, error) bool) {
		if len(l.cfg.SubAgents) == 0 {
			return // an unbounded loop over nothing would never end
		}
		for i := 0; l.maxIterations == 0 || i < l.maxIterations; i++ {
			for _, child := range l.cfg.SubAgents {
				if inv.Ended() {
					return
				}
				if err := ctx.Err(); err != nil {
					yield(nil, fmt.Errorf("workflowagent: %s: %w", l.Name(), err))
					return
				}
				if !runChild(ctx, inv, child, true, yield) {
					return
				}
			}
		}
	}
}
