package session

import (
	"testing"

	"github.com/loomkit/loom/event"
)

// BenchmarkCheckEvent measures the validation of a model event with text
// and a one-key state delta, which every append pays.
func BenchmarkCheckEvent(b *testing.B) {
	e := event.NewModelText("e-bench", "agent", "event text")
	e.Actions.StateDelta = map[string]any{"k": 1}
	b.ReportAllocs()
	for b.Loop() {
		if err := checkState(e.Actions.StateDelta); err != nil {
			b.Fatal(err)
		}
		if err := checkEvent(e); err != nil {
			b.Fatal(err)
		}
	}
}
