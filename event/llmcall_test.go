package event

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// TestR7LLMCallOnTheWire: an event's model call mark travels as the entry
// "llmCall": true of customMetadata, beside the event's own metadata and
// without changing its map, and every decoder turns the entry back into
// the mark.
func TestR7LLMCallOnTheWire(t *testing.T) {
	meta := map[string]any{"k": "v"}
	alone := NewModelText("inv", "a", "x")
	alone.LLMCall = true
	beside := NewModelText("inv", "a", "x")
	beside.LLMCall, beside.CustomMetadata = true, meta
	for _, tc := range []struct {
		ev       *Event
		wireMeta string
	}{
		{alone, `"customMetadata":{"llmCall":true}`},
		{beside, `"customMetadata":{"k":"v","llmCall":true}`},
	} {
		data, err := json.Marshal(tc.ev)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data, []byte(tc.wireMeta)) {
			t.Fatalf("encoded %s, want %s", data, tc.wireMeta)
		}
		snake := bytes.Replace(data, []byte(`"customMetadata"`), []byte(`"custom_metadata"`), 1)
		var fast, slow, normalized Event
		if err := new(Decoder).Decode(data, &fast); err != nil {
			t.Fatal(err)
		}
		if err := slow.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(snake, &normalized); err != nil {
			t.Fatal(err)
		}
		for name, got := range map[string]*Event{"decoder": &fast, "encoding/json": &slow, "snake_case": &normalized} {
			if !got.LLMCall || !reflect.DeepEqual(got.CustomMetadata, tc.ev.CustomMetadata) {
				t.Errorf("%s: LLMCall %v, metadata %v, want true, %v", name, got.LLMCall, got.CustomMetadata, tc.ev.CustomMetadata)
			}
		}
	}
	if len(meta) != 1 {
		t.Fatalf("encoding changed the event's metadata: %v", meta)
	}

	// Only the value true marks a call.
	other := NewModelText("inv", "a", "x")
	other.CustomMetadata = map[string]any{MetadataLLMCall: "yes"}
	data, err := json.Marshal(other)
	if err != nil {
		t.Fatal(err)
	}
	var got Event
	if err := new(Decoder).Decode(data, &got); err != nil {
		t.Fatal(err)
	}
	if got.LLMCall || got.CustomMetadata[MetadataLLMCall] != "yes" {
		t.Fatalf("LLMCall %v, metadata %v", got.LLMCall, got.CustomMetadata)
	}
}
