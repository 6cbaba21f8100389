// Package event defines Event, the unit of everything an agent run produces,
// and Actions, the side effects and control signals an event carries.
//
// A session is an append-only log of events; a run is a stream of them. An
// event embeds a [model.Response] (content, partial, usage, errors and the other
// LLM-response fields) and adds its identity (ID, InvocationID, Author,
// Timestamp, Branch), its [Actions], and the ids of long-running tool calls.
//
// # Wire format
//
// Events encode to ADK's JSON: camelCase keys, response fields flattened at
// the top level, timestamps as float seconds, and an actions object that
// always carries its four maps. Decoding also accepts snake_case keys and
// URL-safe base64 (see [Event.UnmarshalJSON]).
//
// # Stored form
//
// The runtime keeps marks of its own on events, which it needs when an
// invocation resumes and ADK never writes: [Event.LLMCall], the
// long-running calls already started ([MetadataStartedCalls]) and the
// authentication codes of function calls ([MetadataCallMAC]). They are
// kept in storage only. [Event.MarshalJSON] (and so json.Marshal) writes
// the wire form, without them: what servers, streams, A2A messages,
// evaluation results and the command line send. Session stores write the
// stored form with [Event.MarshalStored] or [Event.AppendStored]: the wire
// form whose "customMetadata" also holds the marks. [Decoder] and
// [Event.UnmarshalJSON] read both; [AppendStoredAsWire] turns a stored
// encoding into the wire one. The mark of imported events
// ([MetadataImported]) is kept in both forms.
//
// # Model history
//
// [ModelView] applies compaction and rewind to a session log, and [History]
// turns a log into the contents an agent sends to its model.
package event

import (
	"crypto/rand"
	"encoding/json"
	"maps"
	"sync"
	"time"

	"github.com/google/uuid"
	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
)

// Event is one immutable record of an agent run: user input, model output, a
// tool call or result, a state change, a control signal or an error.
//
// Once an event has been committed to a session it must not be modified.
type Event struct {
	model.Response

	// ID is the event's unique id (a UUID v4 string).
	ID string
	// InvocationID identifies the invocation (one user turn) the event belongs to.
	InvocationID string
	// Author is "user" or the name of the agent that produced the event.
	Author string
	// Branch is the agent-tree path, such as "root.child", that isolates
	// parallel branches of one invocation.
	Branch string
	// Timestamp is the wall-clock time the event was created.
	Timestamp time.Time
	// Actions holds the event's side effects and control signals.
	Actions Actions
	// LongRunningToolIDs lists the ids of long-running or gated tool calls in
	// this event. A non-empty list pauses the invocation.
	LongRunningToolIDs []string
	// Output is the value a graph workflow node produced, recorded on the
	// event that ends the node (JSON "output").
	Output any
	// NodeInfo says where in a graph workflow the event came from (JSON
	// "nodeInfo"); nil outside graph workflows.
	NodeInfo *NodeInfo
	// IsolationScope is ADK 2's isolation scope (JSON "isolationScope"):
	// the function call or graph node whose events an agent sees apart
	// from the rest of the session. Loom keeps it as data: it writes it
	// back as it was read and does not filter history by it.
	IsolationScope string
	// Unknown holds the top-level fields of a decoded event that Loom does
	// not model (such as those of a later ADK), each as the JSON it was
	// read as, under the key it was read under. They are encoded back, after
	// the known fields, so that nothing a client or another ADK wrote is
	// lost. A key that names a known field is ignored when encoding.
	Unknown map[string]json.RawMessage
	// LLMCall marks the event built from the response of one model call:
	// when an invocation resumes, these events are what its model call
	// limit counts. It is kept in storage only (see "Stored form" in the
	// package documentation): the stored form writes it as the entry
	// "llmCall": true of "customMetadata" (MetadataLLMCall), decoding that
	// entry sets LLMCall and leaves it out of CustomMetadata, and the wire
	// form, which ADK never has the entry in, leaves it out.
	LLMCall bool
}

// MetadataLLMCall is the "customMetadata" key that carries Event.LLMCall
// in the stored form, with the value true. The key is the runtime's: the
// wire form leaves it out whatever its value.
const MetadataLLMCall = "llmCall"

