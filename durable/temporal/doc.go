// Package temporal runs Loom invocations as Temporal workflows, so that an
// invocation survives the death of the process that runs it, retries across
// machines, and waits for a human for as long as it takes.
//
// # Design
//
// There is one workflow per session (its id is [Client.WorkflowID]: a
// prefix of the deployment's, the app, the user and the session). Each user
// message is a run update ([UpdateRun]) to it, which starts the workflow
// if none runs (update-with-start); the workflow handles the session's
// messages one after the other, as a runner serializes the invocations of
// a session, and answers each update with its message's [Status] once the
// message's invocation ended or paused.
//
// The agent tree does not run in workflow code. Agents are ordinary Go: they
// start goroutines (parallel agents, tool calls of one turn), read the
// clock and call the network, none of which may happen in a workflow. The
// Loom session log, on the other hand, is already a checkpoint log: the
// runner commits every event before the agent goes on, and
// runner.Runner.Resume continues an interrupted invocation from what was
// committed, running no tool call whose response was committed. So the
// workflow is the durable state machine and the session log is its state:
//
//   - a message's turn is one local activity (Turn), run by the worker that
//     took the workflow task of the update, in that task: the worker runs
//     the invocation on its runner until it ends or pauses, and the task
//     completes with the update's answer. A turn costs the workflow one
//     workflow task and no activity task; the worker renews the task while
//     a long turn runs, so a worker that dies is noticed when the task
//     times out (Options.HeartbeatTimeout) and another worker takes the
//     turn over;
//   - every event is written through the session service by the runner
//     inside the turn, exactly once: a turn taken over, or retried,
//     resumes the invocation from what its failed attempt committed, and a
//     message is stored once: it is stored under an event id made from its
//     request id (runner.RunOptions.MessageID), which the session holds
//     once, and a turn that finds that id in the log, which it reads from
//     an index at or before which the message goes (the larger of where
//     the previous message left the log and where the log ended when the
//     client admitted the message), resumes that invocation instead of
//     storing the message again. Another message stored meanwhile (by the
//     session's previous workflow, or in process) is never taken for it;
//   - the session log stays the source of truth: the HTTP API, the dev UI
//     and in-process runners read it as they always do.
//
// A turn reads only what it needs from the session log, so that a turn
// late in a long conversation costs no more than an early one: it reads the
// events from the message's floor on, or from the first call still waiting
// for the client if one of an earlier message does
// (session.GetOptions.AfterSeq). The workflow carries that point from
// message to message: a call answered stays answered, so no call before it
// can wait again. The first message a workflow handles reads the log once
// in full to find it. The runner keeps its copy of the session between
// turns and loads only what was appended (session.Service.Refresh).
//
// The model-call limit of a message (runner.RunOptions.MaxLLMCalls) holds
// as in process, also across a turn taken over (the runner counts the calls
// committed before); exceeding it ends the invocation with a non-retryable
// error that [Client.Run] returns wrapping agent.ErrLLMCallLimit.
//
// A tool call that was running when its worker died runs again on another
// worker (its response was not committed); one that completed and was
// committed never runs again. Tools with side effects should therefore
// make them at the end of the call, or be idempotent, as with any
// at-least-once executor.
//
// # Pauses
//
// An invocation that pauses (a tool confirmation, a credential request, a
// long-running tool, a workflow node waiting for human input) ends its turn
// with calls pending; the workflow then waits, durably and for as long as
// it takes, for the next message. The client answers through Loom's normal
// HTTP API (a /run_sse request whose message carries the function
// response): the server, configured with a [Client], sends the message,
// and the runner resumes the paused invocation with it as it would in
// process.
//
// # Streaming and cancellation
//
// A turn publishes every event its runner yields, partial ones included
// when the request asks for streaming, to the client of its message as it
// is yielded, without the client reading the session log. When the client
// waits in the worker's process, [Client.Run] subscribes to its message
// in a small in-process exchange before it sends it. When it waits in
// another process, its feed listener (ClientConfig.FeedAddr) takes the
// events: the message names the listener and carries a random token of
// its turn's own; the worker opens one HTTP stream per turn to the
// listener and sends the events on it; the listener accepts the stream
// only with that token (compared in constant time), one per turn, only
// while the client waits, and bounds its bytes, its events, its silence
// and the streams it reads at once. The token is in the workflow's
// history, as the message is. Pushing never holds the turn up: a stream
// that cannot keep up drops what follows, and a listener that is gone or
// unreachable is given up on. The session log stays the source of truth:
// when the update answers, the client reads the turn's committed events
// from the log, from the message on, if the feed did not bring them all
// (a stream dropped or refused, a turn taken over, no listener), and
// yields those it had not yielded, so that each committed event reaches
// it once, in log order; partial events are never committed, so only the
// feed brings them. A client without a listener may set ClientConfig.Poll
// to read the log meanwhile.
//
// [Client.Cancel] cancels the session's workflow: the running turn's
// context is cancelled when the workflow learns of it, at the worker's
// next renewal of its workflow task at the latest, and queued messages of
// that session are answered with the cancellation. Only that aborts the
// invocation: a worker that shuts down, or an attempt that outlives
// Options.StepTimeout, stops its run without aborting it
// (runner.ErrDetached), and the turn's next attempt resumes it.
//
// # Versioning
//
// The workflow records, at its start, a hash of the structure of the agent
// tree of the process that started it ([TreeHash]: agents' names, types,
// descriptions, sub-agents and tool names). Every turn compares it with
// its worker's tree and refuses, with a non-retryable error naming both
// hashes, to advance an invocation with a different tree: the request
// fails and the workflow ends with that error. A session whose tree
// changed continues with a new workflow started by the next message. The
// workflow code itself holds no agent logic, so a changed agent tree never
// makes a workflow replay diverge silently.
//
// A session workflow whose history predates the run update (it took its
// messages as signals and ran each message as a Mark activity and Step
// activities, one per model call or tool round; its history holds no
// "loom.turns" version marker) goes on with that code, so that its replay
// matches its history, and takes run updates as it took signals, until it
// ends or continues as new as a workflow of today's kind: a session paused
// before an upgrade is answered after it.
package temporal
