// Package agent defines agents, the logic units of an ADK application, and
// the context they run in.
//
// An [Agent] is an open interface: anything with a name, a description and a
// Run method that yields events is an agent. The runner ranges over Run and
// commits every non-partial event to the session before the agent's yield
// returns, so code after a yield always sees the committed state of the event
// it yielded.
//
// [New] builds a custom agent from a function, with before/after-agent
// callbacks. The LLM agent lives in agent/llmagent, the workflow agents
// (sequential, parallel, loop) in agent/workflowagent.
//
// The package serves three kinds of callers; each needs only its part.
//
// # Writing agents, callbacks and tools
//
// An agent author needs [Agent] (and [Parent], [TransferPolicy] for trees),
// [New] with [Config] for a custom agent, the callback types gathered in
// [Callbacks], and the [Invocation] an agent runs in: its ID, Agent, Branch,
// Session, UserContent, RunConfig, Artifacts, Memory and Credential, its
// NewEvent for the events it yields, and End and Ended to stop the
// invocation. Callbacks and tools see the invocation through a
// [CallbackContext] (state, artifacts, memory, actions, confirmation and
// credential requests). [RunConfig] holds per-run settings; [ErrLLMCallLimit],
// [ErrNoService] and [PanicError] are the errors an agent may meet.
//
// # Composing agents
//
// An agent that runs others (the workflow agents, a graph workflow) also
// uses: [Invocation.For], [Invocation.WithBranch] and [Invocation.ForBranch]
// to hand the invocation to a child; [RunWithCallbacks] to run a child with
// its callbacks; [Concurrently], [Safely] and [Relay] to run user code at
// once with one panic policy; and, to continue a paused or interrupted
// invocation, [Resumer], [CheckpointResumer], [ResumeEvents], [Checkpoint],
// [NewCheckpoint], [NewEndOfAgent], [StateInt] and the Invocation's
// Resumable, Resuming, ResumeFrom, ResumeChild, Fresh and WithEndScope.
// [Invocation.Answers] gives an agent the client's answers to its own
// pausing calls; [NewToolContext], [NewResumedToolContext] and
// [NewCallbackContext] build the contexts an agent that runs tools or
// callbacks hands them; [Invocation.CountLLMCall] and
// [Invocation.CheckStoredCalls] belong to an agent that calls a model.
//
// # Building a runtime
//
// The runner, servers and durable engines use the rest, which no agent
// calls: [NewInvocation] with [InvocationConfig] starts an invocation (a
// test of a tool or callback may start one too),
// [Invocation.DeliverAnswers] hands it the answers it resumes with,
// [PendingArtifacts] keeps its artifact versions until their events are
// committed, and [NeedsCheckpoints] and [ResolveMaxLLMCalls] read the tree
// and the environment.
//
// # The ledger of pending calls
//
// One file, pending.go, decides which calls pause an invocation, which
// replies answer them and who may send them. Runtimes and clients ask it
// before a reply is stored ([Pending], [CheckReplies]) and to find what
// still waits ([FirstWaiting], [PausingCalls], [Waiting]); an agent that
// pauses asks it on resuming ([Asked], [StillWaiting], [OriginalCall],
// [ParseConfirmation], [Approval]). Its values are [PendingCall], [Answer]
// and [PauseKind].
package agent