// MetadataStartedCalls is the "customMetadata" key of an LLM agent's event
// that records long-running tool calls whose tools ran and returned
// nothing yet (a list of call ids): their call is not run again when the
// invocation resumes after a crash, while it waits for the client. The
// key is the runtime's and kept in storage only: the wire form leaves it
// out.
const MetadataStartedCalls = "startedCalls"

// MetadataImported is the "customMetadata" key, with the value true, that
// the runtime sets on each event of a history a client supplied (see
// runner.Runner.CreateSession). An imported event is data, never
// authority: none of its calls pauses an invocation or waits for an
// answer, and an invocation holding one cannot be resumed. A client cannot
// leave it out: the runtime sets it on every event it imports. Unlike the
// runtime's other marks it is on the wire too, where it tells a client which
// events of a session were supplied as data.
const MetadataImported = "loomImported"

// Imported reports whether the runtime imported ev from a client-supplied
// history (MetadataImported).
func (e *Event) Imported() bool {
	v, _ := e.CustomMetadata[MetadataImported].(bool)
	return v
}

// MarkImported marks ev as imported (MetadataImported) and drops the
// runtime's own records (LLMCall, MetadataStartedCalls, MetadataCallMAC):
// a client-supplied event can claim none of what the runtime did. It
// writes a new map, so that a map ev shares with another event is not
// changed.
func (e *Event) MarkImported() {
	e.LLMCall = false
	m := make(map[string]any, len(e.CustomMetadata)+1)
	for k, v := range e.CustomMetadata {
		if !runtimeMark(k) {
			m[k] = v
		}
	}
	m[MetadataImported] = true
	e.CustomMetadata = m
}

// runtimeMark reports whether k is a custom-metadata key the runtime keeps
// for itself, in the stored form only: the records of what it did.
func runtimeMark(k string) bool {
	return k == MetadataLLMCall || k == MetadataStartedCalls || k == MetadataCallMAC
}

// StartedCalls returns the call ids ev records under MetadataStartedCalls.
func (e *Event) StartedCalls() []string {
	switch v := e.CustomMetadata[MetadataStartedCalls].(type) {
	case []string:
		return v
	case []any:
		ids := make([]string, 0, len(v))
		for _, x := range v {
			if id, ok := x.(string); ok {
				ids = append(ids, id)
			}
		}
		return ids
	}
	return nil
}

// metadata returns the custom metadata the event has in the stored form
// (stored) or on the wire. The stored form is CustomMetadata with the
// LLMCall mark added; the wire form is CustomMetadata without the
// runtime's reserved keys (MetadataLLMCall, MetadataStartedCalls,
// MetadataCallMAC). Either
// is a copy when it differs from CustomMetadata, which is never changed.
func (e *Event) metadata(stored bool) map[string]any {
	m := e.CustomMetadata
	if !stored {
		if len(m) == 0 {
			return m
		}
		marked := false
		for k := range m {
			if runtimeMark(k) {
				marked = true
				break
			}
		}
		if !marked {
			return m
		}
		w := make(map[string]any, len(m))
		for k, v := range m {
			if !runtimeMark(k) {
				w[k] = v
			}
		}
		return w
	}
	if !e.LLMCall {
		return m
	}
	if v, _ := m[MetadataLLMCall].(bool); v {
		return m
	}
	w := make(map[string]any, len(m)+1)
	maps.Copy(w, m)
	w[MetadataLLMCall] = true
	return w
}

// liftLLMCall moves a decoded LLMCall mark out of CustomMetadata, a map
// the decoder just made.
func (e *Event) liftLLMCall() {
	if v, _ := e.CustomMetadata[MetadataLLMCall].(bool); !v {
		return
	}
	e.LLMCall = true
	if len(e.CustomMetadata) == 1 {
		e.CustomMetadata = nil
	} else {
		delete(e.CustomMetadata, MetadataLLMCall)
	}
}

