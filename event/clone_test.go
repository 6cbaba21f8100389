package event_test

import (
	"testing"

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
