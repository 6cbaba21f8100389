package event

import (
	"testing"
	"time"

	"google.golang.org/genai"
)

// s1Events are the four events of an S1 invocation: the user's message,
// the model's function call, the tool's response and the final text.
func s1Events() []*Event {
	ts := time.Unix(1795424477, 612258000)
	user := NewUserText(NewInvocationID(), "What is 1 + 2?")
	call := New(user.InvocationID, "calculator")
	call.LLMCall, call.FinishReason, call.TurnComplete = true, genai.FinishReasonStop, true
	call.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
		{FunctionCall: &genai.FunctionCall{ID: "adk-" + NewID(), Name: "add", Args: map[string]any{"a": 1, "b": 2}}}}}
	resp := New(user.InvocationID, "calculator")
	resp.Content = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
		{FunctionResponse: &genai.FunctionResponse{ID: call.Content.Parts[0].FunctionCall.ID, Name: "add", Response: map[string]any{"result": 3}}}}}
	final := NewModelText(user.InvocationID, "calculator", "3")
	final.LLMCall, final.FinishReason, final.TurnComplete = true, genai.FinishReasonStop, true
	evs := []*Event{user, call, resp, final}
	for _, ev := range evs {
		ev.Timestamp = ts
	}
	return evs
}

// BenchmarkMarshalS1 encodes the four events of an S1 invocation.
func BenchmarkMarshalS1(b *testing.B) {
	evs := s1Events()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for _, ev := range evs {
			out, err := ev.MarshalJSON()
			if err != nil {
				b.Fatal(err)
			}
			n += len(out)
		}
	}
	b.SetBytes(int64(n / b.N))
}
