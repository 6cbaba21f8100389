package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
)

// Kinds of Pending calls.
const (
	KindConfirmation = "confirmation"
	KindInput        = "input"
	KindCredential   = "credential"
	KindTool         = "tool"
)

// pendingOf describes a pausing call for the client.
func pendingOf(fc *genai.FunctionCall, k agent.PauseKind) Pending {
	p := Pending{ID: fc.ID, Name: fc.Name, Args: fc.Args}
	switch {
	case k == agent.PauseConfirmation && agent.AsksCredential(fc):
		// An agent tool whose paused child waits for credentials: a
		// credential, answered by the approval with it as the payload.
		p.Kind = KindCredential
		orig, _ := fc.Args["originalFunctionCall"].(map[string]any)
		name, _ := orig["name"].(string)
		p.Message = fmt.Sprintf(`The agent tool %s needs credentials for its agent: answer with {"confirmed": true, "payload": the auth config of the request it relays, completed}.`, name)
	case k == agent.PauseConfirmation:
		p.Kind = KindConfirmation
		orig, _ := fc.Args["originalFunctionCall"].(map[string]any)
		conf, _ := fc.Args["toolConfirmation"].(map[string]any)
		hint, _ := conf["hint"].(string)
		name, _ := orig["name"].(string)
		callArgs, _ := json.Marshal(orig["args"])
		p.Message = fmt.Sprintf("Approve the call %s(%s)?", name, callArgs)
		if hint != "" {
			p.Message = fmt.Sprintf("%s %s(%s)", hint, name, callArgs)
		}
	case k == agent.PauseInput:
		p.Kind = KindInput
		p.Message, _ = fc.Args["message"].(string)
		if p.Message == "" {
			p.Message = "The workflow asks for input."
		}
	case k == agent.PauseCredential:
		p.Kind = KindCredential
		orig, _ := fc.Args["originalFunctionCall"].(map[string]any)
		name, _ := orig["name"].(string)
		p.Message = fmt.Sprintf("The tool %s needs credentials: answer with the auth config, completed.", name)
	default:
		p.Kind = KindTool
		callArgs, _ := json.Marshal(fc.Args)
		p.Message = fmt.Sprintf("The long-running tool %s(%s) waits for its result.", fc.Name, callArgs)
	}
	return p
}

// canElicit reports whether the client of ss takes form elicitation and
// every pending call can be asked that way: credentials cannot (the MCP
// specification forbids asking for secrets in forms).
func canElicit(ss *mcp.ServerSession, pending []Pending) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return false
	}
	if e := ip.Capabilities.Elicitation; e.Form == nil && e.URL != nil {
		return false // URL elicitation only
	}
	for _, p := range pending {
		if p.Kind == KindCredential {
			return false
		}
	}
	return true
}

// elicitation returns the form elicitation that asks for the answer to
// the pending call p.
func elicitation(p Pending) *mcp.ElicitParams {
	var schema json.RawMessage
	switch p.Kind {
	case KindConfirmation:
		schema = json.RawMessage(`{"type":"object","properties":{"confirmed":{"type":"boolean","title":"Approve","description":"Whether to approve the call."}},"required":["confirmed"]}`)
	case KindInput:
		schema = json.RawMessage(`{"type":"object","properties":{"result":{"type":"string","title":"Answer"}},"required":["result"]}`)
	default:
		schema = json.RawMessage(`{"type":"object","properties":{"response":{"type":"string","title":"Result"}},"required":["response"]}`)
	}
	return &mcp.ElicitParams{Mode: "form", Message: p.Message, RequestedSchema: schema}
}

// elicited turns the client's answers to elicitations, by call id, into
// function responses to the pending calls, in call order. An elicitation
// declined rejects an approval; a declined answer to anything else, or
// one cancelled, leaves its call waiting, and the other answers are not
// sent either: the result is empty.
func elicited(pending []Pending, responses map[string]*mcp.ElicitResult) []*genai.Part {
	var parts []*genai.Part
	for _, p := range pending {
		res := responses[p.ID]
		if res == nil {
			return nil
		}
		var resp map[string]any
		switch {
		case res.Action == "accept" && p.Kind == KindConfirmation:
			resp = map[string]any{"confirmed": truthy(res.Content["confirmed"])}
		case res.Action == "decline" && p.Kind == KindConfirmation:
			resp = map[string]any{"confirmed": false}
		case res.Action == "accept" && p.Kind == KindInput:
			resp = map[string]any{"result": res.Content["result"]}
		case res.Action == "accept" && p.Kind != KindCredential:
			resp = map[string]any{"response": res.Content["response"]}
		default:
			return nil
		}
		parts = append(parts, &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: p.ID, Name: p.Name, Response: resp}})
	}
	return parts
}

// answered turns the answers of a call's arguments, by call id, into
// function responses to the pending calls (see the package doc for the
// forms an answer takes).
func answered(pending []Pending, answers map[string]any) ([]*genai.Part, error) {
	var parts []*genai.Part
	for _, p := range pending { // in the order of the calls
		a, ok := answers[p.ID]
		if !ok {
			continue
		}
		var resp map[string]any
		switch v := a.(type) {
		case map[string]any:
			resp = v
		case bool:
			if p.Kind != KindConfirmation {
				return nil, fmt.Errorf("the answer to %s (%s) is true or false, which only answers an approval", p.ID, p.Kind)
			}
			resp = map[string]any{"confirmed": v}
		case string:
			switch p.Kind {
			case KindConfirmation:
				resp = map[string]any{"confirmed": approves(v)}
			case KindInput:
				resp = map[string]any{"result": v}
			default:
				resp = map[string]any{"response": v}
			}
		default:
			return nil, fmt.Errorf("the answer to %s is %T: want an object, text or, for an approval, true or false", p.ID, a)
		}
		parts = append(parts, &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: p.ID, Name: p.Name, Response: resp}})
	}
	for id := range answers {
		if indexOf(pending, id) < 0 {
			return nil, fmt.Errorf("answers names %q, which is no call the session waits for", id)
		}
	}
	return parts, nil
}

func indexOf(pending []Pending, id string) int {
	for i, p := range pending {
		if p.ID == id {
			return i
		}
	}
	return -1
}

// truthy reads an elicited yes/no, which clients send as a boolean or, in
// forms without one, as text.
func truthy(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case string:
		return approves(v)
	}
	return false
}

// approves reports whether a text answer approves a call.
func approves(text string) bool {
	switch strings.ToLower(strings.Trim(strings.TrimSpace(text), ".!")) {
	case "yes", "y", "ok", "approve", "approved", "confirm", "confirmed", "true":
		return true
	}
	return false
}