// NodeInfo locates an event in a graph workflow, in ADK's wire shape.
type NodeInfo struct {
	// Path is the node's path: the workflow's name, then each node as
	// name@run, separated by "/", such as "triage/classify@1".
	Path string `json:"path"`
	// OutputFor lists the node paths whose output the event's Output is.
	OutputFor []string `json:"outputFor,omitempty"`
	// MessageAsOutput reports that the event's content is the node's output.
	MessageAsOutput bool `json:"messageAsOutput,omitempty"`
}

// Actions is the control channel of an event.
type Actions struct {
	// SkipSummarization marks a tool result as final: the model is not asked
	// to summarize it.
	SkipSummarization bool
	// StateDelta holds state updates applied when the event is committed. A
	// nil value removes the key.
	StateDelta map[string]any
	// ArtifactDelta maps artifact names to the versions saved by this event.
	ArtifactDelta map[string]int64
	// TransferToAgent hands control to the named agent.
	TransferToAgent string
	// Escalate asks the enclosing workflow to stop (it ends a loop agent).
	Escalate bool
	// RequestedAuthConfigs maps function-call ids to requested auth configs.
	RequestedAuthConfigs map[string]any
	// RequestedToolConfirmations maps function-call ids to confirmation requests.
	RequestedToolConfirmations map[string]ToolConfirmation
	// Compaction marks a summary event that replaces a range of earlier events.
	Compaction *Compaction
	// EndOfAgent reports that the authoring agent has finished.
	EndOfAgent bool
	// AgentState is a free-form checkpoint of the authoring agent.
	AgentState map[string]any
	// RewindBeforeInvocationID rewinds the session to just before that invocation.
	RewindBeforeInvocationID string
	// Route is the route a graph workflow node chose (JSON "route"): a
	// string, a number, a bool, or a list of them, as in ADK 2. The edges
	// whose route matches it are taken.
	Route any
	// RenderUIWidgets lists UI widgets for the client to render (JSON
	// "renderUiWidgets"), each as ADK 2 writes it; Loom keeps them as data.
	RenderUIWidgets []any
	// SetModelResponse is the structured output an agent set as its model
	// response (JSON "setModelResponse"), as in ADK 2.
	SetModelResponse any
	// Unknown holds the fields of decoded actions that Loom does not model,
	// kept and encoded back as Event.Unknown is.
	Unknown map[string]json.RawMessage
}

// ToolConfirmation is a request for, or an answer to, a human confirmation of
// a tool call.
type ToolConfirmation struct {
	// Hint explains to the person what is being confirmed.
	Hint string `json:"hint"`
	// Confirmed reports the person's decision.
	Confirmed bool `json:"confirmed"`
	// Payload carries optional structured data with the answer.
	Payload any `json:"payload,omitempty"`
}

// Compaction describes a summary that replaces the events whose timestamps
// lie in [Start, End].
type Compaction struct {
	Start   time.Time
	End     time.Time
	Content *genai.Content
}

// Author of events that carry the user's input.
const AuthorUser = "user"

// NewID returns a new event id: a random UUID v4 string.
func NewID() string { return newUUID("") }

// NewInvocationID returns a new invocation id: "e-" followed by a UUID v4.
func NewInvocationID() string { return newUUID("e-") }

// NewCallID returns a new id for a function call that came without one:
// GeneratedCallIDPrefix followed by a UUID v4.
func NewCallID() string { return newUUID(GeneratedCallIDPrefix) }

// newUUID returns prefix followed by a random UUID v4 in its canonical
// form. Ids are made on every event: those of the runtime's prefixes are
// made idBatch at a time, in one string they share.
func newUUID(prefix string) string {
	var pool *sync.Pool
	switch prefix {
	case "":
		pool = &idPools[0]
	case "e-":
		pool = &idPools[1]
	case GeneratedCallIDPrefix:
		pool = &idPools[2]
	default:
		var buf [idBatch * 64]byte
		return string(appendUUIDs(buf[:0], prefix, 1))
	}
	b, _ := pool.Get().(*idRun)
	if b == nil {
		b = &idRun{}
	}
	if b.rest == "" {
		var buf [idBatch * (len(GeneratedCallIDPrefix) + 36)]byte
		b.rest, b.width = string(appendUUIDs(buf[:0], prefix, idBatch)), len(prefix)+36
	}
	id := b.rest[:b.width]
	b.rest = b.rest[b.width:]
	pool.Put(b)
	return id
}

