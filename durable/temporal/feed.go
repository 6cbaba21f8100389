package temporal

import (
	"crypto/subtle"
	"net/http"
	"sync"

	"github.com/loomkit/loom/event"
)

// maxFeed bounds the events a feed holds for a reader that has not taken
// them yet. Past it the feed drops what follows and says so; the reader
// takes the committed events it missed from the session log.
const maxFeed = 4096

// feeds is the process's exchange between the turns and the clients in
// the process that wait for them: a turn publishes every event it yields,
// partial ones included, to the feed of its message's request id, directly
// when its worker runs in this process, through the client's feed listener
// (push.go) when it runs in another; a client subscribes to that feed
// before it sends the message. A turn whose client has no feed in this
// process and no listener publishes to no one.
var feeds = &hub{feeds: map[string]*feed{}}

// hub maps request ids to the feeds of the clients waiting for them.
type hub struct {
	mu    sync.Mutex
	feeds map[string]*feed
}

// feed holds the events published for one request until its client takes
// them. What it holds is always a prefix of what the turn yielded: once
// an event is dropped, every later one is.
type feed struct {
	mu     sync.Mutex
	events []*event.Event
	lost   bool          // events were dropped: the reader must catch up from the log
	closed bool          // the reader left: what is published is dropped
	wake   chan struct{} // signalled (without blocking) when events arrive
	// token is what a stream pushed from a worker of another process
	// must present for this request ("": no stream is accepted).
	token string
	// pushed: a stream claimed the feed; a second one is refused.
	pushed bool
	gone   chan struct{} // closed when the reader left
}

// subscribe returns the feed of a request id, which receives what is
// published for it until unsubscribe; a stream pushed for it must present
// token.
func (h *hub) subscribe(requestID, token string) *feed {
	f := &feed{wake: make(chan struct{}, 1), token: token, gone: make(chan struct{})}
	h.mu.Lock()
	h.feeds[requestID] = f
	h.mu.Unlock()
	return f
}

// unsubscribe ends the feed of a request id: a turn still running drops
// what it publishes from then on, and a stream pushing to it is cut.
func (h *hub) unsubscribe(requestID string) {
	h.mu.Lock()
	f := h.feeds[requestID]
	delete(h.feeds, requestID)
	h.mu.Unlock()
	if f != nil {
		f.mu.Lock()
		f.closed, f.events = true, nil
		f.mu.Unlock()
		close(f.gone)
	}
}

// publisher returns the function that publishes the events of a request to
// its client in this process, and whether there is one (a no-op if not).
func (h *hub) publisher(requestID string) (func(*event.Event), bool) {
	h.mu.Lock()
	f := h.feeds[requestID]
	h.mu.Unlock()
	if f == nil {
		return func(*event.Event) {}, false
	}
	return f.publish, true
}

// claim returns the feed of a request id for the one stream pushed to it,
// or nil and the HTTP status that refuses the stream: the token is
// compared in constant time; a request without a feed, or whose feed
// takes no stream or already took one, is refused.
func (h *hub) claim(requestID, token string) (*feed, int) {
	h.mu.Lock()
	f := h.feeds[requestID]
	h.mu.Unlock()
	if f == nil {
		return nil, http.StatusGone
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.token == "" || subtle.ConstantTimeCompare([]byte(token), []byte(f.token)) != 1 {
		return nil, http.StatusForbidden
	}
	if f.pushed || f.closed {
		return nil, http.StatusConflict
	}
	f.pushed = true
	return f, 0
}

// publish appends a copy of ev (the runner goes on with its own).
func (f *feed) publish(ev *event.Event) {
	f.add(ev.Clone())
}

// add appends ev, which the feed keeps.
func (f *feed) add(ev *event.Event) {
	f.mu.Lock()
	switch {
	case f.lost || f.closed:
	case len(f.events) >= maxFeed:
		f.lost = true
	default:
		f.events = append(f.events, ev)
	}
	f.mu.Unlock()
	f.signal()
}

// drop records that events of the turn were dropped before reaching the
// feed: it takes nothing more, and its reader catches up from the log.
func (f *feed) drop() {
	f.mu.Lock()
	f.lost = true
	f.mu.Unlock()
	f.signal()
}

func (f *feed) signal() {
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
