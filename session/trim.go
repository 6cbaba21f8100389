package session

import (
	"fmt"
	"slices"

	"github.com/loomkit/loom/event"
)

// rawSliceSize is what an encoded event costs beyond its bytes: its slice
// header in Session.raw.
const rawSliceSize = 24

// Trim lets the session copy hold its older events in their encoded (JSON)
// form, a fraction of the memory of the decoded events, with no pointers
// for the garbage collector to follow: every event but the first and the
// last keep stays decoded. The events, their order and what reading them
// returns are unchanged, except that At and EventsFrom decode a trimmed
// event anew each time they return it (as a copy loaded from a store, its
// numbers come back as JSON numbers, float64). Size counts the encoded
// form.
//
// The runner trims the sessions it keeps between invocations: what a new
// turn reads is the latest events (and the first, which tells a reloaded
// copy from the one it had), and an agent's model history is kept apart.
// Trimming costs one encoding of each event trimmed, once.
func (s *Session) Trim(keep int) {
	keep = max(keep, 0)
	s.mu.RLock()
	done := len(s.raw) // events before it were looked at by an earlier Trim
	from, to := max(done, 1), len(s.events)-keep
	if from >= to {
		s.mu.RUnlock()
		return
	}
	evs := s.events[from:to:to] // events are immutable: encode them unlocked
	s.mu.RUnlock()

	// The batch shares one buffer, of its size.
	raw := make([][]byte, len(evs))
	ends := make([]int, len(evs))
	buf := make([]byte, 0, 384*len(evs))
	for i, ev := range evs {
		var err error
		if buf, err = ev.AppendJSON(buf); err != nil {
			return // an event that does not encode: nothing is trimmed this time
		}
		ends[i] = len(buf)
	}
	if cap(buf)-len(buf) > len(buf)/4 {
		buf = append([]byte(nil), buf...)
	}
	start := 0
	for i, end := range ends {
		raw[i], start = buf[start:end:end], end
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.raw) != done || len(s.events) < to {
		return // reloaded or trimmed meanwhile
	}
	for i, ev := range evs {
		if s.events[from+i] != ev {
			return // reloaded meanwhile
		}
	}
	s.raw = slices.Grow(s.raw, to-len(s.raw))
	if done == 0 {
		s.raw = append(s.raw, nil) // the first event stays decoded
	}
	for i, ev := range evs {
		s.raw = append(s.raw, raw[i])
		s.events[from+i] = nil
		s.evBytes += int64(len(raw[i])) + rawSliceSize - eventSize(ev)
	}
}

// decodeTrimmed decodes an event Trim encoded. The session's own encoding
// always decodes; should it not, the event read says so instead of
// stopping the process.
func decodeTrimmed(b []byte) *event.Event {
	var d event.Decoder
	ev := new(event.Event)
	if err := d.Decode(b, ev); err != nil {
		ev = &event.Event{}
		ev.ErrorCode, ev.ErrorMessage = "UNREADABLE_EVENT", fmt.Sprintf("session: decode a trimmed event: %v", err)
	}
	return ev
}
