package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/genai"

	"github.com/loomkit/loom/credential/oauth"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
)

// This file is the ledger of pending calls: the one place that decides
// which function calls pause an invocation, which answers a client may
// send, who an answer belongs to, and when it has been used (CONFORMANCE
// T2, T3).
//
// # Pausing calls
//
// A call pauses its invocation when an agent's event lists its id in
// LongRunningToolIDs: a long-running tool call, or one of the runtime's own
// requests to the client (adk_request_confirmation, adk_request_credential,
// and adk_request_input, a graph workflow node's request for input).
// Events authored by the user never pause anything, and neither do events
// imported from a client-supplied history (event.Event.Imported): they are
// data, so the calls they hold wait for no answer.
//
// An invocation stops where it pauses: the agent that made the call ends
// the invocation once the call is committed, and an agent resumed while
// its call still waits ([Waiting]) stays paused without asking again (see
// [Asked]). The runner, in process or on a durable engine, runs the agents
// until they stop; nothing else decides that an invocation paused.
//
// # Answers
//
// The client answers a pausing call with a function response of the same
// id in a user message. A confirmation or credential request is answered
// by its first response. A long-running tool may give interim responses
// itself (its own function response, such as {"status": "pending"}); the
// call stays pending until the client's response, which completes it. A
// response to a call that does not pause, that is not pending any more, or
// that the log does not hold is refused before anything is stored; so is
// an answer to a credential request that started an OAuth2 authorization
// whose state is not the request's (credential/oauth), which leaves the
// request pending.
//
// # Ownership and use
//
// A pausing call belongs to the agent that made it, on that agent's branch,
// in its invocation. An answer is delivered to that owner only
// ([Invocation.Answers]): no other agent of the tree sees it. The owner has
// used an answer as soon as it commits an event with content after it (the
// result of the approved tool, its next model response, an error), so a
// later pass of a loop, a later invocation or a restarted process never
// takes it for new; an event that only carries actions (state staged by a
// callback or a plugin, a checkpoint) does not use it. If the process
// stops between the answer and the owner's next such commit, the answer is
// delivered again when the invocation resumes.
//
// # Confirmations
//
// A confirmation or credential request names the call it is about
// ([OriginalCall]); the client's answer approves that call only if it says
// so explicitly ([ParseConfirmation]), and an approval given once holds for
// the rest of the invocation ([Approval]). A client that sees the waiting
// calls rather than the log (an A2A task) checks its replies against them
// with [CheckReplies].

// # Credentials
//
// The client's answer to a credential request never reaches the session
// log, and neither does a credential relayed through a confirmation: the
// request of an agent used as a tool whose paused child waits for a
// credential ([AsksCredential]), whose approval's payload is the child's
// answer. The runtime takes both out of the message before it is stored
// ([TakeCredentials]) and keeps them in the invocation's memory, from
// which the ledger delivers them to their owners ([Invocation.Answers]);
// the log holds {"status": "credential received"} for a credential, and
// {"confirmed": true} or {"confirmed": false} alone for such a
// confirmation. An invocation resumed after a restart has no credential:
// the tool asks again.

// ErrNotPending is wrapped by the errors of [Pending] for a message whose
// function responses do not answer pending calls of one agent branch.
var ErrNotPending = errors.New("agent: no pending call")

// PauseKind says why a call pauses its invocation.
type PauseKind uint8

// The kinds of pausing calls.
const (
	// PauseTool is a long-running tool call.
	PauseTool PauseKind = iota + 1
	// PauseConfirmation is a request to approve a tool call.
	PauseConfirmation
	// PauseCredential is a request for credentials a tool needs.
	PauseCredential
	// PauseInput is a graph workflow node's request for input from the
	// user (event.FunctionRequestInput).
	PauseInput
)

// lastKind is the last PauseKind.
const lastKind = PauseInput

// PendingCall is a function call that pauses its invocation.
type PendingCall struct {
	Call *genai.FunctionCall
	Kind PauseKind
	// InvocationID, Author and Branch say whose call it is: the agent that
	// made it owns it.
	InvocationID string
	Author       string
	Branch       string
	// CallIndex is the session index of the event that made the call.
	CallIndex int
}

