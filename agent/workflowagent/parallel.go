package workflowagent

import (
	"context"
	"fmt"
	"iter"
	"sync"

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

// message is what a child goroutine sends to the parent's iterator: an
// event or error to forward, or (done) the news that the child has finished.
type message struct {
	ev   *event.Event
	err  error
	done bool
	// branch is the index of the sending branch (with an event or done).
	branch int
	// resume, when not nil, receives a value once the event has been
	// forwarded and yield returned true. It has room for one value, so the
	// parent never blocks on it.
	resume chan struct{}
}

func (p *Parallel) run(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
	return func(yield func(*event.Event, error) bool) {
		children := p.cfg.SubAgents
		if len(children) == 0 {
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
		// Each branch has its own end scope: a branch that pauses stops
		// itself, and the others run to their end. Finished branches are
		// not run again on resume.
		var branches []*agent.Invocation
		var agents []agent.Agent
		for i, child := range children {
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

		cctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		// Whatever the way out, stop the children and wait for all of them:
		// no goroutine outlives the iterator.
		defer func() {
			cancel()
			wg.Wait()
		}()

		msgs := make(chan message)
		for i, child := range agents {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runBranch(cctx, branches[i], i, child, msgs)
			}()
		}

		paused := false
		selfEnded := make([]bool, len(branches)) // the branch recorded its own end
		for running := len(branches); running > 0; {
			select {
			case m := <-msgs:
				switch {
				case m.done:
					running--
					b := branches[m.branch]
					if b.Ended() {
						paused = true
					} else if !selfEnded[m.branch] && !checkpoint(inv, agent.NewEndOfAgent(b), yield) {
						return
					}
				case m.err != nil:
					yield(nil, m.err)
					return
				default:
					if ev := m.ev; !ev.Partial && ev.Actions.EndOfAgent && ev.Author == agents[m.branch].Name() {
						selfEnded[m.branch] = true
					}
					if !yield(m.ev, nil) {
						return
					}
					m.resume <- struct{}{}
				}
			case <-ctx.Done():
				yield(nil, fmt.Errorf("workflowagent: %s: %w", p.Name(), ctx.Err()))
				return
			}
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

// runBranch runs one child and sends its events to the parent, waiting after
// each one until the parent has forwarded it. It returns when the child is
// finished or ctx is cancelled. A panic of the child, which nothing could
// recover on this goroutine and would end the process, is sent as an error.
func runBranch(ctx context.Context, inv *agent.Invocation, index int, child agent.Agent, msgs chan<- message) {
	defer func() {
		if p := recover(); p != nil {
			send(ctx, msgs, message{err: fmt.Errorf("workflowagent: branch %s panicked: %v", child.Name(), p)})
		}
	}()
	resume := make(chan struct{}, 1)
	for ev, err := range child.Run(ctx, inv) {
		if err != nil {
			send(ctx, msgs, message{err: err})
			return
		}
		if ev == nil {
			continue
		}
		if !send(ctx, msgs, message{ev: ev, branch: index, resume: resume}) {
			return
		}
		select {
		case <-resume:
		case <-ctx.Done():
			return
		}
	}
	send(ctx, msgs, message{done: true, branch: index})
}

// send sends m to the parent, reporting false if ctx ended first.
func send(ctx context.Context, msgs chan<- message, m message) bool {
	select {
	case msgs <- m:
		return true
	case <-ctx.Done():
		return false
	}
}
