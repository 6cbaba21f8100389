package agent

import (
	"strconv"
	"sync/atomic"

	"github.com/loomkit/loom/event"
)

// This file holds what resuming an invocation needs: checkpoints, resume
// mode, and end scopes for parallel branches.
//
// # Checkpoints
//
// An agent that orchestrates others records where it is with checkpoint
// events: events without content whose actions carry AgentState (its
// position) or EndOfAgent (it has finished). The rule, ADK's, is: in a
// resumable application ([Invocation.Resumable]) a workflow agent records
// its own checkpoints and its end, and the end of each sub-agent that
// finishes (so an LLM agent gets an end-of-agent event only when it runs
// under a workflow); in an application that is not resumable it records
// none, and cannot continue from the middle ([CheckpointResumer]). An agent
// run on its own, such as a lone LLM agent, emits no checkpoint at all.
//
// # Resume mode
//
// When a paused or interrupted invocation continues, the runner runs the
// agent that started it in resume mode, under the same invocation id. An
// agent in resume mode ([Invocation.Resuming]) continues from the session
// log instead of starting over: a workflow agent reads its latest
// [Checkpoint], resumes the sub-agent it was running ([Invocation.ResumeChild])
// and runs the others normally; an LLM agent continues its model ↔ tool
// loop from its last event. Only the events of this invocation after the
// agent's resume point count ([ResumeEvents]): for the agent that started
// the invocation, its first event; for a resumed sub-agent, its parent's
// checkpoint. Before-agent callbacks do not run again for a resumed agent.

// Resumer is implemented by agents that continue from the session log in
// resume mode: the workflow agents and LLM agents. When a message answers a
// paused call, the runner resumes the invocation at the agent that started
// it if that agent is a Resumer, and otherwise at the agent that asked the
// call.
type Resumer interface {
	Agent
	// ResumesFromLog reports whether the agent resumes from the log.
	ResumesFromLog() bool
}

// CheckpointResumer is implemented by agents that continue an invocation
// from their checkpoints (the sequential, parallel and loop agents of
// package agent/workflowagent), which they record only in a resumable
// application. In an application that is not resumable, the runner never
// runs such an agent in resume mode: a paused invocation continues at the
// agent that asked the answered call, as in ADK, and an interrupted one
// cannot be resumed.
type CheckpointResumer interface {
	Resumer
	// ResumesFromCheckpoints reports whether the agent needs its
	// checkpoints to resume.
	ResumesFromCheckpoints() bool
}

// NeedsCheckpoints reports whether a, or an agent below it, resumes from
// checkpoints (CheckpointResumer).
func NeedsCheckpoints(a Agent) bool {
	if c, ok := a.(CheckpointResumer); ok && c.ResumesFromCheckpoints() {
		return true
	}
	if p, ok := a.(Parent); ok {
		for _, sub := range p.SubAgents() {
			if NeedsCheckpoints(sub) {
				return true
			}
		}
	}
	return false
}

// endScope is the end flag of one parallel branch, linked to the enclosing
// branches' flags.
type endScope struct {
	ended  atomic.Bool
	parent *endScope
}

func (s *endScope) isEnded() bool {
	for ; s != nil; s = s.parent {
		if s.ended.Load() {
			return true
		}
	}
	return false
}

// resumePoint is where a resuming agent's own progress starts in the log.
type resumePoint struct {
	floor int // session index
}

// WithEndScope returns the invocation with a new end scope: End called on
// it, or on copies made from it, stops only the agents that share the scope
// (one branch of a parallel agent), while Ended still reports an end of the
// whole invocation or of an enclosing scope.
func (inv *Invocation) WithEndScope() *Invocation {
	b := &struct {
		inv   Invocation
		scope endScope
	}{inv: *inv}
	b.scope.parent = inv.scope
	b.inv.scope = &b.scope
	return &b.inv
}

// ForBranch returns the invocation as seen by agent a on branch, with an
// end scope of its own (see WithEndScope): the invocation of one branch of
// a parallel run, made in one allocation.
func (inv *Invocation) ForBranch(a Agent, branch string) *Invocation {
	c := inv.WithEndScope()
	c.agent, c.branch = a, branch
	return c
}

