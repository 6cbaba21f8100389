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

// ResumesFromLog implements agent.Resumer: in resume mode a workflow agent
// continues from its latest checkpoint.
func (b *base) ResumesFromLog() bool { return true }

// ResumesFromCheckpoints implements agent.CheckpointResumer: a workflow
// agent records checkpoints only in a resumable application, and cannot
// continue from the middle without them.
func (b *base) ResumesFromCheckpoints() bool { return true }

// ErrNotResumable is the error of a workflow agent run in resume mode in an
// application that is not resumable: it recorded no checkpoint, so it
// cannot tell what it had done, and it refuses rather than run its
// sub-agents again. The runner never asks it to (see
// agent.CheckpointResumer).
var ErrNotResumable = errors.New("workflowagent: cannot resume without checkpoints: the application is not resumable")

// refuseResume yields the error of a workflow agent asked to resume in an
// application that is not resumable, and reports whether it did.
func refuseResume(inv *agent.Invocation, name string, yield func(*event.Event, error) bool) bool {
	if !inv.Resuming() || inv.Resumable() {
		return false
	}
	yield(nil, fmt.Errorf("%w (agent %s)", ErrNotResumable, name))
	return true
}

// checkpoint yields ev, a checkpoint, in a resumable application (see
// agent.Invocation.Resumable), and reports whether the caller goes on.
func checkpoint(inv *agent.Invocation, ev *event.Event, yield func(*event.Event, error) bool) bool {
	return !inv.Resumable() || yield(ev, nil)
}

// outcome says how a workflow goes on after one of its sub-agents.
type outcome int

const (
	proceed   outcome = iota // the sub-agent finished: go on
	stop                     // stop at once: yield returned false, an error, a pause or the end of the invocation
	escalated                // a committed event escalated
)

// runStep runs one sub-agent, forwarding its events, and records its end
// with an end-of-agent event when it finishes (unless it recorded its own).
// With resume set, the sub-agent continues from the log (see
// agent.Invocation.ResumeChild), and is skipped if it had already finished.
func runStep(ctx context.Context, inv *agent.Invocation, child agent.Agent, resume, stopOnEscalate bool,
	yield func(*event.Event, error) bool) outcome {
	var cinv *agent.Invocation
	if resume {
		cinv = inv.ResumeChild(child)
		if _, ended := agent.Checkpoint(cinv, child.Name()); ended {
			return proceed
		}
	} else {
		cinv = inv.Fresh().For(child)
	}
	selfEnded := false
	for ev, err := range child.Run(ctx, cinv) {
		if !yield(ev, err) || err != nil {
			return stop
		}
		if ev == nil || ev.Partial {
			continue
		}
		if ev.Actions.EndOfAgent && ev.Author == child.Name() {
			selfEnded = true
		}
		if stopOnEscalate && ev.Actions.Escalate {
			return escalated
		}
	}
	if inv.Ended() {
		return stop // paused or ended: the sub-agent has not finished
	}
	if !selfEnded && !checkpoint(inv, agent.NewEndOfAgent(cinv), yield) {
		return stop
	}
	return proceed
}

// subAgentIndex returns the index of the sub-agent named by a checkpoint's
// value, or -1.
func (b *base) subAgentIndex(name any) int {
	for i, a := range b.cfg.SubAgents {
		if a.Name() == name {
			return i
		}
	}
	return -1
}

// Checkpoint keys of the workflow agents' agent state.
const (
	stateCurrent     = "current_sub_agent"
	stateTimesLooped = "times_looped"
	stateStarted     = "started"
)

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
		subs := s.cfg.SubAgents
		start, resume := 0, false
		if refuseResume(inv, s.Name(), yield) {
			return
		}
		if inv.Resuming() {
			state, ended := agent.Checkpoint(inv, s.Name())
			if ended {
				return
			}
			if i := s.subAgentIndex(state[stateCurrent]); i >= 0 {
				start, resume = i, true
			} else {
				inv = inv.Fresh()
			}
		}
		for i := start; i < len(subs); i++ {
			child := subs[i]
			if inv.Ended() {
				return
			}
			if err := ctx.Err(); err != nil {
				yield(nil, fmt.Errorf("workflowagent: %s: %w", s.Name(), err))
				return
			}
			resumeChild := resume && i == start
			if !resumeChild && !checkpoint(inv, agent.NewCheckpoint(inv, map[string]any{stateCurrent: child.Name()}), yield) {
				return
			}
			if runStep(ctx, inv, child, resumeChild, false, yield) != proceed {
				return
			}
		}
		checkpoint(inv, agent.NewEndOfAgent(inv), yield)
	}
}

// Loop runs its sub-agents in sequence, over and over: up to MaxIterations
// passes, and until an event escalates (event.Actions.Escalate) or the
// invocation ends. The escalating event is committed; nothing of the loop's
// sub-agents runs after it (the loop only records its end).
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
		subs := l.cfg.SubAgents
		if len(subs) == 0 {
			return // an unbounded loop over nothing would never end
		}
		first, start, resume := 0, 0, false
		if refuseResume(inv, l.Name(), yield) {
			return
		}
		if inv.Resuming() {
			state, ended := agent.Checkpoint(inv, l.Name())
			if ended {
				return
			}
			i := l.subAgentIndex(state[stateCurrent])
			n, ok := agent.StateInt(state, stateTimesLooped)
			switch {
			case i < 0 || !ok:
				inv = inv.Fresh()
			case escalatedSince(inv, subs[i]):
				checkpoint(inv, agent.NewEndOfAgent(inv), yield)
				return
			default:
				first, start, resume = n, i, true
			}
		}
		for it := first; l.maxIterations == 0 || it < l.maxIterations; it++ {
			for j := start; j < len(subs); j++ {
				child := subs[j]
				if inv.Ended() {
					return
				}
				if err := ctx.Err(); err != nil {
					yield(nil, fmt.Errorf("workflowagent: %s: %w", l.Name(), err))
					return
				}
				resumeChild := resume && it == first && j == start
				if !resumeChild && !checkpoint(inv, agent.NewCheckpoint(inv, map[string]any{stateCurrent: child.Name(), stateTimesLooped: it}), yield) {
					return
				}
				switch runStep(ctx, inv, child, resumeChild, true, yield) {
				case stop:
					return
				case escalated:
					checkpoint(inv, agent.NewEndOfAgent(inv), yield)
					return
				}
			}
			start = 0
		}
		checkpoint(inv, agent.NewEndOfAgent(inv), yield)
	}
}

// escalatedSince reports whether an event of this invocation escalated after
// the loop's latest checkpoint: the loop had ended when the invocation was
// interrupted.
func escalatedSince(inv *agent.Invocation, child agent.Agent) bool {
	for _, e := range agent.ResumeEvents(inv.ResumeChild(child)) {
		if e.Actions.Escalate {
			return true
		}
	}
	return false
}
