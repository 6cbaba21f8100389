package event_test

import (
	"encoding/json"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
)

// TestGroundingAndCodeExecutionRoundTrip checks that what built-in tools
// put on a model response (grounding metadata, executable code and its
// result) survives the event codec, as sessions store it.
func TestGroundingAndCodeExecutionRoundTrip(t *testing.T) {
	in := &event.Event{ID: "e1", InvocationID: "i1", Author: "a", Response: model.Response{
		Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
			{ExecutableCode: &genai.ExecutableCode{Language: genai.LanguagePython, Code: "print(1+1)"}},
			{CodeExecutionResult: &genai.CodeExecutionResult{Outcome: genai.OutcomeOK, Output: "2\n"}},
			{Text: "It is 2."},
		}},
		GroundingMetadata: &genai.GroundingMetadata{
			WebSearchQueries:  []string{"one plus one"},
			GroundingChunks:   []*genai.GroundingChunk{{Web: &genai.GroundingChunkWeb{URI: "https://example.com/sum", Title: "Sums"}}},
			GroundingSupports: []*genai.GroundingSupport{{GroundingChunkIndices: []int32{0}, Segment: &genai.Segment{StartIndex: 0, EndIndex: 8, Text: "It is 2."}}},
			SearchEntryPoint:  &genai.SearchEntryPoint{RenderedContent: "<div>search</div>"},
		},
	}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out event.Event
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	g := out.GroundingMetadata
	if g == nil || len(g.WebSearchQueries) != 1 || g.GroundingChunks[0].Web.URI != "https://example.com/sum" ||
		g.GroundingSupports[0].Segment.EndIndex != 8 || g.SearchEntryPoint.RenderedContent != "<div>search</div>" {
		t.Fatalf("grounding after round trip = %s", b)
	}
	p := out.Content.Parts
	if p[0].ExecutableCode == nil || p[0].ExecutableCode.Code != "print(1+1)" || p[1].CodeExecutionResult == nil || p[1].CodeExecutionResult.Output != "2\n" {
		t.Fatalf("code parts after round trip = %s", b)
	}
	// snake_case input, as other ADK implementations may store it.
	snake := []byte(`{"id":"e2","author":"a","grounding_metadata":{"web_search_queries":["q"]},"content":{"role":"model","parts":[{"executable_code":{"language":"PYTHON","code":"x=1"}}]}}`)
	var s event.Event
	if err := json.Unmarshal(snake, &s); err != nil {
		t.Fatal(err)
	}
	if s.GroundingMetadata == nil || s.GroundingMetadata.WebSearchQueries[0] != "q" || s.Content.Parts[0].ExecutableCode.Code != "x=1" {
		t.Fatalf("snake_case decode = %+v", s)
	}
}
