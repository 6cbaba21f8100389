package scripted

import (
	"context"
	"reflect"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
)

// TestOnePartResponse: a turn of one text, thought or call answers with the
// same response as the general construction, owning its copy of the call.
func TestOnePartResponse(t *testing.T) {
	usage := &genai.GenerateContentResponseUsageMetadata{TotalTokenCount: 3}
	for name, tc := range map[string]struct {
		turn Turn
		part *genai.Part
	}{
		"text":    {Turn{Text: "3", Usage: usage}, &genai.Part{Text: "3"}},
		"thought": {Turn{Thought: "hmm"}, &genai.Part{Text: "hmm", Thought: true}},
		"call":    {Call("add", map[string]any{"a": 1}), &genai.Part{FunctionCall: &genai.FunctionCall{Name: "add", Args: map[string]any{"a": 1}}}},
	} {
		got := tc.turn.response()
		want := &model.Response{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{tc.part}},
			UsageMetadata: tc.turn.Usage, FinishReason: genai.FinishReasonStop}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: response = %+v, want %+v", name, got, want)
		}
		if len(tc.turn.Calls) == 1 && got.Content.Parts[0].FunctionCall == tc.turn.Calls[0] {
			t.Errorf("%s: the response shares the turn's call", name)
		}
	}
	// Several parts, and none, keep the general form.
	two := Turn{Text: "a", Calls: []*genai.FunctionCall{{Name: "f"}}}.response()
	if len(two.Content.Parts) != 2 || two.Content.Parts[0].Text != "a" || two.Content.Parts[1].FunctionCall.Name != "f" {
		t.Errorf("text and call = %+v", two.Content)
	}
	if (Turn{}).response().Content != nil {
		t.Errorf("an empty turn has content")
	}
}

// TestNoTurnComplete: like ADK's models outside live (bidirectional)
// sessions, a scripted model never marks a response turnComplete: not a
// function call, which is not the end of a turn, nor text, streamed or not,
// nor an error.
func TestNoTurnComplete(t *testing.T) {
	m := NewSequence("m", Call("add", map[string]any{"a": 1}), Turn{Text: "three", Chunks: []string{"th", "ree"}}, Text("3"),
		Turn{ErrorCode: "E", ErrorMessage: "bad"})
	for i, stream := range []bool{false, true, false, false} {
		for r, err := range m.Generate(context.Background(), &model.Request{}, stream) {
			if err != nil {
				t.Fatal(err)
			}
			if r.TurnComplete {
				t.Errorf("turn %d: response %+v is marked turnComplete", i, r)
			}
		}
	}
}
