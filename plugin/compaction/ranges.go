package compaction

import (
	"slices"
	"time"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
)

// slidingRange returns the range a sliding window compaction covers now, or
// nil. It reads the log back only to the overlap before the last
// compaction, so its cost does not grow with the session.
func slidingRange(sess *session.Session, interval, overlap int) *summaryRange {
	type span struct {
		id     string
		events []*event.Event // newest first
	}
	var (
		last       *event.Compaction // the newest compaction that counts
		summaries  []*event.Event    // compaction events met, newest first
		spans      []*span           // invocations, newest first
		newN, oldN int
		before     *event.Event // the newest event left out before the range
	)
	for _, e := range event.Visible(sess) { // newest first, as a model may see them
		if c := e.Actions.Compaction; c != nil {
			if last == nil {
				last = c
			}
			summaries = append(summaries, e)
			continue
		}
		if len(spans) == 0 || spans[len(spans)-1].id != e.InvocationID {
			if last == nil || e.Timestamp.After(last.End) {
				newN++
			} else if oldN == overlap {
				before = e
				break
			} else {
				oldN++
			}
			spans = append(spans, &span{id: e.InvocationID})
		}
		s := spans[len(spans)-1]
		s.events = append(s.events, e)
	}
	if newN < interval {
		return nil
	}
	var items []*event.Event
	for i := len(spans) - 1; i >= 0; i-- {
		s := spans[i]
		for j := len(s.events) - 1; j >= 0; j-- {
			items = append(items, s.events[j])
		}
	}
	var older []*event.Event
	for i := len(summaries) - 1; i >= 0; i-- {
		older = append(older, summaries[i])
	}
	return makeRange(items, nil, before, older)
}

// tokenRange returns the range a token threshold compaction covers now, or
// nil: everything the model sees but its last retain events, once the
// prompt of the latest model call made since the last compaction exceeded
// threshold. The model input is the whole history, so reading it all here
// costs no more than the next model call.
func tokenRange(sess *session.Session, threshold, retain int) *summaryRange {
	tokens := -1
	for _, e := range event.Visible(sess) { // newest first, as a model may see them
		if e.Actions.Compaction != nil {
			break
		}
		if u := e.UsageMetadata; u != nil {
			tokens = int(u.PromptTokenCount)
			break
		}
	}
	if tokens <= threshold {
		return nil
	}
	events := sess.Events()
	compactions := map[string]*event.Event{}
	for _, e := range events {
		if e.Actions.Compaction != nil {
			compactions[e.ID] = e
		}
	}
	// ModelView shows a summary as a synthetic event with the id of its
	// compaction event; put the compaction event back so the summary and
	// its range are known.
	view := event.ModelView(events)
	items := make([]*event.Event, len(view))
	for i, v := range view {
		items[i] = v
		if c, ok := compactions[v.ID]; ok && v.Actions.Compaction == nil {
			items[i] = c
		}
	}
	keep := len(items)
	for n := 0; keep > 0 && n < retain; keep-- {
		if items[keep-1].Actions.Compaction == nil {
			n++
		}
	}
	if keep == 0 {
		return nil
	}
	return makeRange(items[:keep], items[keep:], nil, nil)
}

// makeRange builds the range that covers items (events and compaction
// events, in model-view order), or the part of them that can be summarized:
// pending function calls and their interim results split items into
// segments, and the range covers the earliest segment that holds an event
// no compaction covers yet, so that compaction goes on past a call that
// stays pending without ever hiding it. The range is shrunk to cover no
// event outside its segment: not before, the newest event left out before
// items, nor rest, the events after them. older are earlier compaction
// events that become part of the input when they overlap the range.
func makeRange(items, rest []*event.Event, before *event.Event, older []*event.Event) *summaryRange {
	from, to := segment(items, older)
	if from == to {
		return nil
	}
	if from > 0 {
		before = items[from-1]
	}
	rest = append(items[to:len(items):len(items)], rest...)
	items = items[from:to]
	start, end := bounds(items[0])
	for _, e := range items[1:] {
		s, t := bounds(e)
		start, end = minTime(start, s), maxTime(end, t)
	}
	if before != nil && !before.Timestamp.Before(start) {
		start = before.Timestamp.Add(tick)
	}
	for _, e := range rest {
		if s, _ := bounds(e); !s.After(end) {
			end = s.Add(-tick)
		}
	}
	if end.Before(start) {
		return nil
	}
	r := &summaryRange{start: start, end: end}
	for _, c := range older {
		if r.overlaps(c) {
			r.input = append(r.input, c)
		}
	}
	raw := 0
	for _, e := range items {
		if e.Actions.Compaction != nil {
			if r.overlaps(e) {
				r.input = append(r.input, e)
			}
		} else if !e.Timestamp.Before(start) && !e.Timestamp.After(end) {
			r.input = append(r.input, e)
			raw++
		}
	}
	if raw == 0 {
		return nil
	}
	return r
}

// bounds returns the time span of an event: its timestamp, or the range of
// a compaction event.
func bounds(e *event.Event) (time.Time, time.Time) {
	if c := e.Actions.Compaction; c != nil {
		return c.Start, c.End
	}
	return e.Timestamp, e.Timestamp
}

func (r *summaryRange) overlaps(e *event.Event) bool {
	s, t := bounds(e)
	return !t.Before(r.start) && !r.end.Before(s)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// segment returns the bounds [from, to) of the part of items a range may
// cover: the earliest run of items between barriers that holds an event no
// compaction (of items or older) covers. Barriers are the events with a
// pausing call still waiting for the client (agent.Waiting), or with a
// response to one (an interim result), and the events with any other call
// whose response is not in items, so that a call and its response are
// summarized together.
func segment(items, older []*event.Event) (from, to int) {
	barrier := make([]bool, len(items))
	waiting := map[string]bool{}
	for i, e := range items {
		pausing, kinds := agent.PausingCalls(e)
		for j, fc := range pausing {
			if agent.Waiting(items[i+1:], kinds[j], fc.ID) {
				waiting[fc.ID] = true
				barrier[i] = true
			}
		}
	}
	answered := map[string]bool{}
	unnamed := map[string]int{} // responses without an id, by function name
	for i, e := range items {
		for _, r := range e.FunctionResponses() {
			switch {
			case waiting[r.ID]:
				barrier[i] = true
			case r.ID == "":
				unnamed[r.Name]++
			default:
				answered[r.ID] = true
			}
		}
	}
	for i, e := range items {
		for _, fc := range e.FunctionCalls() {
			switch {
			case fc.ID != "":
				barrier[i] = barrier[i] || !answered[fc.ID]
			case unnamed[fc.Name] == 0:
				barrier[i] = true
			default:
				unnamed[fc.Name]--
			}
		}
	}
	var compactions []*event.Event
	for _, e := range items {
		if e.Actions.Compaction != nil {
			compactions = append(compactions, e)
		}
	}
	compactions = append(compactions, older...)
	covered := func(e *event.Event) bool {
		if e.Actions.Compaction != nil {
			return true
		}
		for _, c := range compactions {
			if r := c.Actions.Compaction; !e.Timestamp.Before(r.Start) && !e.Timestamp.After(r.End) {
				return true
			}
		}
		return false
	}
	for from = 0; from < len(items); from = to + 1 {
		for to = from; to < len(items) && !barrier[to]; to++ {
		}
		if slices.ContainsFunc(items[from:to], func(e *event.Event) bool { return !covered(e) }) {
			return from, to
		}
	}
	return len(items), len(items)
}
