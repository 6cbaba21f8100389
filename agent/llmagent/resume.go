package llmagent

import (
	"context"
	"fmt"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/tool"
)

// This file continues an agent from the session log when its invocation is
// resumed (agent.Invocation.Resuming): after a long-running call or a
// confirmation request was answered, or after the process stopped mid-way.
// Nothing that was committed runs again, and a stored call runs only as
// the runtime stored it (agent.Invocation.CheckStoredCalls): this is the one
// place stored calls are executed.

// resume decides, from the agent's events in this invocation, how it goes
// on. Like step, it returns nil to call the model, a itself to stop (the
// agent had finished, or is still paused), with ok false when the caller
// must stop at once. A transfer the agent had made is resumed here. The
// client's answers come from the ledger of pending calls
// (agent.Invocation.Answers), which delivers each answer to this agent
// until it has used it.
func (a *Agent) resume(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) (next agent.Agent, ok bool) {
	evs := agent.ResumeEvents(inv)
	responded := map[string]bool{}
	var calls *event.Event // the agent's latest event with function calls
	var after []*event.Event
	last := -1
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		if e.Author == a.Name() && last < 0 && (e.Content != nil || e.Actions.EndOfAgent) {
			last = i
		}
		if e.Author == a.Name() && len(e.FunctionCalls()) > 0 {
			calls = e
			after = evs[i+1:]
			break
		}
		for _, fr := range e.FunctionResponses() {
			responded[fr.ID] = true
		}
		for _, id := range e.StartedCalls() {
			responded[id] = true // ran; waits for the client
		}
	}
	switch {
	case last < 0:
		return nil, true // not started: run from the beginning
	case evs[last].Actions.EndOfAgent:
		return a, true
	case calls == nil || evs[last] != calls && len(evs[last].FunctionResponses()) == 0:
		// The latest event is an answer (or an error): the agent finished,
		// unless the client has since answered a long-running call whose
		// tool had given an interim result: the model hears of it.
		if len(inv.Answers()) > 0 {
			return nil, true
		}
		if evs[last].Content != nil && evs[last].Content.Role != genai.RoleUser {
			return a, true
		}
		if calls == nil {
			return nil, true
		}
	}
	tools, _, err := a.resolveTools(ctx, inv)
	if err != nil {
		yield(nil, err)
		return nil, false
	}
	p := paused{evs: evs, calls: calls, after: after, answers: map[string]agent.Answer{},
		waiting: agent.StillWaiting(evs, a.Name(), inv.Branch())}
	for _, ans := range inv.Answers() {
		p.answers[ans.Call.ID] = ans
	}
	if isClientRequest(calls) {
		return a.resumeRequests(ctx, inv, &p, tools, yield)
	}
	return a.resumeCalls(ctx, inv, &p, responded, tools, yield)
}

// paused is where a resumed agent stopped: its latest event with function
// calls, the events after it, the answers the ledger delivers to it, and
// whether one of its pausing calls in the invocation, in that event or an
// earlier one, still waits for the client.
type paused struct {
	evs     []*event.Event // the invocation's events (agent.ResumeEvents)
	calls   *event.Event
	after   []*event.Event
	answers map[string]agent.Answer // by call id
	waiting bool
}

// resumeRequests goes on after confirmation or credential requests: it runs
// the original calls whose requests were answered, or stays paused.
func (a *Agent) resumeRequests(ctx context.Context, inv *agent.Invocation, p *paused, tools map[string]tool.Tool,
	yield func(*event.Event, error) bool) (agent.Agent, bool) {
	var run []*genai.FunctionCall
	var resumes []agent.ToolResume
	for _, fc := range p.calls.FunctionCalls() {
		orig, err := agent.OriginalCall(fc)
		if err != nil {
			yield(nil, fmt.Errorf("llmagent: %s: %w", a.Name(), err))
			return nil, false
		}
		if ans, ok := p.answers[fc.ID]; ok {
			run = append(run, orig)
			resumes = append(resumes, clientAnswer(inv, ans, agent.Approval(p.evs, orig.ID)))
		}
	}
	if len(run) > 0 {
		// The requests' arguments hold the original calls: the requests'
		// code covers what runs.
		if err := inv.CheckStoredCalls(p.calls); err != nil {
			yield(nil, fmt.Errorf("llmagent: %s: %w", a.Name(), err))
			return nil, false
		}
		return a.afterCalls(ctx, inv, run, resumes, tools, p.waiting, yield)
	}
	if p.waiting {
		inv.End()
		return a, true
	}
	return a.afterResponses(inv, p.after)
}

