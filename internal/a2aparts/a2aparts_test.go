package a2aparts

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"google.golang.org/genai"
)

func TestRoundTrip(t *testing.T) {
	in := []*genai.Part{
		{Text: "hello"},
		{Text: "pondering", Thought: true},
		{FunctionCall: &genai.FunctionCall{ID: "c1", Name: "get_weather", Args: map[string]any{"city": "Paris"}}},
		{FunctionCall: &genai.FunctionCall{ID: "c2", Name: "adk_request_confirmation", Args: map[string]any{}}},
		{FunctionResponse: &genai.FunctionResponse{ID: "c1", Name: "get_weather", Response: map[string]any{"temp": 20.0}}},
		{InlineData: &genai.Blob{MIMEType: "text/plain", DisplayName: "a.txt", Data: []byte("abc")}},
		{FileData: &genai.FileData{MIMEType: "image/png", FileURI: "https://example.com/a.png"}},
	}
	parts := FromGenai(in, []string{"c2"})
	if len(parts) != len(in) {
		t.Fatalf("%d A2A parts, want %d", len(parts), len(in))
	}
	if lr := parts[2].Meta()[MetaLongRunning]; lr != false {
		t.Errorf("c1 long-running = %v, want false", lr)
	}
	if lr := parts[3].Meta()[MetaLongRunning]; lr != true {
		t.Errorf("c2 long-running = %v, want true", lr)
	}
	// Through the wire, as a peer reads them.
	b, err := json.Marshal(a2a.Message{ID: "m", Role: a2a.MessageRoleAgent, Parts: parts})
	if err != nil {
		t.Fatal(err)
	}
	var msg a2a.Message
	if err := json.Unmarshal(b, &msg); err != nil {
		t.Fatal(err)
	}
	out, err := ToGenai(msg.Parts)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		gotJSON, _ := json.Marshal(out)
		wantJSON, _ := json.Marshal(in)
		t.Errorf("round trip:\n got %s\nwant %s", gotJSON, wantJSON)
	}
}

func TestToGenaiPlainData(t *testing.T) {
	out, err := ToGenai([]a2a.Part{a2a.DataPart{Data: map[string]any{"a": 1.0}}})
	if err != nil || len(out) != 1 || out[0].Text != `{"a":1}` {
		t.Errorf("plain data = %v, %v; want its JSON as text", out, err)
	}
	// ADK peers may spell the kind key without the prefix.
	out, err = ToGenai([]a2a.Part{a2a.DataPart{Data: map[string]any{"name": "f", "args": map[string]any{}}, Metadata: map[string]any{"type": "function_call"}}})
	if err != nil || len(out) != 1 || out[0].FunctionCall == nil || out[0].FunctionCall.Name != "f" {
		t.Errorf("unprefixed kind = %v, %v; want a function call", out, err)
	}
}

func TestToGenaiMalformed(t *testing.T) {
	for name, p := range map[string]a2a.Part{
		"call without a name":  a2a.DataPart{Data: map[string]any{"args": map[string]any{}}, Metadata: map[string]any{MetaType: TypeFunctionCall}},
		"args not an object":   a2a.DataPart{Data: map[string]any{"name": "f", "args": "x"}, Metadata: map[string]any{MetaType: TypeFunctionCall}},
		"response without ids": a2a.DataPart{Data: map[string]any{"response": map[string]any{}}, Metadata: map[string]any{MetaType: TypeFunctionResponse}},
		"bytes not base64":     a2a.FilePart{File: a2a.FileBytes{Bytes: "%%%"}},
	} {
		if _, err := ToGenai([]a2a.Part{p}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestText(t *testing.T) {
	got := Text([]a2a.Part{a2a.TextPart{Text: "a"}, a2a.TextPart{Text: "t", Metadata: map[string]any{MetaThought: true}}, a2a.DataPart{}, a2a.TextPart{Text: "b"}})
	if got != "a\nb" {
		t.Errorf("Text = %q, want %q", got, "a\nb")
	}
}
