package event_test

import (
	"reflect"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
)

// TestCloneCyclic: cloning a cyclic value terminates (it would exhaust the
// stack otherwise), and copies the value down to a bounded depth.
func TestCloneCyclic(t *testing.T) {
	m := map[string]any{"k": 1}
	m["self"] = m
	l := []any{1}
	l[0] = l
	c := event.CloneMap(map[string]any{"m": m, "l": l})
	if c["m"].(map[string]any)["k"] != 1 {
		t.Errorf("clone of a cyclic map = %v", c["m"])
	}
	c["m"].(map[string]any)["k"] = 2
	if m["k"] != 1 {
		t.Error("the clone shares its top level with the original")
	}
	e := &event.Event{}
	e.Actions.StateDelta = map[string]any{"m": m}
	e.CustomMetadata = map[string]any{"l": l}
	if e.Clone() == nil {
		t.Error("Clone of an event with cyclic values returned nil")
	}
}

// TestCloneSharesNothing: the deep copy of an event, or of a content, with
// zero, one, a nil or several parts equals the original and shares no
// memory with it; a one-part event and its content take one allocation.
func TestCloneSharesNothing(t *testing.T) {
	call := func() *genai.Part {
		return &genai.Part{FunctionCall: &genai.FunctionCall{ID: "c1", Name: "add", Args: map[string]any{"a": 1.0}}}
	}
	for name, parts := range map[string][]*genai.Part{
		"none": {}, "one": {call()}, "nil": {nil}, "two": {genai.NewPartFromText("x"), call()},
		"response": {genai.NewPartFromFunctionResponse("add", map[string]any{"a": 1.0})},
		"text":     {genai.NewPartFromText("x")},
	} {
		e := &event.Event{ID: "e1", Author: "a"}
		e.Content = &genai.Content{Role: genai.RoleModel, Parts: parts}
		c := e.Clone()
		cc := event.CloneContent(e.Content)
		for _, got := range []*genai.Content{c.Content, cc} {
			if !reflect.DeepEqual(got, e.Content) {
				t.Fatalf("%s: clone %+v differs from %+v", name, got, e.Content)
			}
			if got == e.Content || len(parts) > 0 && &got.Parts[0] == &e.Content.Parts[0] {
				t.Fatalf("%s: the clone shares the content or its parts", name)
			}
			for i, p := range got.Parts {
				if p != nil && p == parts[i] {
					t.Fatalf("%s: the clone shares part %d", name, i)
				}
			}
			got.Parts = append(got.Parts, genai.NewPartFromText("more"))
			got.Role = "changed"
			for _, p := range got.Parts {
				if p != nil && p.FunctionCall != nil {
					p.FunctionCall.Args["a"] = 2.0
				}
				if p != nil && p.FunctionResponse != nil {
					p.FunctionResponse.Response["a"] = 2.0
					p.FunctionResponse.Name = "changed"
				}
			}
		}
		if e.Content.Role != genai.RoleModel || len(e.Content.Parts) != len(parts) {
			t.Fatalf("%s: changing the clone changed the original: %+v", name, e.Content)
		}
		for _, p := range e.Content.Parts {
			if p != nil && p.FunctionCall != nil && p.FunctionCall.Args["a"] != 1.0 {
				t.Fatalf("%s: changing the clone's arguments changed the original", name)
			}
			if p != nil && p.FunctionResponse != nil && (p.FunctionResponse.Response["a"] != 1.0 || p.FunctionResponse.Name != "add") {
				t.Fatalf("%s: changing the clone's response changed the original", name)
			}
		}
	}
	text := event.NewModelText("inv", "a", "hi")
	if n := testing.AllocsPerRun(100, func() { _ = text.Clone() }); n != 1 && !raceEnabled {
		t.Errorf("cloning a one-part text event allocates %v times, want 1", n)
	}
}
