package temporal

import (
	"sync"

	"github.com/loomkit/loom/event"
)

// maxFeed bounds the events a feed holds for a reader that has not taken
// them yet. Past it the feed drops what follows and says so; the reader
// takes the committed events it missed from the session log.
const maxFeed = 4096

// feeds is the process's exchange between the turns its workers run and the
// clients in the same process that wait for them: a turn publishes every
// event it yields, partial ones included, to the feed of its message's
// request id; a client subscribes to that feed before it sends the
// message. A turn whose client is in another process publishes to no one.
var feeds = &hub{feeds: map[string]*feed{}}

// hub maps request ids to the feeds of the clients waiting for them.
type hub struct {
	mu    sync.Mutex
	feeds map[string]*feed
}

// feed holds the events published for one request until its client takes
// them.
type feed struct {
	mu     sync.Mutex
	events []*event.Event
	lost   bool          // events were dropped: the reader must catch up from the log
	closed bool          // the reader left: what is published is dropped
	wake   chan struct{} // signalled (without blocking) when events arrive
}

// subscribe returns the feed of a request id, which receives what is
// published for it until unsubscribe.
func (h *hub) subscribe(requestID string) *feed {
	f := &feed{wake: make(chan struct{}, 1)}
	h.mu.Lock()
	h.feeds[requestID] = f
	h.mu.Unlock()
	return f
}

// unsubscribe ends the feed of a request id: a turn still running drops
// what it publishes from then on.
func (h *hub) unsubscribe(requestID string) {
	h.mu.Lock()
	f := h.feeds[requestID]
	delete(h.feeds, requestID)
	h.mu.Unlock()
	if f != nil {
		f.mu.Lock()
		f.closed, f.events = true, nil
		f.mu.Unlock()
	}
}

// publisher returns the function that publishes the events of a request: a
// no-op when no client of this process waits for it.
func (h *hub) publisher(requestID string) func(*event.Event) {
	h.mu.Lock()
	f := h.feeds[requestID]
	h.mu.Unlock()
	if f == nil {
		return func(*event.Event) {}
	}
	return f.publish
}

// publish appends a copy of ev (the runner goes on with its own).
func (f *feed) publish(ev *event.Event) {
	f.mu.Lock()
	switch {
	case f.lost || f.closed:
	case len(f.events) >= maxFeed:
		f.lost = true
	default:
		f.events = append(f.events, ev.Clone())
	}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// take returns the events published since the last take, and whether
// any were dropped.
func (f *feed) take() ([]*event.Event, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	evs := f.events
	f.events = nil
	return evs, f.lost
}
