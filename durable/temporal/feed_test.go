package temporal

import (
	"testing"

	"github.com/loomkit/loom/event"
)

// TestFeedBounded: a feed holds at most maxFeed events for its reader and
// then reports the loss; once its reader unsubscribed it holds nothing;
// a request without a reader in this process publishes to no one.
func TestFeedBounded(t *testing.T) {
	h := &hub{feeds: map[string]*feed{}}
	f := h.subscribe("r1", "")
	publish, _ := h.publisher("r1")
	for i := range maxFeed + 10 {
		ev := event.New("inv", "agent")
		ev.ID = string(rune('a' + i%26))
		publish(ev)
	}
	evs, lost := f.take()
	if len(evs) != maxFeed || !lost {
		t.Fatalf("took %d events, lost=%v; want %d and the loss reported", len(evs), lost, maxFeed)
	}
	h.unsubscribe("r1")
	publish(event.New("inv", "agent"))
	if evs, _ := f.take(); len(evs) != 0 {
		t.Fatalf("a feed whose reader left holds %d events", len(evs))
	}
	p, ok := h.publisher("nobody")
	if ok {
		t.Fatal("a request without a reader has a publisher")
	}
	p(event.New("inv", "agent")) // no reader: nothing happens
	if len(h.feeds) != 0 {
		t.Fatalf("the hub holds %d feeds, want none", len(h.feeds))
	}
}
