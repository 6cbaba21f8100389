package event_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/loomkit/loom/event"
)

// TestNodeInfoRoundTrip: a graph node's output and node info encode in ADK
// 2's field names (output, nodeInfo.path, nodeInfo.outputFor), decode back
// equal through both the decoder's fast path and UnmarshalJSON, and a
// snake_case event from an ADK client decodes to the same, with the keys
// inside the output kept.
func TestNodeInfoRoundTrip(t *testing.T) {
	ev := event.New("e-1", "approve")
	ev.Output = map[string]any{"order_id": "A-1", "amount": 42.5, "items": []any{"x", 1.0}}
	ev.NodeInfo = &event.NodeInfo{Path: "desk/approve@1", OutputFor: []string{"desk/approve@1"}}
	ev.Actions.EndOfAgent = true
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"output":{`, `"nodeInfo":{"path":"desk/approve@1","outputFor":["desk/approve@1"]}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("wire JSON %s lacks %s", b, want)
		}
	}
	var slow event.Event
	if err := json.Unmarshal(b, &slow); err != nil {
		t.Fatal(err)
	}
	var fast event.Event
	var d event.Decoder
	if err := d.Decode(b, &fast); err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]*event.Event{"UnmarshalJSON": &slow, "Decoder": &fast} {
		if !reflect.DeepEqual(got.Output, ev.Output) || !reflect.DeepEqual(got.NodeInfo, ev.NodeInfo) {
			t.Errorf("%s: output %#v, node info %#v", name, got.Output, got.NodeInfo)
		}
	}
	snake := `{"invocation_id":"e-1","author":"approve","output":{"order_id":"A-1"},"node_info":{"path":"desk/approve@1","output_for":["desk/approve@1"],"message_as_output":true},"actions":{"end_of_agent":true},"timestamp":1}`
	var fromADK event.Event
	if err := json.Unmarshal([]byte(snake), &fromADK); err != nil {
		t.Fatal(err)
	}
	if fromADK.NodeInfo == nil || fromADK.NodeInfo.Path != "desk/approve@1" || !fromADK.NodeInfo.MessageAsOutput ||
		!reflect.DeepEqual(fromADK.NodeInfo.OutputFor, []string{"desk/approve@1"}) {
		t.Errorf("snake_case node info = %+v", fromADK.NodeInfo)
	}
	if !reflect.DeepEqual(fromADK.Output, map[string]any{"order_id": "A-1"}) {
		t.Errorf("snake_case output = %#v (keys inside the output must be kept)", fromADK.Output)
	}
	c := ev.Clone()
	c.NodeInfo.OutputFor[0] = "changed"
	c.Output.(map[string]any)["amount"] = 0
	if ev.NodeInfo.OutputFor[0] != "desk/approve@1" || ev.Output.(map[string]any)["amount"] != 42.5 {
		t.Error("Clone shares node info or output with the original")
	}
}