// resumeCalls goes on after a model response with calls: it runs those
// that have no response and, for a long-running call, no record that its
// tool ran (the process stopped before they ran), stays paused while a
// long-running call waits for the client, and otherwise goes on as the
// responses say.
func (a *Agent) resumeCalls(ctx context.Context, inv *agent.Invocation, p *paused, responded map[string]bool, tools map[string]tool.Tool,
	yield func(*event.Event, error) bool) (next agent.Agent, ok bool) {
	var run []*genai.FunctionCall
	for _, fc := range p.calls.FunctionCalls() {
		if !responded[fc.ID] {
			run = append(run, fc)
		}
	}
	if len(run) > 0 {
		if err := inv.CheckStoredCalls(p.calls); err != nil {
			yield(nil, fmt.Errorf("llmagent: %s: %w", a.Name(), err))
			return nil, false
		}
		return a.afterCalls(ctx, inv, run, nil, tools, p.waiting, yield)
	}
	if p.waiting {
		inv.End() // still paused
		return a, true
	}
	for _, e := range p.after {
		if e.Author == a.Name() && (len(e.Actions.RequestedToolConfirmations) > 0 || len(e.Actions.RequestedAuthConfigs) > 0) {
			// The responses asked the client for confirmations or
			// credentials, and the request was not committed: ask now.
			if !yield(clientRequests(inv, p.calls.FunctionCalls(), &e.Actions), nil) {
				return nil, false
			}
			inv.End()
			return a, true
		}
	}
	next, ok = a.afterResponses(inv, p.after)
	if !ok || next == nil || next == a {
		return next, ok
	}
	// Continue the agent this one had transferred to, from its own events.
	for ev, err := range next.Run(ctx, inv.For(next)) {
		if !yield(ev, err) || err != nil {
			return nil, false
		}
	}
	return a, true
}

// afterResponses decides how the agent goes on once every call has its
// response: a transfer, the end (skip summarization), or another model call.
func (a *Agent) afterResponses(inv *agent.Invocation, after []*event.Event) (agent.Agent, bool) {
	for _, e := range after {
		if e.Author != a.Name() {
			continue
		}
		if target := e.Actions.TransferToAgent; target != "" {
			if t, err := a.transferTarget(inv, target); err == nil {
				return t, true
			}
		}
		if e.Actions.SkipSummarization {
			return a, true
		}
	}
	return nil, true
}

// isClientRequest reports whether e asks the client for confirmations or
// credentials.
func isClientRequest(e *event.Event) bool {
	for _, fc := range e.FunctionCalls() {
		if fc.Name != event.FunctionRequestConfirmation && fc.Name != event.FunctionRequestCredential {
			return false
		}
	}
	return true
}

// clientAnswer reads the client's answer to a request: a confirmation from
// the response, a credential from the invocation (credentials are kept out
// of the log; after a restart the tool runs without one and may ask again).
// A credential comes with approval, the confirmation the client gave
// earlier for the same call, if any: a tool that needs both is not asked to
// be approved again.
func clientAnswer(inv *agent.Invocation, ans agent.Answer, approval *event.ToolConfirmation) agent.ToolResume {
	if ans.Kind == agent.PauseConfirmation {
		return agent.ToolResume{Confirmation: agent.ParseConfirmation(ans.Response.Response)}
	}
	cred, _ := inv.Credential(ans.Call.ID)
	if cred == nil {
		cred = map[string]any{}
	}
	return agent.ToolResume{Credential: cred, Confirmation: approval}
}

// ResumesFromLog reports that the agent continues from the session log when
// its invocation is resumed (see agent.Resumer).
func (a *Agent) ResumesFromLog() bool { return true }
