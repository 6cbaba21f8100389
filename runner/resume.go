package runner

import (
	"context"
	"fmt"
	"iter"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
)

// Resuming invocations (CONFORMANCE T3).
//
// An invocation pauses when an agent makes a long-running call or asks the
// client for a confirmation or a credential. A later message answering
// such a call resumes that invocation: the message is stored under the
// paused invocation's id, and the agent that started the invocation runs
// again in resume mode (see package agent, "Resume mode"): workflow agents
// continue from their checkpoints, so the rest of a sequence, the remaining
// passes of a loop and the unfinished branches of a parallel agent run; the
// agent that asked continues from its call and the answer. If the agent
// that started the invocation cannot resume from the log (a custom agent
// that is not an agent.Resumer), the agent that asked the call continues
// instead. RunOptions.InvocationID resumes an invocation explicitly.
//
// An invocation interrupted by a crash continues with [Runner.Resume], from
// what was committed: no tool call whose response was committed runs again.
//
// In an application that is not resumable (Config.Resumable), workflow
// agents write no checkpoints: an answer continues the agent that asked
// the call, not the workflow around it (ADK's behaviour), and an
// interrupted invocation of such agents cannot be resumed.
//
// However it resumes, the model calls an invocation already made count
// against its limit (RunOptions.MaxLLMCalls): they are the invocation's
// events that record a model call (event.Event.LLMCall), counted while the log
// is scanned for the invocation.

// resumption says which invocation a run continues, and where.
type resumption struct {
	id          string
	calls       []agent.PendingCall // the calls the message answers (agent.Pending)
	floor       int                 // session index of the invocation's first event
	branch      string              // branch of the answered call
	asker       string              // agent that asked the answered call
	first       string              // author of the invocation's first agent event
	userContent *genai.Content
	tree        *agent.Tree
	llmCalls    int  // model calls the invocation made (event.Event.LLMCall)
	noCheckpts  bool // the tree needs checkpoints the application does not write
}

// withoutCheckpoints reports whether tree has agents that resume from
// checkpoints (agent.CheckpointResumer) that the application, not
// resumable (Config.Resumable), does not write.
func (r *Runner) withoutCheckpoints(tree *agent.Tree) bool {
	return !r.cfg.Resumable && agent.NeedsCheckpoints(tree.Root())
}

// errNoCheckpoints is the error of resuming an invocation in the middle of
// agents whose checkpoints the application does not write.
func errNoCheckpoints(id string) error {
	return fmt.Errorf("%w: invocation %s cannot be resumed: its workflow agents record no checkpoints, as the application is not resumable (runner.Config.Resumable)", ErrInvalid, id)
}

// invocationID returns the id of the invocation to run: the resumed one, or
// a new id.
func (res *resumption) invocationID() string {
	if res == nil {
		return event.NewInvocationID()
	}
	return res.id
}

// priorLLMCalls returns the model calls made before the run: those of the
// resumed invocation, or none.
func (res *resumption) priorLLMCalls() int {
	if res == nil {
		return 0
	}
	return res.llmCalls
}

// pendingCalls returns the calls the run's message answers.
func (res *resumption) pendingCalls() []agent.PendingCall {
	if res == nil {
		return nil
	}
	return res.calls
}

func (res *resumption) callBranch() string {
	if res == nil {
		return ""
	}
	return res.branch
}

// start returns the agent that continues the invocation and its view of the
// invocation, in resume mode, with the answers the log holds for its agents
// (agent.Invocation.Answers).
func (res *resumption) start(inv *agent.Invocation) (agent.Agent, *agent.Invocation) {
	ag := res.tree.Find(res.first)
	if r, ok := ag.(agent.Resumer); !ok || !r.ResumesFromLog() || res.noCheckpts {
		if asker := res.tree.Find(res.asker); asker != nil {
			ag = asker
		}
	}
	if ag == nil {
		ag = res.tree.Root()
	}
	inv.DeliverAnswers(res.floor)
	return ag, inv.For(ag).ResumeFrom(res.floor)
}

// Admit makes the checks Run makes of a message before it stores
// anything, on sess as read (a window of the log may hide the calls or the
// invocation the message names: read the whole log before taking a
// refusal as final). A message whose function responses answer no pending
// call, or a run naming an invocation that the session does not hold or
// that the runtime did not start (invocationID, RunOptions.InvocationID),
// is refused with an error wrapping ErrInvalid. A front end that hands
// messages to another process to run, such as durable/temporal's client,
// asks it first so that it refuses what Run would refuse.
func (r *Runner) Admit(sess *session.Session, msg *genai.Content, invocationID string) error {
	_, err := r.resumption(r.Tree(), sess, msg, invocationID)
	return err
}

