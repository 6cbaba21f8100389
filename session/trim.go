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
// Trimming an event costs nothing when its store keeps it encoded (see
// EncodedAppender), and one encoding otherwise.
func (s *Session) Trim(keep int) {
	keep = max(keep, 0)
	s.mu.RLock()
	done := s.trimmed
	from, to := max(done, 1), len(s.events)-keep
	if from >= to {
		s.mu.RUnlock()
		return
	}
	evs := slices.Clone(s.events[from:to])
	var have [][]byte // the bytes already known (a copy: another Trim may write s.raw)
	if from < len(s.raw) {
		have = slices.Clone(s.raw[from:min(to, len(s.raw))])
	}
	s.mu.RUnlock()

	// Events are immutable: those whose bytes are not known are encoded
	// unlocked, into one buffer.
	raw := make([][]byte, len(evs))
	ends := make([]int, len(evs))
	var buf []byte
	for i, ev := range evs {
		if ev == nil || (i < len(have) && have[i] != nil) {
			continue
		}
		if buf == nil {
			buf = make([]byte, 0, 384*(len(evs)-i))
		}
		var err error
		if buf, err = ev.AppendStored(buf); err != nil {
			return // an event that does not encode: nothing is trimmed this time
		}
		ends[i] = len(buf)
	}
	if cap(buf)-len(buf) > len(buf)/4 {
		buf = append([]byte(nil), buf...)
	}
	start := 0
	for i, end := range ends {
		if end > 0 {
			raw[i], start = buf[start:end:end], end
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.trimmed != done || len(s.events) < to {
		return // reloaded or trimmed meanwhile
	}
	for i, ev := range evs {
		if s.events[from+i] != ev {
			return // reloaded meanwhile
		}
	}
	if pad := to - len(s.raw); pad > 0 {
		s.raw = append(s.raw, make([][]byte, pad)...)
	}
	for i, ev := range evs {
		switch {
		case ev == nil:
		case raw[i] != nil:
			s.raw[from+i] = raw[i]
			s.events[from+i] = nil
			s.evBytes += int64(len(raw[i])) + rawSliceSize - eventSize(ev)
		default: // the store's bytes, counted as a reference when appended
			s.events[from+i] = nil
			s.evBytes -= eventSize(ev)
		}
	}
	s.trimmed = to
}

// decodeTrimmed decodes an event kept encoded, with d. The session's own
// encoding always decodes; should it not, the event read says so instead
// of stopping the process.
func decodeTrimmed(d *event.Decoder, b []byte) *event.Event {
	ev := new(event.Event)
	if err := d.Decode(b, ev); err != nil {
		ev = &event.Event{}
		ev.ErrorCode, ev.ErrorMessage = "UNREADABLE_EVENT", fmt.Sprintf("session: decode a trimmed event: %v", err)
	}
	return ev
}
