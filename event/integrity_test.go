package event_test

import (
	"bytes"
	"errors"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
)

// TestI1CallKeySignCheck checks that an event's signed calls pass their
// check after the stored form's round trip, and that any change of a
// call's name, arguments or id, of the calls' number or order, of the
// application or user, or of the code, fails it.
func TestI1CallKeySignCheck(t *testing.T) {
	if _, err := event.NewCallKey(make([]byte, event.MinCallKeyLen-1)); err == nil {
		t.Fatal("a short key was accepted")
	}
	k, err := event.NewCallKey(bytes.Repeat([]byte{1}, event.MinCallKeyLen))
	if err != nil {
		t.Fatal(err)
	}
	signed := func() *event.Event {
		ev := event.New("inv", "agent")
		ev.CustomMetadata = map[string]any{"own": "kept"}
		ev.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
			{FunctionCall: &genai.FunctionCall{ID: "c1", Name: "pay", Args: map[string]any{"amount": 50, "to": "bob", "big": 1e21}}},
			{FunctionCall: &genai.FunctionCall{ID: "c2", Name: "noargs"}}}}
		if err := k.Sign(ev, "app", "u"); err != nil {
			t.Fatal(err)
		}
		b, err := ev.MarshalStored()
		if err != nil {
			t.Fatal(err)
		}
		var back event.Event
		if err := back.UnmarshalJSON(b); err != nil {
			t.Fatal(err)
		}
		if back.CustomMetadata["own"] != "kept" {
			t.Fatalf("own metadata lost: %v", back.CustomMetadata)
		}
		return &back
	}
	ev := signed()
	if err := k.Check(ev, "app", "u"); err != nil {
		t.Fatalf("unchanged calls: %v", err)
	}
	other, _ := event.NewCallKey(bytes.Repeat([]byte{2}, event.MinCallKeyLen))
	cases := map[string]func(ev *event.Event, fc *genai.FunctionCall) (*event.CallKey, string, string){
		"arguments": func(_ *event.Event, fc *genai.FunctionCall) (*event.CallKey, string, string) {
			fc.Args["amount"] = 5000.0
			return k, "app", "u"
		},
		"added argument": func(_ *event.Event, fc *genai.FunctionCall) (*event.CallKey, string, string) {
			fc.Args["memo"] = "x"
			return k, "app", "u"
		},
		"name": func(_ *event.Event, fc *genai.FunctionCall) (*event.CallKey, string, string) {
			fc.Name = "refund"
			return k, "app", "u"
		},
		"id": func(_ *event.Event, fc *genai.FunctionCall) (*event.CallKey, string, string) {
			fc.ID = "c3"
			return k, "app", "u"
		},
		"call removed": func(ev *event.Event, _ *genai.FunctionCall) (*event.CallKey, string, string) {
			ev.Content.Parts = ev.Content.Parts[:1]
			return k, "app", "u"
		},
		"calls swapped": func(ev *event.Event, _ *genai.FunctionCall) (*event.CallKey, string, string) {
			p := ev.Content.Parts
			p[0], p[1] = p[1], p[0]
			return k, "app", "u"
		},
		"user": func(*event.Event, *genai.FunctionCall) (*event.CallKey, string, string) { return k, "app", "v" },
		"app":  func(*event.Event, *genai.FunctionCall) (*event.CallKey, string, string) { return k, "other", "u" },
		"key":  func(*event.Event, *genai.FunctionCall) (*event.CallKey, string, string) { return other, "app", "u" },
		"code removed": func(ev *event.Event, _ *genai.FunctionCall) (*event.CallKey, string, string) {
			delete(ev.CustomMetadata, event.MetadataCallMAC)
			return k, "app", "u"
		},
		"code garbled": func(ev *event.Event, _ *genai.FunctionCall) (*event.CallKey, string, string) {
			ev.CustomMetadata[event.MetadataCallMAC] = "!!"
			return k, "app", "u"
		},
	}
	for name, change := range cases {
		ev := signed()
		fc := ev.FunctionCalls()[0]
		key, app, user := change(ev, fc)
		if err := key.Check(ev, app, user); !errors.Is(err, event.ErrCallIntegrity) {
			t.Errorf("%s changed: err = %v, want ErrCallIntegrity", name, err)
		}
	}
	wire, err := ev.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(wire, []byte(event.MetadataCallMAC)) || !bytes.Contains(wire, []byte(`"own":"kept"`)) {
		t.Fatalf("wire form: %s", wire)
	}
	stored, _ := ev.MarshalStored()
	asWire, err := event.AppendStoredAsWire(nil, stored)
	if err != nil || bytes.Contains(asWire, []byte(event.MetadataCallMAC)) {
		t.Fatalf("stored as wire: %s, %v", asWire, err)
	}
}
