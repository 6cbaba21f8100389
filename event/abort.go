package event

// ErrorCodeAborted is the error code of the events that close an aborted
// invocation (ADK's INVOCATION_ABORTED): the synthetic responses to the
// function calls it left unanswered or, when none was left, one event
// without content.
const ErrorCodeAborted = "INVOCATION_ABORTED"

// AbortMessage is the error message of an abort event and the "error" of
// each synthetic function response it carries, as ADK writes them; models
// see it in their history.
const AbortMessage = "Invocation was aborted by client."

// IsAbort reports whether ev closes an aborted invocation. Readers of a
// session's history recognize abort events by this rather than by their
// author, which is an agent.
func IsAbort(ev *Event) bool { return ev != nil && ev.ErrorCode == ErrorCodeAborted }
