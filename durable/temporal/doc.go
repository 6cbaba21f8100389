// Package temporal runs Loom invocations as Temporal workflows, so that an
// invocation survives the death of the process that runs it, retries across
// machines, and waits for a human for as long as it takes.
//
// # Design
//
// There is one workflow per session (its id is [Client.WorkflowID]: a
// prefix of the deployment's, the app, the user and the session). Each user message is a signal to it, started with the
// workflow if none runs; the workflow handles the session's messages one
// after the other, as a runner serializes the invocations of a session.
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
//   - an activity (Step) runs the invocation on a worker's runner until the
//     next model turn that calls tools, or the next tool round, is
//     committed, and returns; the next Step resumes the invocation from the
//     log (runner.Runner.Resume). Every model call and every tool round is
//     thus one activity, with Temporal's retry policy, timeouts and
//     heartbeats (sent every event and on a timer while a long tool runs);
//   - every event is written through the session service by the runner
//     inside the activity, exactly once: a retried Step finds what its
//     failed attempt committed and resumes after it, and a message is
//     stored once because the workflow records where the log ended before
//     the message (the Mark activity) and the Step that finds events past
//     that point resumes the invocation they belong to instead of storing
//     the message again; the session service refuses duplicate event ids;
//   - the session log stays the source of truth: the HTTP API, the dev UI
//     and in-process runners read it as they always do.
//
// The activities read only what they need from the session log, so that a
// turn late in a long conversation costs no more than an early one: Mark
// reads no event (the log's length is the last sequence number), and a Step
// reads the events from the message's floor on, or from the first call
// still waiting for the client if one of an earlier message does
// (session.GetOptions.AfterSeq). The workflow carries that point from
// message to message: a call answered stays answered, so no call before it
// can wait again. The first message a workflow handles reads the log once
// in full to find it. The runner keeps its copy of the session between
// Steps and loads only what was appended (session.Service.Refresh).
//
// The model-call limit of a message (runner.RunOptions.MaxLLMCalls) is
// passed to every Step of its invocation, and the runner counts the calls
// earlier Steps made from the log, so it holds as in process; exceeding it
// ends the invocation with a non-retryable error that [Client.Run] returns
// wrapping agent.ErrLLMCallLimit.
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
// long-running tool, a workflow node waiting for human input) ends its Step
// with calls pending; the workflow then waits, durably and for as long as
// it takes, for the next message signal. The client answers through Loom's
// normal HTTP API (a /run_sse request whose message carries the function
// response): the server, configured with a [Client], signals the message,
// and the runner resumes the paused invocation with it as it would in
// process.
//
// # Streaming and cancellation
//
// [Client.Run] signals the message, then reads the session log and yields
// each committed event of the message's invocation as it appears, until
// the workflow reports the message handled. Partial (streaming) events are
// not forwarded: they are never committed. [Client.Cancel] cancels the
// session's workflow: the running activity is cancelled through its
// heartbeat, and queued messages of that session are dropped.
//
// # Versioning
//
// The workflow records, at its start, a hash of the structure of the agent
// tree of the process that started it ([TreeHash]: agents' names, types,
// descriptions, sub-agents and tool names). Every activity compares it with
// its worker's tree and refuses, with a non-retryable error naming both
// hashes, to advance an invocation with a different tree: the request
// fails and the workflow ends with that error. A session whose tree
// changed continues with a new workflow started by the next message. The
// workflow code itself holds no agent logic, so a changed agent tree never
// makes a workflow replay diverge silently.
package temporal
