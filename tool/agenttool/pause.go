package agenttool

import (
	"context"
	"encoding/json"
	"fmt"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/session"
)

// This file lets the agent behind a tool pause (a workflow node asking for
// input, a confirmation or a long-running call inside it, a remote agent
// waiting for input) and resume once, as a pause of the caller's call.
//
// When the child's run ends with pausing calls still waiting, the tool asks
// for a confirmation of its own call (tool.Context.RequestConfirmation),
// whose payload holds the child's log and the calls it waits on: the
// caller's agent commits that request, its invocation pauses, and the
// ledger of pending calls (agent/pending.go) decides, as for any
// confirmation, which answer is the client's and that it is used once. An
// approval runs the call again: the tool rebuilds the child's session from
// the log the request holds (which the caller's runner stored, not the
// client), adds the client's payload as the answer to the first waiting
// call and resumes the child's invocation. A rejection does not run it.
// Since the log lives in the caller's session, this works as well from a
// new runner over the same store after a restart.

// PauseKey is the key, in the payload of the confirmation request that
// pauses an agent tool's call, of what the child left: {"invocationId",
// "events" (the child's log, in the wire form), "waiting" (the calls it
// waits on: id, name, args)}.
// It is the ledger's agent.ChildPauseKey: the ledger knows a request that
// relays a child's credential request by it, and keeps the client's
// credential out of the log (agent.TakeCredentials).
const PauseKey = agent.ChildPauseKey

// waitingCall is a pausing call of the child that waits for the client.
type waitingCall struct {
	ID   string         `json:"id"`
	Name string         `json:"name"`
	Args map[string]any `json:"args,omitempty"`
}

// pauseRecord is what a paused child leaves in the request's payload.
type pauseRecord struct {
	InvocationID string            `json:"invocationId"`
	Events       []json.RawMessage `json:"events"`
	Waiting      []waitingCall     `json:"waiting"`
}

// waiting returns the pausing calls of evs (a child's log) that still wait
// for the client, and the invocation of the first, when the child ended
// paused on them: a child that answered after its last waiting call (an
// application that is not resumable hands a long-running call's interim
// result back to the model, which goes on) did not pause.
func waiting(evs []*event.Event) (calls []waitingCall, invocationID string) {
	last := -1
	for i, ev := range evs {
		pausing, kinds := agent.PausingCalls(ev)
		for j, fc := range pausing {
			if agent.Waiting(evs[i+1:], kinds[j], fc.ID) {
				if invocationID == "" {
					invocationID = ev.InvocationID
				}
				calls = append(calls, waitingCall{ID: fc.ID, Name: fc.Name, Args: fc.Args})
				last = i
			}
		}
	}
	for _, ev := range evs[last+1:] {
		if last >= 0 && ev.IsFinalResponse() && model.Text(ev.Content, "") != "" {
			return nil, ""
		}
	}
	return calls, invocationID
}

// pausePayload builds the confirmation payload of a paused child.
func pausePayload(evs []*event.Event, calls []waitingCall, invocationID string) (map[string]any, error) {
	rec := pauseRecord{InvocationID: invocationID, Waiting: calls}
	for _, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			return nil, err
		}
		rec.Events = append(rec.Events, b)
	}
	v, err := event.JSONForm(rec)
	if err != nil {
		return nil, err
	}
	return map[string]any{PauseKey: v}, nil
}

// pauseHint is the text shown with the request: what the child asks.
func pauseHint(agentName string, c waitingCall) string {
	if msg, ok := c.Args["message"].(string); ok && msg != "" {
		return msg
	}
	if c.Name == event.FunctionRequestConfirmation {
		if conf, ok := c.Args["toolConfirmation"].(map[string]any); ok {
			if hint, ok := conf["hint"].(string); ok && hint != "" {
				return hint
			}
		}
	}
	return fmt.Sprintf("The %s agent waits for an answer to %s.", agentName, c.Name)
}

// storedPause finds, in the caller's invocation, the latest confirmation
// request about call id that holds a paused child, and decodes it.
func storedPause(parent *agent.Invocation, id string) (*pauseRecord, []*event.Event, bool) {
	if parent == nil || parent.Session() == nil {
		return nil, nil, false
	}
	sess := parent.Session()
	for i := sess.Len() - 1; i >= 0; i-- {
		ev := sess.At(i)
		if ev.InvocationID != parent.ID() || ev.Author == event.AuthorUser || ev.Imported() {
			continue // only the runtime's own requests hold a child's log
		}
		for _, fc := range ev.FunctionCalls() {
			if fc.Name != event.FunctionRequestConfirmation {
				continue
			}
			if orig, err := agent.OriginalCall(fc); err != nil || orig.ID != id {
				continue
			}
			conf, _ := fc.Args["toolConfirmation"].(map[string]any)
			payload, _ := conf["payload"].(map[string]any)
			raw, ok := payload[PauseKey]
			if !ok {
				return nil, nil, false
			}
			b, err := json.Marshal(raw)
			if err != nil {
				return nil, nil, false
			}
			var rec pauseRecord
			if json.Unmarshal(b, &rec) != nil || rec.InvocationID == "" || len(rec.Waiting) == 0 {
				return nil, nil, false
			}
			evs := make([]*event.Event, 0, len(rec.Events))
			for _, e := range rec.Events {
				ev := new(event.Event)
				if json.Unmarshal(e, ev) != nil {
					return nil, nil, false
				}
				evs = append(evs, ev)
			}
			return &rec, evs, true
		}
	}
	return nil, nil, false
}

// restore rebuilds the child's session from its log.
func restore(ctx context.Context, sessions *session.Service, key session.Key, evs []*event.Event) error {
	sess, err := sessions.Create(ctx, key, nil)
	if err != nil {
		return err
	}
	for _, ev := range evs {
		if err := sessions.AppendEvent(ctx, sess, ev); err != nil {
			return err
		}
	}
	return nil
}

// answerMessage is the user message that answers the child's call c with
// the client's payload: for a confirmation request of the child, an
// approval (the caller's call was approved) with the payload, if any;
// otherwise a JSON object as it is, anything else as {"response": value}.
func answerMessage(c waitingCall, payload any) *genai.Content {
	resp, ok := payload.(map[string]any)
	switch {
	case c.Name == event.FunctionRequestConfirmation:
		resp = map[string]any{"confirmed": true}
		if payload != nil {
			resp["payload"] = payload
		}
	case payload == nil:
		resp = map[string]any{}
	case !ok:
		resp = map[string]any{"response": payload}
	}
	return &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: c.ID, Name: c.Name, Response: resp}}}}
}