// Resumable reports whether the application is resumable
// (InvocationConfig.Resumable): only then do agents that orchestrate others
// record checkpoints.
func (inv *Invocation) Resumable() bool { return inv.shared.cfg.Resumable }

// Resuming reports whether the agent continues a paused or interrupted
// invocation from the session log rather than starting afresh.
func (inv *Invocation) Resuming() bool { return inv.resume != nil }

// ResumeFrom returns the invocation in resume mode, counting the events of
// this invocation from session index floor on. The runner calls it for the
// agent that started the invocation.
func (inv *Invocation) ResumeFrom(floor int) *Invocation {
	c := *inv
	c.resume = &resumePoint{floor: max(floor, 0)}
	return &c
}

// Fresh returns the invocation out of resume mode: agents run from the
// start.
func (inv *Invocation) Fresh() *Invocation {
	if inv.resume == nil {
		return inv
	}
	c := *inv
	c.resume = nil
	return &c
}

// ResumeChild returns the invocation as seen by child, in resume mode from
// the current agent's latest checkpoint on, so that what child did before
// that checkpoint (in an earlier pass of a loop, say) is not taken for
// progress. Outside resume mode it is inv.For(child).
func (inv *Invocation) ResumeChild(child Agent) *Invocation {
	c := inv.For(child)
	if inv.resume == nil {
		return c
	}
	floor := inv.resume.floor
	if i, _ := latestCheckpoint(inv, inv.agent.Name()); i >= 0 {
		floor = i
	}
	c.resume = &resumePoint{floor: floor}
	return c
}

// ResumeEvents returns the events of this invocation a resuming agent
// continues from: those at or after its resume point. Outside resume mode
// it returns nil.
func ResumeEvents(inv *Invocation) []*event.Event {
	if inv.resume == nil {
		return nil
	}
	var out []*event.Event
	for _, e := range inv.Session().EventsFrom(inv.resume.floor) {
		if e.InvocationID == inv.ID() {
			out = append(out, e)
		}
	}
	return out
}

// Checkpoint returns the latest checkpoint of the named agent in this
// invocation, looking back only as far as the resume point: its agent state
// (nil if none was recorded) and whether it had finished. Outside resume
// mode it returns nil, false.
func Checkpoint(inv *Invocation, name string) (state map[string]any, ended bool) {
	if _, e := latestCheckpoint(inv, name); e != nil {
		return e.Actions.AgentState, e.Actions.EndOfAgent
	}
	return nil, false
}

// latestCheckpoint returns the session index and event of the named agent's
// latest checkpoint at or after the resume point, or -1, nil.
func latestCheckpoint(inv *Invocation, name string) (int, *event.Event) {
	if inv.resume == nil {
		return -1, nil
	}
	sess := inv.Session()
	for i := sess.Len() - 1; i >= inv.resume.floor; i-- {
		e := sess.At(i)
		if e.InvocationID == inv.ID() && e.Author == name && (e.Actions.AgentState != nil || e.Actions.EndOfAgent) {
			return i, e
		}
	}
	return -1, nil
}

// NewCheckpoint returns a checkpoint event of the current agent recording
// its state.
func NewCheckpoint(inv *Invocation, state map[string]any) *event.Event {
	e := inv.NewEvent()
	e.Actions.AgentState = state
	return e
}

// NewEndOfAgent returns a checkpoint event recording that the current agent
// has finished.
func NewEndOfAgent(inv *Invocation) *event.Event {
	e := inv.NewEvent()
	e.Actions.EndOfAgent = true
	return e
}

// IsCheckpoint reports whether ev is only a checkpoint: no content, and no
// actions other than agent state and end of agent. Clients showing a
// conversation may skip such events.
func IsCheckpoint(ev *event.Event) bool {
	return ev != nil && ev.Content == nil && ev.ErrorCode == "" && ev.ErrorMessage == "" && ev.Actions.IsCheckpoint()
}

// StateInt reads an integer from agent state, which may have come back from
// JSON as a float64 or a string.
func StateInt(state map[string]any, key string) (int, bool) {
	switch v := state[key].(type) {
	case int:
		return v, true
	case int64:
		return int(v), true
	case float64:
		return int(v), v == float64(int(v))
	case string:
		n, err := strconv.Atoi(v)
		return n, err == nil
	}
	return 0, false
}
