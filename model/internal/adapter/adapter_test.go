package adapter

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/genai"
)

func TestJSONSchemaLowersTypes(t *testing.T) {
	min := int64(1)
	s := &genai.Schema{
		Type:     genai.TypeObject,
		Required: []string{"tags"},
		Properties: map[string]*genai.Schema{
			"tags": {Type: genai.TypeArray, Items: &genai.Schema{Type: genai.TypeString, Enum: []string{"a", "b"}}, MinItems: &min},
			"note": {Type: genai.TypeString, Nullable: genai.Ptr(true)},
		},
	}
	b, _ := json.Marshal(JSONSchema(s))
	want := `{"properties":{"note":{"type":["string","null"]},"tags":{"items":{"enum":["a","b"],"type":"string"},"minItems":1,"type":"array"}},"required":["tags"],"type":"object"}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	if p := Parameters(&genai.FunctionDeclaration{Name: "f"}); p["type"] != "object" {
		t.Errorf("no-parameter declaration = %v", p)
	}
}

func TestAggregatorMergesRunsInOrder(t *testing.T) {
	var a Aggregator
	a.Text("think ", true, nil)
	a.Text("more", true, []byte("sig"))
	a.Text("Hel", false, nil)
	a.Text("lo", false, nil)
	a.Part(&genai.Part{FunctionCall: &genai.FunctionCall{Name: "f"}})
	a.Text("!", false, nil)
	parts := a.Parts()
	if len(parts) != 4 {
		t.Fatalf("got %d parts", len(parts))
	}
	if !parts[0].Thought || parts[0].Text != "think more" || string(parts[0].ThoughtSignature) != "sig" {
		t.Errorf("thought = %+v", parts[0])
	}
	if parts[1].Text != "Hello" || parts[2].FunctionCall == nil || parts[3].Text != "!" {
		t.Errorf("parts = %+v %+v %+v", parts[1], parts[2], parts[3])
	}
}

// BenchmarkAggregator streams 10,000 small chunks; the cost per chunk stays
// flat because text is appended to a builder, never re-concatenated.
func BenchmarkAggregator(b *testing.B) {
	chunk := strings.Repeat("x", 16)
	for b.Loop() {
		var a Aggregator
		for range 10000 {
			a.Text(chunk, false, nil)
		}
		if len(a.Parts()[0].Text) != 160000 {
			b.Fatal("bad length")
		}
	}
}