// Answer is the client's answer to a pending call.
type Answer struct {
	PendingCall
	Response *genai.FunctionResponse
	// AnswerIndex is the session index of the user event that holds the
	// response.
	AnswerIndex int
}

// pauseKind returns how the call fc of ev pauses its invocation, or 0 when
// it does not.
func pauseKind(ev *event.Event, fc *genai.FunctionCall) PauseKind {
	if ev.Author == event.AuthorUser || fc.ID == "" || !slices.Contains(ev.LongRunningToolIDs, fc.ID) || ev.Imported() {
		return 0
	}
	switch fc.Name {
	case event.FunctionRequestConfirmation:
		return PauseConfirmation
	case event.FunctionRequestCredential:
		return PauseCredential
	case event.FunctionRequestInput:
		return PauseInput
	}
	return PauseTool
}

// completes reports whether a response in ev completes a call of kind k:
// any response answers a request to the client; only the client's
// completes a long-running tool call, whose own responses are interim.
func completes(k PauseKind, ev *event.Event) bool {
	return k != PauseTool || ev.Author == event.AuthorUser
}

// Pending checks the function responses of a client message against the
// session log and returns the pending calls they answer, in message order.
// It fails, with an error wrapping ErrNotPending, when a response answers
// no call of the log, a call that does not pause, one that is no longer
// pending, or one a rewind took back; when two responses of the message
// answer the same call; when an answer to a credential request that
// started an OAuth2 authorization does not carry the request's state
// (oauth.CheckAnswer); and when the calls answered belong to two
// invocations or two branches (the message is stored on the branch of its
// calls, where only their owners see it: each branch is answered in a
// message of its own).
func Pending(sess *session.Session, msg *genai.Content) ([]PendingCall, error) {
	var ids []string                              // in message order
	var wanted map[string]*genai.FunctionResponse // the same, as a set: a message may hold many parts
	for _, p := range msg.Parts {
		if p == nil || p.FunctionResponse == nil || p.FunctionResponse.ID == "" {
			continue
		}
		id := p.FunctionResponse.ID
		if wanted[id] != nil {
			return nil, fmt.Errorf("%w: the message answers call %q twice", ErrNotPending, id)
		}
		if wanted == nil {
			wanted = map[string]*genai.FunctionResponse{}
		}
		wanted[id] = p.FunctionResponse
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	found := make(map[string]PendingCall, len(ids))
	var later laterResponses
	left := len(ids)
	hidden := rewound(sess)
	// Only events that mention an answered call matter: those that make
	// it, and its responses.
	for i, ev := range sess.EventsMentioning(ids...) {
		if left == 0 {
			break
		}
		if hidden[i] {
			later.add(ev) // a rewound answer still answered its call
			continue
		}
		for _, fc := range ev.FunctionCalls() {
			if wanted[fc.ID] == nil {
				continue
			}
			if _, dup := found[fc.ID]; dup {
				continue
			}
			kind := pauseKind(ev, fc)
			switch {
			case kind == 0 && ev.Author == event.AuthorUser:
				continue // a call in a user message is data: look further back
			case kind == 0:
				return nil, fmt.Errorf("%w: function call %q (%s) does not wait for an answer", ErrNotPending, fc.ID, fc.Name)
			case later.complete(fc.ID, kind):
				return nil, fmt.Errorf("%w: function call %q (%s) was already answered", ErrNotPending, fc.ID, fc.Name)
			}
			found[fc.ID] = PendingCall{Call: fc, Kind: kind, InvocationID: ev.InvocationID, Author: ev.Author, Branch: ev.Branch, CallIndex: i}
			left--
		}
		later.add(ev)
	}
	out := make([]PendingCall, 0, len(ids))
	for _, id := range ids {
		pc, ok := found[id]
		if !ok {
			return nil, fmt.Errorf("%w: no pending function call with id %q", ErrNotPending, id)
		}
		if err := checkCredentialAnswer(pc, wanted[id]); err != nil {
			return nil, err
		}
		if len(out) > 0 {
			switch first := out[0]; {
			case pc.InvocationID != first.InvocationID:
				return nil, fmt.Errorf("%w: the message answers calls of two invocations (%s and %s)", ErrNotPending, first.InvocationID, pc.InvocationID)
			case pc.Branch != first.Branch:
				return nil, fmt.Errorf("%w: the message answers calls of two branches (%q and %q); answer each branch in a message of its own",
					ErrNotPending, first.Branch, pc.Branch)
			}
		}
		out = append(out, pc)
	}
	return out, nil
}

// checkCredentialAnswer checks an answer to a credential request that
// started an OAuth2 authorization (its auth config names a state): the
// answer must carry the authorization response with that state, or it is
// refused and the request stays pending (CONFORMANCE T19). The approval
// of a confirmation that relays such a request (AsksCredential) is checked
// the same way, its payload being the credential relayed; a rejection is
// not.
func checkCredentialAnswer(pc PendingCall, fr *genai.FunctionResponse) error {
	cred, answer := pc.Call, fr.Response
	switch pc.Kind {
	case PauseCredential:
	case PauseConfirmation:
		cred = relayedCredential(pc.Call)
		if cred == nil {
			return nil
		}
		conf := ParseConfirmation(fr.Response)
		if !conf.Confirmed {
			return nil
		}
		answer, _ = conf.Payload.(map[string]any)
	default:
		return nil
	}
	cfg, _ := cred.Args["authConfig"].(map[string]any)
	if err := oauth.CheckAnswer(cfg, answer); err != nil {
		return fmt.Errorf("%w: the answer to credential request %q is refused: %w", ErrNotPending, pc.Call.ID, err)
	}
	return nil
}

// ChildPauseKey is the key, in the payload of a confirmation request, of
// the record an agent used as a tool (tool/agenttool) leaves when the
// agent it runs pauses: {"invocationId", "events" (the child's log),
// "waiting" (the child's calls that wait for the client: id, name, args)}.
// The client's approval of the request answers the first waiting call with
// its payload.
const ChildPauseKey = "agentToolPause"

// maxRelayDepth bounds how deep [RelayedCall] chains are followed: agent
// tools inside agent tools, each pausing on the next.
const maxRelayDepth = 16

// RelayedCall returns the call of a paused child that the confirmation
// request fc relays to the client (the first waiting call of the record
// under [ChildPauseKey] in its payload), or nil when fc relays none.
func RelayedCall(fc *genai.FunctionCall) *genai.FunctionCall {
	if fc == nil || fc.Name != event.FunctionRequestConfirmation {
		return nil
	}
	conf, _ := fc.Args["toolConfirmation"].(map[string]any)
	payload, _ := conf["payload"].(map[string]any)
	rec, _ := payload[ChildPauseKey].(map[string]any)
	waiting, _ := rec["waiting"].([]any)
	if len(waiting) == 0 {
		return nil
	}
	w, _ := waiting[0].(map[string]any)
	id, _ := w["id"].(string)
	name, _ := w["name"].(string)
	if id == "" || name == "" {
		return nil
	}
	args, _ := w["args"].(map[string]any)
	return &genai.FunctionCall{ID: id, Name: name, Args: args}
}

// relayedCredential returns the credential request that the confirmation
// request fc relays, through as many paused agent tools as it takes, or
// nil.
func relayedCredential(fc *genai.FunctionCall) *genai.FunctionCall {
	for range maxRelayDepth {
		if fc = RelayedCall(fc); fc == nil || fc.Name == event.FunctionRequestCredential {
			return fc
		}
	}
	return nil
}

// AsksCredential reports whether the pausing call fc asks the client for a
// credential: a credential request, or a confirmation request relaying
// one from a paused agent used as a tool (its approval's payload is the
// credential). Its answer is kept out of the log ([TakeCredentials]).
func AsksCredential(fc *genai.FunctionCall) bool {
	return fc != nil && (fc.Name == event.FunctionRequestCredential || relayedCredential(fc) != nil)
}

// credentialReceived is what the log holds in place of the client's answer
// to a credential request.
var credentialReceived = map[string]any{"status": "credential received"}

// TakeCredentials takes the client's credentials out of msg, a message
// whose function responses answer calls (as [Pending] returned them), so
// that they never reach the session log or plugins: it returns the message
// to store and the answers taken, by call id, for
// [InvocationConfig.Credentials]. An answer to a credential request (or
// any response named adk_request_credential) is stored as {"status":
// "credential received"}; an answer to a confirmation that relays one
// (AsksCredential) as {"confirmed": bool} alone. msg is not modified; it
// is returned as is when it holds no credential.
func TakeCredentials(calls []PendingCall, msg *genai.Content) (*genai.Content, map[string]map[string]any) {
	if msg == nil {
		return nil, nil
	}
	var creds map[string]map[string]any
	var out *genai.Content
	for i, p := range msg.Parts {
		if p == nil || p.FunctionResponse == nil {
			continue
		}
		fr := *p.FunctionResponse
		var stored map[string]any
		switch {
		case fr.Name == event.FunctionRequestCredential:
			stored = event.CloneMap(credentialReceived)
		default:
			j := slices.IndexFunc(calls, func(pc PendingCall) bool { return pc.Call.ID == fr.ID })
			switch {
			case j < 0:
				continue
			case calls[j].Kind == PauseCredential:
				stored = event.CloneMap(credentialReceived)
			case calls[j].Kind == PauseConfirmation && relayedCredential(calls[j].Call) != nil:
				stored = map[string]any{"confirmed": ParseConfirmation(fr.Response).Confirmed}
			default:
				continue
			}
		}
		if out == nil {
			out = &genai.Content{Role: msg.Role, Parts: append([]*genai.Part(nil), msg.Parts...)}
			creds = map[string]map[string]any{}
		}
		creds[fr.ID] = event.CloneMap(fr.Response)
		fr.Response = stored
		out.Parts[i] = &genai.Part{FunctionResponse: &fr}
	}
	if out == nil {
		return msg, nil
	}
	return out, creds
}

// Waiting reports whether the pausing call id, of kind k, is still waiting
// for the client, given the events logged after the call.
func Waiting(after []*event.Event, k PauseKind, id string) bool {
	for _, ev := range after {
		if completes(k, ev) && slices.ContainsFunc(ev.FunctionResponses(), func(fr *genai.FunctionResponse) bool { return fr.ID == id }) {
			return false
		}
	}
	return true
}

// Asked reports whether evs (events of one invocation, oldest first) hold
// the pausing call id, and whether that call still waits for the client
// (see Waiting). An agent resumed before the answer that would make the
// call again, with the same id, stays paused instead: the call is made
// once, however often the invocation resumes.
func Asked(evs []*event.Event, id string) (asked, waiting bool) {
	for i, ev := range evs {
		calls, kinds := PausingCalls(ev)
		for j, fc := range calls {
			if fc.ID == id {
				return true, Waiting(evs[i+1:], kinds[j], id)
			}
		}
	}
	return false, false
}

// StillWaiting reports whether a pausing call that author made on branch,
// among evs (events of one invocation, oldest first), still waits for the
// client (see Waiting). An agent that made several pausing calls, in one
// model turn or in several, stays paused until the last is answered.
func StillWaiting(evs []*event.Event, author, branch string) bool {
	for i, ev := range evs {
		if ev.Author != author || ev.Branch != branch {
			continue
		}
		calls, kinds := PausingCalls(ev)
		for j, fc := range calls {
			if Waiting(evs[i+1:], kinds[j], fc.ID) {
				return true
			}
		}
	}
	return false
}

// FirstWaiting returns the index in sess of the oldest pausing call still
// waiting for the client (see Waiting), and whether there is one. Calls a
// rewind took back do not wait. Only the
// events that make a pausing call or answer a call are decoded: in a long
// session kept encoded (see session.Session.Trim) it costs a scan of
// bytes.
func FirstWaiting(sess *session.Session) (int, bool) {
	var later laterResponses
	first := -1
	hidden := rewound(sess)
	for i, ev := range sess.EventsMentioning("longRunningToolIds", "functionResponse") {
		if hidden[i] {
			later.add(ev)
			continue
		}
		calls, kinds := PausingCalls(ev)
		for j, fc := range calls {
			if !later.complete(fc.ID, kinds[j]) {
				first = i
			}
		}
		later.add(ev)
	}
	return first, first >= 0
}

// rewound returns the session indexes of the events a rewind took back
// (event.Visible): their calls pause nothing any more, and cannot be
// answered. A session without a rewind, the common case, costs a scan of
// bytes and gives nil.
func rewound(sess *session.Session) map[int]bool {
	some := false
	for _, ev := range sess.EventsMentioning("rewindBeforeInvocationId") {
		if some = ev.Actions.RewindBeforeInvocationID != ""; some {
			break
		}
	}
	if !some {
		return nil
	}
	hidden := make(map[int]bool)
	next := sess.Len() // the index above the last visible event seen
	for i := range event.Visible(sess) {
		for j := i + 1; j < next; j++ {
			hidden[j] = true
		}
		next = i
	}
	for j := 0; j < next; j++ {
		hidden[j] = true
	}
	return hidden
}

// laterResponses records the function responses of a log read newest
// first, so that on reaching a call it tells whether a response logged
// after the call completes it (see completes).
type laterResponses map[string]uint8 // by call id, a bit for each PauseKind completed

// add records the responses of ev.
func (r *laterResponses) add(ev *event.Event) {
	for _, fr := range ev.FunctionResponses() {
		if *r == nil {
			*r = laterResponses{}
		}
		for k := PauseTool; k <= lastKind; k++ {
			if completes(k, ev) {
				(*r)[fr.ID] |= 1 << k
			}
		}
	}
}

// complete reports whether a response recorded completes the call id of
// kind k.
func (r laterResponses) complete(id string, k PauseKind) bool { return r[id]&(1<<k) != 0 }

// PausingCalls returns the calls of ev that pause its invocation, with
// their kinds.
func PausingCalls(ev *event.Event) (calls []*genai.FunctionCall, kinds []PauseKind) {
	if len(ev.LongRunningToolIDs) == 0 {
		return nil, nil
	}
	for _, fc := range ev.FunctionCalls() {
		if k := pauseKind(ev, fc); k != 0 {
			calls, kinds = append(calls, fc), append(kinds, k)
		}
	}
	return calls, kinds
}

// openAnswers returns the answers of the invocation's log, from session
// index floor on, that their owners have not used yet.
func openAnswers(sess *session.Session, floor int, invocationID string) []Answer {
	var calls map[string]PendingCall
	var out []Answer
	n := sess.Len()
	for i := max(floor, 0); i < n; i++ {
		ev := sess.At(i)
		if ev.InvocationID != invocationID {
			continue
		}
		if ev.Author != event.AuthorUser {
			if len(out) > 0 {
				out = slices.DeleteFunc(out, func(a Answer) bool { return uses(ev, a.PendingCall) })
			}
			pausing, kinds := PausingCalls(ev)
			for j, fc := range pausing {
				if calls == nil {
					calls = map[string]PendingCall{}
				}
				calls[fc.ID] = PendingCall{Call: fc, Kind: kinds[j], InvocationID: ev.InvocationID, Author: ev.Author, Branch: ev.Branch, CallIndex: i}
			}
			continue
		}
		for _, fr := range ev.FunctionResponses() {
			if pc, ok := calls[fr.ID]; ok {
				out = append(out, Answer{PendingCall: pc, Response: fr, AnswerIndex: i})
				delete(calls, fr.ID) // answered once
			}
		}
	}
	return out
}

// uses reports whether ev uses the answers to the pending call pc: an
// event with content of the call's owner, in its invocation (see the
// ledger above).
func uses(ev *event.Event, pc PendingCall) bool {
	return ev.Content != nil && ev.Author == pc.Author && ev.Branch == pc.Branch && ev.InvocationID == pc.InvocationID
}

// Answers returns the client's answers to the current agent's pausing
// calls, on its branch, that it has not used yet (see the ledger above).
// Outside an invocation that resumes after answers it returns nil at no
// cost.
func (inv *Invocation) Answers() []Answer {
	all := inv.shared.answers
	if len(all) == 0 || inv.agent == nil {
		return nil
	}
	name := inv.agent.Name()
	var out []Answer
	sess := inv.Session()
	for _, a := range all {
		if a.Author != name || a.Branch != inv.branch {
			continue
		}
		used := false
		for i := a.AnswerIndex + 1; i < sess.Len() && !used; i++ {
			used = uses(sess.At(i), a.PendingCall)
		}
		if !used {
			out = append(out, a)
		}
	}
	return out
}

// DeliverAnswers records, for an invocation that resumes from session index
// floor, the answers of its log that their owners have not used; agents
// read theirs with [Invocation.Answers]. An answer the runtime kept out of
// the log ([InvocationConfig.Credentials]) is delivered as the client sent
// it. The runner calls it after storing the message that resumes the
// invocation.
func (inv *Invocation) DeliverAnswers(floor int) {
	answers := openAnswers(inv.Session(), floor, inv.ID())
	for i, a := range answers {
		// A credential the runtime kept out of the log is delivered from
		// memory (see "Credentials" above).
		if c, ok := inv.Credential(a.Call.ID); ok {
			fr := *a.Response
			fr.Response = c
			answers[i].Response = &fr
		}
	}
	inv.shared.answers = answers
}

// CheckReplies checks function responses a client sends against waiting,
// the pausing calls it was shown as waiting (an A2A task's status, before
// the reply reaches the log and [Pending]): it fails, with an error
// wrapping ErrNotPending, when a response answers no call of waiting or
// when two answer the same call.
func CheckReplies(waiting []*genai.FunctionCall, replies []*genai.FunctionResponse) error {
	answered := make(map[string]bool, len(replies))
	for _, fr := range replies {
		if !slices.ContainsFunc(waiting, func(fc *genai.FunctionCall) bool { return fc.ID == fr.ID }) {
			return fmt.Errorf("%w: no pending function call with id %q", ErrNotPending, fr.ID)
		}
		if answered[fr.ID] {
			return fmt.Errorf("%w: the message answers call %q twice", ErrNotPending, fr.ID)
		}
		answered[fr.ID] = true
	}
	return nil
}

// ArgOriginalCall is the argument of a confirmation or credential request
// that holds the call it is about, in ADK's form.
const ArgOriginalCall = "originalFunctionCall"

// OriginalCall returns the call a confirmation or credential request fc is
// about: the call that runs once the request is answered.
func OriginalCall(fc *genai.FunctionCall) (*genai.FunctionCall, error) {
	var orig genai.FunctionCall
	b, _ := json.Marshal(fc.Args[ArgOriginalCall])
	if err := json.Unmarshal(b, &orig); err != nil || orig.Name == "" {
		return nil, fmt.Errorf("%s request %q has no valid original function call", fc.Name, fc.ID)
	}
	return &orig, nil
}

// ParseConfirmation reads a client's answer to a confirmation request.
// Anything but an explicit {"confirmed": true} (or ADK's
// {"response": {"confirmed": true}}) is a rejection: the gate fails closed.
func ParseConfirmation(resp map[string]any) *event.ToolConfirmation {
	confirmed, _ := resp["confirmed"].(bool)
	if inner, ok := resp["response"].(map[string]any); ok && !confirmed {
		confirmed, _ = inner["confirmed"].(bool)
	}
	return &event.ToolConfirmation{Confirmed: confirmed, Payload: resp["payload"]}
}

// Approval returns the confirmation the client gave, among evs (events of
// one invocation, oldest first), for the call id: the answer to the latest
// confirmation request about that call, or nil. A tool that needs both an
// approval and a credential is not asked to be approved again when the
// credential arrives.
func Approval(evs []*event.Event, id string) *event.ToolConfirmation {
	requests := map[string]bool{} // confirmation requests about call id
	var approval *event.ToolConfirmation
	for _, e := range evs {
		if e.Author == event.AuthorUser {
			for _, fr := range e.FunctionResponses() {
				if requests[fr.ID] {
					approval = ParseConfirmation(fr.Response)
				}
			}
			continue
		}
		for _, fc := range e.FunctionCalls() {
			if fc.Name == event.FunctionRequestConfirmation {
				if orig, err := OriginalCall(fc); err == nil && orig.ID == id {
					requests[fc.ID] = true
				}
			}
		}
	}
	return approval
}