// resumption returns how a run with msg resumes an invocation, or nil when
// it starts a new one. explicitID is RunOptions.InvocationID. It runs
// before anything is stored: a message whose function responses answer no
// pending call (agent.Pending decides) is refused with ErrInvalid.
func (r *Runner) resumption(tree *agent.Tree, sess *session.Session, msg *genai.Content, explicitID string) (*resumption, error) {
	calls, err := agent.Pending(sess, msg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if len(calls) == 0 && explicitID == "" {
		return nil, nil // a new invocation: the common case costs nothing
	}
	res := &resumption{tree: tree, calls: calls, noCheckpts: r.withoutCheckpoints(tree)}
	if len(calls) > 0 { // all of one invocation and one branch (agent.Pending)
		pc := calls[len(calls)-1]
		res.id, res.branch, res.asker = pc.InvocationID, pc.Branch, pc.Author
	} else if res.noCheckpts {
		return nil, errNoCheckpoints(explicitID)
	}
	if explicitID != "" {
		if res.id != "" && res.id != explicitID {
			return nil, fmt.Errorf("%w: the message answers calls of invocation %s, not %s", ErrInvalid, res.id, explicitID)
		}
		res.id = explicitID
	}
	if err := r.locate(sess, res); err != nil {
		return nil, err
	}
	return res, nil
}

// locate finds the invocation's first event, its first agent event and its
// user message, and counts its model calls. It looks at the whole session
// (without decoding the events of other invocations), which only resuming
// does.
//
// It is the one place that decides which invocations can be resumed: only
// those the runtime started. An invocation that the session does not hold,
// or that holds an event imported from a client-supplied history
// (event.Event.Imported), is refused with an error wrapping ErrInvalid:
// what a client wrote can never count as a step the runtime took, a call it
// made or a checkpoint it left.
func (r *Runner) locate(sess *session.Session, res *resumption) error {
	res.floor = -1
	for i, ev := range sess.InvocationEvents(res.id) {
		if ev.Imported() {
			return fmt.Errorf("%w: invocation %q of session %s was imported with the session's history; only invocations the runtime started can be resumed",
				ErrInvalid, res.id, sess.ID())
		}
		if res.floor < 0 {
			res.floor = i
		}
		if ev.LLMCall {
			res.llmCalls++
		}
		if ev.Author == event.AuthorUser {
			if res.userContent == nil {
				res.userContent = ev.Content
			}
		} else if res.first == "" {
			res.first = ev.Author
		}
	}
	if res.floor < 0 {
		return fmt.Errorf("%w: no invocation %q in session %s", ErrInvalid, res.id, sess.ID())
	}
	return nil
}

// pausedOnOwnCall reports whether author, in the invocation, made a
// pausing call that still waits for the client (the ledger of package
// agent decides): the invocation is paused, and the agent, though it
// cannot continue from the log, has nothing to continue.
func pausedOnOwnCall(sess *session.Session, invocationID, author string) bool {
	var evs []*event.Event
	branch, seen := "", false
	for _, ev := range sess.InvocationEvents(invocationID) {
		evs = append(evs, ev)
		if !seen && ev.Author == author {
			branch, seen = ev.Branch, true
		}
	}
	return seen && agent.StillWaiting(evs, author, branch)
}

// Resume continues an invocation that was interrupted (the process stopped
// while it ran) from what the session log holds, without a new message. It
// runs the agent that started the invocation in resume mode: workflow
// agents skip the sub-agents that had finished and continue the one they
// were running; an LLM agent runs only the function calls whose responses
// were not committed, then goes on with its model. An invocation of which
// only the message was stored starts as Run starts it, with the agent that
// keeps the conversation (the last that spoke, if it may). A paused invocation
// stays paused until its calls are answered through Run. An invocation that
// had finished yields nothing.
//
// Only an agent that resumes from the log (agent.Resumer: the LLM and
// workflow agents) can tell what it had done: an invocation started by
// another agent, once that agent has committed an event, cannot be resumed
// and Resume fails with an error wrapping ErrInvalid, running nothing;
// unless the agent is paused on a call of its own still waiting for the
// client, when Resume runs nothing and yields nothing.
//
// The model calls the invocation made before count against
// opts.MaxLLMCalls, as if it had not been interrupted. It fails with an
// error wrapping ErrInvalid, storing nothing, if the session has no such
// invocation. The iterator behaves as Run's; opts may
// be nil (its StateDelta and InvocationID are not used).
func (r *Runner) Resume(ctx context.Context, userID, sessionID, invocationID string, opts *RunOptions) iter.Seq2[*event.Event, error] {
	if opts == nil {
		opts = &RunOptions{}
	}
	return func(yield func(*event.Event, error) bool) {
		if invocationID == "" {
			yield(nil, fmt.Errorf("%w: no invocation id to resume", ErrInvalid))
			return
		}
		tree := r.Refresh(ctx)
		err := r.withSession(ctx, userID, sessionID, false, func(sess *session.Session) error {
			res := &resumption{id: invocationID, tree: tree}
			if err := r.locate(sess, res); err != nil {
				return err
			}
			if res.first == "" {
				// Nothing ran: start afresh with the agent a run of the
				// message picks, as the run that stored it did.
				res.first = selectAgent(tree, sess).Name()
			} else if r.withoutCheckpoints(tree) {
				return errNoCheckpoints(invocationID)
			} else if rs, ok := tree.Find(res.first).(agent.Resumer); !ok || !rs.ResumesFromLog() {
				if pausedOnOwnCall(sess, invocationID, res.first) {
					return nil // it stays paused until its call is answered
				}
				// Running it again could repeat what it had done.
				return fmt.Errorf("%w: agent %s cannot continue invocation %s from the session log (it is not an agent.Resumer)",
					ErrInvalid, res.first, invocationID)
			}
			r.invoke(ctx, tree, sess, nil, &RunOptions{Streaming: opts.Streaming, MaxLLMCalls: opts.MaxLLMCalls}, res, yield)
			return nil
		})
		if err != nil {
			yield(nil, err)
		}
	}
}
