package event

import "iter"

// Log is an indexed, read-only sequence of events, oldest first: a session
// (session.Session) or a slice ([Events]).
type Log interface {
	Len() int
	At(i int) *Event
}

// Events adapts a slice of events to [Log].
type Events []*Event

// Len implements Log.
func (s Events) Len() int { return len(s) }

// At implements Log.
func (s Events) At(i int) *Event { return s[i] }

// Visible yields the events of log that no rewind took back, newest first,
// with their indexes. This is the one rule of rewinds: an event with
// Actions.RewindBeforeInvocationID hides itself and every earlier event
// back to the first event of the invocation it names. Hidden events are
// skipped; everything else, compaction events included, is yielded.
func Visible(log Log) iter.Seq2[int, *Event] {
	return func(yield func(int, *Event) bool) {
		rewindTo := "" // while set, hide events until the start of that invocation
		for i := log.Len() - 1; i >= 0; i-- {
			e := log.At(i)
			if rewindTo != "" {
				if e.InvocationID == rewindTo && (i == 0 || log.At(i-1).InvocationID != rewindTo) {
					rewindTo = ""
				}
				continue
			}
			if id := e.Actions.RewindBeforeInvocationID; id != "" {
				rewindTo = id
				continue
			}
			if !yield(i, e) {
				return
			}
		}
	}
}
