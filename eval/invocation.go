package eval

import (
	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
)

// InvocationsFromEvents turns a session's events into invocations, one per
// user message: its content, the agents' final response (the last final
// response with text), their earlier text responses as intermediate
// responses, and their tool calls and responses in order. Partial events
// are skipped.
func InvocationsFromEvents(events []*event.Event) []*Invocation {
	var out []*Invocation
	var cur *Invocation
	var pending []*event.Event
	flush := func() {
		if cur != nil {
			fill(cur, pending)
			out = append(out, cur)
		}
		cur, pending = nil, nil
	}
	for _, ev := range events {
		if ev == nil || ev.Partial {
			continue
		}
		if ev.Author == "user" {
			if ev.Content == nil || len(ev.FunctionResponses()) > 0 {
				continue // a state change, or answers to paused calls
			}
			flush()
			cur = &Invocation{InvocationID: ev.InvocationID, UserContent: ev.Content, CreationTimestamp: event.ToSeconds(ev.Timestamp)}
			continue
		}
		if cur != nil {
			pending = append(pending, ev)
		}
	}
	flush()
	return out
}

// fill sets an invocation's response and intermediate data from the
// agents' events of its turn.
func fill(inv *Invocation, events []*event.Event) {
	data := &IntermediateData{ToolUses: []*genai.FunctionCall{}, ToolResponses: []*genai.FunctionResponse{}, IntermediateResponses: []IntermediateResponse{}}
	var texts []*event.Event
	for _, ev := range events {
		data.ToolUses = append(data.ToolUses, ev.FunctionCalls()...)
		data.ToolResponses = append(data.ToolResponses, ev.FunctionResponses()...)
		if ev.IsFinalResponse() && textOf(ev.Content) != "" {
			texts = append(texts, ev)
		}
	}
	if n := len(texts); n > 0 {
		inv.FinalResponse = texts[n-1].Content
		for _, ev := range texts[:n-1] {
			data.IntermediateResponses = append(data.IntermediateResponses, IntermediateResponse{Author: ev.Author, Parts: ev.Content.Parts})
		}
	}
	inv.IntermediateData = data
}
