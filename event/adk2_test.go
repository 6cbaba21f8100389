package event_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/loomkit/loom/event"
)

// adk2Event is an event as ADK 2 writes one from a graph workflow: a route,
// a structured model response, a UI widget, an isolation scope, and fields
// of ADK's LLM response Loom does not model (interactionId,
// cacheMetadata), plus an action field of a later ADK.
const adk2Event = `{"content":{"parts":[{"text":"{\"label\": \"refund\"}"}],"role":"model"},` +
	`"invocationId":"e-1","author":"classify","actions":{"stateDelta":{},"artifactDelta":{},` +
	`"requestedAuthConfigs":{},"requestedToolConfirmations":{},"route":["refund",2,true],` +
	`"renderUiWidgets":[{"id":"w1","provider":"mcp","payload":{"snake_key":1}}],` +
	`"setModelResponse":{"label":"refund","nested_key":[1,2]},"laterAction":{"a_b":1}},` +
	`"branch":"triage","isolationScope":"call_1","id":"ev-1","timestamp":1747130000.5,` +
	`"output":{"label":"refund"},"nodeInfo":{"path":"triage/classify@1"},` +
	`"cacheMetadata":{"cache_name":"c","fingerprint":"f"},"interactionId":"i-9"}`

// TestE4ADK2FieldsRoundTrip checks that ADK 2's event and action fields
// decode into their Go fields, and that fields Loom does not model are
// kept, as written, and encoded back, by the reflection path and by the
// Decoder alike (CONFORMANCE E4).
func TestE4ADK2FieldsRoundTrip(t *testing.T) {
	var e event.Event
	if err := json.Unmarshal([]byte(adk2Event), &e); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e.Actions.Route, []any{"refund", 2.0, true}) {
		t.Errorf("route = %#v", e.Actions.Route)
	}
	if m, _ := e.Actions.SetModelResponse.(map[string]any); m["label"] != "refund" || m["nested_key"] == nil {
		t.Errorf("setModelResponse = %#v", e.Actions.SetModelResponse)
	}
	if len(e.Actions.RenderUIWidgets) != 1 {
		t.Errorf("renderUiWidgets = %#v", e.Actions.RenderUIWidgets)
	}
	if e.IsolationScope != "call_1" {
		t.Errorf("isolationScope = %q", e.IsolationScope)
	}
	if string(e.Unknown["interactionId"]) != `"i-9"` || string(e.Actions.Unknown["laterAction"]) != `{"a_b":1}` {
		t.Errorf("unknown fields = %q, actions %q", e.Unknown, e.Actions.Unknown)
	}
	b, err := json.Marshal(&e)
	if err != nil {
		t.Fatal(err)
	}
	assertSameJSON(t, string(b), adk2Event)

	var d event.Event
	if err := new(event.Decoder).Decode([]byte(adk2Event), &d); err != nil {
		t.Fatal(err)
	}
	stored, err := d.MarshalStored()
	if err != nil {
		t.Fatal(err)
	}
	assertSameJSON(t, string(stored), adk2Event)

	// A clone keeps them too.
	c, err := json.Marshal(e.Clone())
	if err != nil {
		t.Fatal(err)
	}
	assertSameJSON(t, string(c), adk2Event)
}

// TestE4ADK2RouteFastPath checks that an event with a route and an
// isolation scope, and nothing Loom does not model, encodes and decodes
// the same through the fast paths as through encoding/json.
func TestE4ADK2RouteFastPath(t *testing.T) {
	e := &event.Event{ID: "x", Author: "a", IsolationScope: "n@1", Actions: event.Actions{Route: "left", SetModelResponse: map[string]any{"k": 1.0}}}
	fast, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"author":"a","actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{},"route":"left","setModelResponse":{"k":1}},"isolationScope":"n@1","id":"x","timestamp":0}`
	if string(fast) != want {
		t.Errorf("got  %s\nwant %s", fast, want)
	}
	var d event.Event
	if err := new(event.Decoder).Decode(fast, &d); err != nil {
		t.Fatal(err)
	}
	if d.Actions.Route != "left" || d.IsolationScope != "n@1" {
		t.Errorf("decoded %+v", d)
	}
}

func assertSameJSON(t *testing.T, got, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
