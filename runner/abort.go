package runner

import (
	"context"
	"errors"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
)

// Aborts (CONFORMANCE R13).
//
// An invocation whose context is cancelled while it runs (the caller's
// cancellation, a server's cancel route, a client that disconnects, a
// cancel sent from another replica) is aborted: once its agents have
// stopped, the runner closes it in the log as ADK does. Every function call
// of the invocation left without a response, long-running calls and
// requests for confirmation or credentials included, gets a synthetic
// response {"error": event.AbortMessage}, from the agent that made the call,
// on its branch and isolation scope, one event per (author, branch, scope),
// marked with event.ErrorCodeAborted. When no call was left open, one
// content-less event of the root agent with that error code records the
// abort. The next turn then sees a valid history (every call answered) and
// a later Resume does not run an aborted call again.
//
// A caller that only stops reading (breaks out of Run's loop) without
// cancelling aborts nothing: the invocation stays as a crash leaves it, for
// Resume. Nor does a cancellation whose cause is ErrDetached.

// ErrDetached, as the cause of the cancellation of a run's context
// (context.WithCancelCause), stops the invocation without aborting it: its
// agents stop as with any cancellation, but no abort event is committed,
// and the invocation stays as a crash leaves it, for Resume. An executor
// that hands an invocation over to another process cancels with it when
// its own part ends for a reason of its own (its process shuts down, its
// attempt timed out), not because the invocation was cancelled.
var ErrDetached = errors.New("runner: invocation detached: it stays as it is, for Resume")

// abortCommitTimeout bounds the commit of the abort events, which runs
// after the invocation's context has ended.
const abortCommitTimeout = 10 * time.Second

// abortEvents returns the events that close the aborted invocation inv of
// sess, in the order they are appended.
func abortEvents(sess *session.Session, inv *agent.Invocation, root string) []*event.Event {
	var evs []*event.Event
	for _, ev := range sess.InvocationEvents(inv.ID()) {
		evs = append(evs, ev)
	}
	if n := len(evs); n > 0 {
		if last := evs[n-1]; last.IsolationScope != "" && last.Author != event.AuthorUser && last.IsFinalResponse() {
			return nil // a task agent's question waits for the user: nothing was cut short
		}
	}
	answered := map[string]bool{}
	for _, ev := range evs {
		for _, fr := range ev.FunctionResponses() {
			if fr.ID != "" {
				answered[fr.ID] = true
			}
		}
	}
	type group struct{ author, branch, scope string }
	var order []group
	calls := map[group][]*genai.FunctionCall{}
	for _, ev := range evs {
		for _, fc := range ev.FunctionCalls() {
			if fc.ID == "" || answered[fc.ID] {
				continue
			}
			answered[fc.ID] = true // a call repeated in a later event is answered once
			g := group{ev.Author, ev.Branch, ev.IsolationScope}
			if g.branch == "" {
				g.branch = inv.Branch()
			}
			if calls[g] == nil {
				order = append(order, g)
			}
			calls[g] = append(calls[g], fc)
		}
	}
	if len(order) == 0 {
		ev := event.New(inv.ID(), root)
		ev.Branch = inv.Branch()
		ev.ErrorCode, ev.ErrorMessage = event.ErrorCodeAborted, event.AbortMessage
		return []*event.Event{ev}
	}
	out := make([]*event.Event, 0, len(order))
	for _, g := range order {
		ev := event.New(inv.ID(), g.author)
		ev.Branch, ev.IsolationScope = g.branch, g.scope
		ev.Content = &genai.Content{Role: genai.RoleUser}
		for _, fc := range calls[g] {
			ev.Content.Parts = append(ev.Content.Parts, &genai.Part{FunctionResponse: &genai.FunctionResponse{
				ID: fc.ID, Name: fc.Name, Response: map[string]any{"error": event.AbortMessage},
			}})
		}
		ev.ErrorCode, ev.ErrorMessage = event.ErrorCodeAborted, event.AbortMessage
		out = append(out, ev)
	}
	return out
}

// abort closes the invocation inv, whose context ctx has ended, and
// yields the events that close it while reading is set. It reports
// whether the caller still reads. The commit runs without ctx's
// cancellation, bounded by abortCommitTimeout; if it fails the
// invocation stays as a crash leaves it.
func (r *Runner) abort(ctx context.Context, inv *agent.Invocation, pending *agent.PendingArtifacts, reading bool, yield func(*event.Event, error) bool) bool {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortCommitTimeout)
	defer cancel()
	for _, ev := range abortEvents(inv.Session(), inv, inv.Tree().Root().Name()) {
		if err := r.commit(cctx, inv.Session(), ev, pending); err != nil {
			return reading
		}
		if reading && !yield(ev, nil) {
			reading = false
		}
	}
	return reading
}
