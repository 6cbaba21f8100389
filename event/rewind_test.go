package event_test

import (
	"slices"
	"testing"

	"github.com/loomkit/loom/event"
)

// TestVisibleSkipsRewoundEvents (CONFORMANCE T5): a rewind hides itself and
// every event back to the start of the invocation it names; a later rewind
// hides an earlier one with what it hid.
func TestVisibleSkipsRewoundEvents(t *testing.T) {
	mk := func(inv, author string) *event.Event { return event.New(inv, author) }
	rewind := func(inv, to string) *event.Event {
		e := event.New(inv, "user")
		e.Actions.RewindBeforeInvocationID = to
		return e
	}
	log := event.Events{
		mk("e-1", "user"), mk("e-1", "a"), // 0 1
		mk("e-2", "user"), mk("e-2", "a"), // 2 3
		mk("e-3", "user"), rewind("e-4", "e-2"), // 4 5: hides 2..5
		mk("e-5", "user"), mk("e-5", "a"), // 6 7
	}
	var got []int
	for i := range event.Visible(log) {
		got = append(got, i)
	}
	if want := []int{7, 6, 1, 0}; !slices.Equal(got, want) {
		t.Fatalf("visible %v, want %v", got, want)
	}
	for i := range event.Visible(log) {
		if i != 7 {
			t.Fatal("the iterator went on after break")
		}
		break
	}
}
