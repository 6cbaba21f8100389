package event

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// TestR7LLMCallStored: an event's model call mark is stored as the entry
// "llmCall": true of customMetadata, beside the event's own metadata and
// without changing its map, and every decoder turns the entry back into
// the mark.
func TestR7LLMCallStored(t *testing.T) {
	meta := map[string]any{"k": "v"}
	alone := NewModelText("inv", "a", "x")
	alone.LLMCall = true
	beside := NewModelText("inv", "a", "x")
	beside.LLMCall, beside.CustomMetadata = true, meta
	for _, tc := range []struct {
		ev         *Event
		storedMeta string
	}{
		{alone, `"customMetadata":{"llmCall":true}`},
		{beside, `"customMetadata":{"k":"v","llmCall":true}`},
	} {
		data, err := tc.ev.MarshalStored()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data, []byte(tc.storedMeta)) {
			t.Fatalf("stored %s, want %s", data, tc.storedMeta)
		}
		if appended, err := tc.ev.AppendStored([]byte("x")); err != nil || !bytes.Equal(appended[1:], data) {
			t.Fatalf("AppendStored = %s, %v; want %s", appended, err, data)
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
	data, err := other.MarshalStored()
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

// TestE5MarksStoredNotOnTheWire: the runtime's marks (a model call, the
// long-running calls started) are in the stored form only; json.Marshal,
// MarshalJSON, AppendJSON and AppendStoredAsWire write ADK's event without
// them, keep the event's own metadata and the imported mark, and leave the
// event's map as it was. (CONFORMANCE E5)
func TestE5MarksStoredNotOnTheWire(t *testing.T) {
	plain := NewModelText("inv", "a", "x")
	plain.LLMCall = true
	meta := map[string]any{"k": "v", MetadataStartedCalls: []string{"c1"}, MetadataImported: true}
	withMeta := NewModelText("inv", "a", "x")
	withMeta.LLMCall, withMeta.CustomMetadata = true, meta
	deep := NewModelText("inv", "a", "x") // not the fast path's
	deep.LLMCall = true
	deep.UsageMetadata = nil
	deep.Actions.RequestedAuthConfigs = map[string]any{"c": map[string]any{"x": 1}}
	for i, tc := range []struct {
		ev       *Event
		wireMeta string // "" for none
	}{
		{plain, ""},
		{withMeta, `"customMetadata":{"k":"v","loomImported":true}`},
		{deep, ""},
	} {
		wire, err := json.Marshal(tc.ev)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(wire, []byte(MetadataLLMCall)) || bytes.Contains(wire, []byte(MetadataStartedCalls)) {
			t.Errorf("event %d: the wire form has a runtime mark: %s", i, wire)
		}
		if tc.wireMeta == "" && bytes.Contains(wire, []byte("customMetadata")) {
			t.Errorf("event %d: the wire form has customMetadata: %s", i, wire)
		}
		if tc.wireMeta != "" && !bytes.Contains(wire, []byte(tc.wireMeta)) {
			t.Errorf("event %d: wire %s, want %s", i, wire, tc.wireMeta)
		}
		if appended, err := tc.ev.AppendJSON(nil); err != nil || !bytes.Equal(appended, wire) {
			t.Errorf("event %d: AppendJSON = %s, %v", i, appended, err)
		}
		stored, err := tc.ev.MarshalStored()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(stored, []byte(`"llmCall":true`)) {
			t.Errorf("event %d: the stored form lost the model call: %s", i, stored)
		}
		if fromStored, err := AppendStoredAsWire([]byte("["), stored); err != nil || !bytes.Equal(fromStored[1:], wire) {
			t.Errorf("event %d: AppendStoredAsWire = %s, %v; want [%s", i, fromStored, err, wire)
		}
		var back Event
		if err := new(Decoder).Decode(stored, &back); err != nil {
			t.Fatal(err)
		}
		if !back.LLMCall {
			t.Errorf("event %d: decoding the stored form lost LLMCall", i)
		}
		if tc.ev == withMeta && (!reflect.DeepEqual(back.StartedCalls(), []string{"c1"}) || !back.Imported()) {
			t.Errorf("event %d: decoding the stored form gave started %v, imported %v", i, back.StartedCalls(), back.Imported())
		}
	}
	if len(meta) != 3 {
		t.Fatalf("encoding changed the event's metadata: %v", meta)
	}
	// Bytes with no mark are copied as they are.
	user := NewUserText("inv", "hi")
	stored, _ := user.MarshalStored()
	if got, err := AppendStoredAsWire(nil, stored); err != nil || !bytes.Equal(got, stored) {
		t.Fatalf("AppendStoredAsWire = %s, %v; want %s", got, err, stored)
	}
}