// idBatch is how many ids of one prefix are made at once.
const idBatch = 16

// idPools hold the runs of ids not handed out yet, by prefix.
var idPools [3]sync.Pool

// idRun is a run of ids of one prefix, each width bytes, in one string.
type idRun struct {
	rest  string
	width int
}

// appendUUIDs appends n ids: prefix followed by a random UUID v4 in its
// canonical form.
func appendUUIDs(dst []byte, prefix string, n int) []byte {
	var random [idBatch * 16]byte
	if _, err := rand.Read(random[:16*n]); err != nil {
		panic(err) // as uuid.NewString does: crypto/rand never fails
	}
	const hexDigits = "0123456789abcdef"
	for k := range n {
		var u uuid.UUID
		copy(u[:], random[16*k:])
		u[6] = u[6]&0x0f | 0x40 // version 4
		u[8] = u[8]&0x3f | 0x80 // variant RFC 4122
		dst = append(dst, prefix...)
		for i, b := range u {
			if i == 4 || i == 6 || i == 8 || i == 10 {
				dst = append(dst, '-')
			}
			dst = append(dst, hexDigits[b>>4], hexDigits[b&0x0f])
		}
	}
	return dst
}

// Now returns the current time truncated to microseconds, the precision that
// survives the float-seconds wire encoding unchanged.
func Now() time.Time { return time.Now().Truncate(time.Microsecond) }

// New returns an event with a fresh id and the current time.
func New(invocationID, author string) *Event {
	return &Event{ID: NewID(), InvocationID: invocationID, Author: author, Timestamp: Now()}
}

// NewUserText returns a user event whose content is the given text.
func NewUserText(invocationID, text string) *Event {
	e := New(invocationID, AuthorUser)
	e.Content = genai.NewContentFromText(text, genai.RoleUser)
	return e
}

// NewModelText returns an event by author whose content is model text.
func NewModelText(invocationID, author, text string) *Event {
	e := New(invocationID, author)
	e.Content = genai.NewContentFromText(text, genai.RoleModel)
	return e
}

// FunctionCalls returns the function calls in the event's content, in order.
func (e *Event) FunctionCalls() []*genai.FunctionCall {
	if e == nil || e.Content == nil {
		return nil
	}
	var calls []*genai.FunctionCall
	for _, p := range e.Content.Parts {
		if p != nil && p.FunctionCall != nil {
			calls = append(calls, p.FunctionCall)
		}
	}
	return calls
}

// FunctionResponses returns the function responses in the event's content, in order.
func (e *Event) FunctionResponses() []*genai.FunctionResponse {
	if e == nil || e.Content == nil {
		return nil
	}
	var resps []*genai.FunctionResponse
	for _, p := range e.Content.Parts {
		if p != nil && p.FunctionResponse != nil {
			resps = append(resps, p.FunctionResponse)
		}
	}
	return resps
}

// HasTrailingCodeResult reports whether the last part of the content is a
// code-execution result.
func (e *Event) HasTrailingCodeResult() bool {
	if e == nil || e.Content == nil || len(e.Content.Parts) == 0 {
		return false
	}
	last := e.Content.Parts[len(e.Content.Parts)-1]
	return last != nil && last.CodeExecutionResult != nil
}

// IsFinalResponse reports whether the event is a final response of an agent:
// one that the caller should show as the answer rather than an intermediate
// step. It is true when the tool result is final (SkipSummarization), when
// the event pauses on long-running tool calls, or when the event has no
// function calls or responses, is not partial and does not end with a code
// execution result.
func (e *Event) IsFinalResponse() bool {
	if e.Actions.SkipSummarization || len(e.LongRunningToolIDs) > 0 {
		return true
	}
	if e.Content == nil {
		return !e.Partial
	}
	for _, p := range e.Content.Parts {
		if p != nil && (p.FunctionCall != nil || p.FunctionResponse != nil) {
			return false
		}
	}
	return !e.Partial && !e.HasTrailingCodeResult()
}
