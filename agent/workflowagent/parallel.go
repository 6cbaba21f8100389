package workflowagent

import (
	"context"
	"fmt"
	"iter"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
)

// Parallel runs its sub-agents concurrently, each on its own branch
// ("parent.child", or the parent's branch + "." + child when the parent
// already has one), so that an LLM sub-agent's history leaves out its
// siblings' events. Create it with NewParallel.
//
// The sub-agents' events are forwarded one at a time, in the order they
// arrive. A sub-agent that has yielded an event is suspended until the event
// has been committed, exactly as if it ran alone. When one sub-agent fails,
// the caller stops ranging, or the context is done, the others are cancelled
// (through their context and their next yield) and Run returns only after
// every sub-agent has stopped. The first error is reported once.
type Parallel struct {
	base
	branches []string // the branch of each sub-agent when the parallel agent has none
}

var (
	_ agent.Agent  = (*Parallel)(nil)
	_ agent.Parent = (*Parallel)(nil)
)

// NewParallel returns a parallel agent.
func NewParallel(cfg Config) (*Parallel, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	p := &Parallel{base: base{cfg: cfg}}
	for _, child := range cfg.SubAgents {
		p.branches = append(p.branches, cfg.Name+"."+child.Name())
	}
	return p, nil
}

// Run implements agent.Agent.
func (p *Parallel) Run(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
	return agent.RunWithCallbacks(ctx, inv, p.cfg.BeforeAgent, p.cfg.AfterAgent, p.run)
}

// branchOf returns the branch the i-th sub-agent runs on.
func (p *Parallel) branchOf(inv *agent.Invocation, i int) string {
	if b := inv.Branch(); b != "" {
		return b + "." + p.cfg.SubAgents[i].Name()
	}
	return p.branches[i]
}

func (p *Parallel) run(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
	return func(yield func(*event.Event, error) bool) {
		if len(p.cfg.SubAgents) == 0 {
			return
		}
		resume := false
		if refuseResume(inv, p.Name(), yield) {
			return
		}
		if inv.Resuming() {
			state, ended := agent.Checkpoint(inv, p.Name())
			if ended {
				return
			}
			if state != nil {
				resume = true
			} else {
				inv = inv.Fresh()
			}
		}
		if !resume && !checkpoint(inv, agent.NewCheckpoint(inv, map[string]any{stateStarted: true}), yield) {
			return
		}
		agents, branches := p.branchesToRun(inv, resume)

		paused := false
		selfEnded := make([]bool, len(branches)) // the branch recorded its own end
		relay := agent.NewRelay(ctx)
		defer relay.Close()
		for i := range agents {
			relay.Go(func(ctx context.Context, emit func(*event.Event) bool) error {
				for ev, err := range agents[i].Run(ctx, branches[i]) {
					if err != nil {
						return err
					}
					if !emit(ev) {
						return nil
					}
				}
				return nil
			})
		}
		for relay.Running() > 0 {
			m, err := relay.Next()
			if err != nil {
				yield(nil, fmt.Errorf("workflowagent: %s: %w", p.Name(), err))
				return
			}
			if i, ev := m.Child, m.Event; ev != nil {
				if !ev.Partial && ev.Actions.EndOfAgent && ev.Author == agents[i].Name() {
					selfEnded[i] = true
				}
				if !yield(ev, nil) {
					return
				}
				continue
			}
			branchPaused, goOn := p.branchEnded(inv, branches[m.Child], selfEnded[m.Child], m.Err, yield)
			if !goOn {
				return
			}
			paused = paused || branchPaused
		}
		if paused {
			inv.End() // a branch paused: the enclosing agents stop too
			return
		}
		if !inv.Ended() {
			checkpoint(inv, agent.NewEndOfAgent(inv), yield)
		}
	}
}

// branchesToRun returns the sub-agents to run and the invocation of each.
// Each branch has its own end scope: a branch that pauses stops itself, and
// the others run to their end. Finished branches are not run again on
// resume.
func (p *Parallel) branchesToRun(inv *agent.Invocation, resume bool) (agents []agent.Agent, branches []*agent.Invocation) {
	for i, child := range p.cfg.SubAgents {
		cinv := inv
		if resume {
			cinv = inv.ResumeChild(child)
			if _, ended := agent.Checkpoint(cinv, child.Name()); ended {
				continue
			}
		}
		branches = append(branches, cinv.ForBranch(child, p.branchOf(inv, i)))
		agents = append(agents, child)
	}
	return agents, branches
}

// branchEnded handles the end of a branch: err is what its sub-agent
// returned. It reports whether the branch paused; one that finished without
// recording its end gets it recorded. goOn is false when the parallel agent
// stops: the branch failed (reported once) or the caller stopped.
func (p *Parallel) branchEnded(inv, branch *agent.Invocation, selfEnded bool, err error, yield func(*event.Event, error) bool) (paused, goOn bool) {
	if pe, ok := err.(*agent.PanicError); ok {
		err = fmt.Errorf("workflowagent: branch %s panicked: %v", branch.Agent().Name(), pe.Value)
	}
	switch {
	case err != nil:
		yield(nil, err)
		return false, false
	case branch.Ended():
		return true, true
	case selfEnded:
		return false, true
	}
	return false, checkpoint(inv, agent.NewEndOfAgent(branch), yield)
}
