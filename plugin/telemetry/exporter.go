package telemetry

import (
	"context"
	"slices"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Span is one recorded span as the debug trace routes report it. Times are
// nanoseconds since the Unix epoch.
type Span struct {
	Name         string         `json:"name"`
	SpanID       string         `json:"span_id"`
	TraceID      string         `json:"trace_id"`
	StartTime    int64          `json:"start_time"`
	EndTime      int64          `json:"end_time"`
	Attributes   map[string]any `json:"attributes"`
	ParentSpanID string         `json:"parent_span_id,omitempty"`
}

// DefaultMaxSpans is the capacity of an Exporter created with a size of zero.
const DefaultMaxSpans = 10_000

// Exporter is an in-memory span exporter of bounded size: it keeps the most
// recent spans, at most its capacity, overwriting the oldest. It answers the
// server's debug trace routes (see Span). It is safe
// for concurrent use.
//
// Register it with a synchronous processor (sdktrace.WithSyncer) so that a
// span can be looked up as soon as it has ended.
type Exporter struct {
	mu    sync.Mutex
	ring  []record // len(ring) <= cap(ring) == capacity
	next  int      // slot of the next record once the ring is full
	total uint64   // spans exported since creation
}

// record is a finished span as the trace routes report it, with the keys
// they search by.
type record struct {
	span    Span
	owner   Owner
	eventID string
}

// Owner names the session a trace belongs to. In a query, an empty AppName
// matches every app; UserID and SessionID must match exactly.
type Owner struct {
	AppName   string
	UserID    string
	SessionID string
}

// matches reports whether a record's owner o is covered by the query q
// (q.SessionID is ignored when empty, for event queries).
func (o Owner) matches(q Owner) bool {
	return o.UserID != "" && o.UserID == q.UserID &&
		(q.AppName == "" || o.AppName == q.AppName) &&
		(q.SessionID == "" || o.SessionID == q.SessionID)
}

var _ sdktrace.SpanExporter = (*Exporter)(nil)

// NewExporter returns an exporter keeping at most maxSpans spans
// (DefaultMaxSpans if maxSpans <= 0).
func NewExporter(maxSpans int) *Exporter {
	if maxSpans <= 0 {
		maxSpans = DefaultMaxSpans
	}
	return &Exporter{ring: make([]record, 0, maxSpans)}
}

// ExportSpans implements sdktrace.SpanExporter: it stores the spans,
// evicting the oldest when full.
func (e *Exporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	recs := make([]record, 0, len(spans))
	for _, s := range spans {
		recs = append(recs, convert(s))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range recs {
		e.total++
		if len(e.ring) < cap(e.ring) {
			e.ring = append(e.ring, r)
			continue
		}
		e.ring[e.next] = r
		e.next = (e.next + 1) % len(e.ring)
	}
	return nil
}

// Shutdown implements sdktrace.SpanExporter. The stored spans stay readable.
func (e *Exporter) Shutdown(context.Context) error { return nil }

// Len returns the number of spans held.
func (e *Exporter) Len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.ring)
}

// Cap returns the maximum number of spans held.
func (e *Exporter) Cap() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return cap(e.ring)
}

// Exported returns the number of spans exported since the exporter was
// created, including those since evicted.
func (e *Exporter) Exported() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.total
}

// each calls f on the held records, oldest first, with the lock held.
func (e *Exporter) each(f func(*record)) {
	n := len(e.ring)
	start := 0
	if n == cap(e.ring) {
		start = e.next
	}
	for i := range n {
		f(&e.ring[(start+i)%n])
	}
}

// SessionSpans returns every held span of the traces of the session of
// owner (app, user and session; an empty AppName matches any app), ordered
// by start time. Spans of a session with the same id under another user or
// app are never returned.
func (e *Exporter) SessionSpans(_ context.Context, owner Owner) ([]Span, error) {
	var out []Span
	if owner.SessionID == "" || owner.UserID == "" {
		return out, nil
	}
	e.mu.Lock()
	traces := map[string]bool{}
	e.each(func(r *record) {
		if r.owner.matches(owner) {
			traces[r.span.TraceID] = true
		}
	})
	if len(traces) > 0 {
		e.each(func(r *record) {
			if traces[r.span.TraceID] {
				out = append(out, r.span)
			}
		})
	}
	e.mu.Unlock()
	// The caller owns what it gets: the stored maps stay untouched.
	for i := range out {
		out[i].Attributes = cloneAttrs(out[i].Attributes)
	}
	slices.SortStableFunc(out, func(a, b Span) int {
		switch {
		case a.StartTime < b.StartTime:
			return -1
		case a.StartTime > b.StartTime:
			return 1
		}
		return 0
	})
	return out, nil
}

// EventAttributes returns the attributes of the oldest held span recorded
// for the event (its model call or tool call) in a session of the owner's
// user and app (owner.SessionID, if set, narrows it to that session), or
// nil: an event of another user is not found.
func (e *Exporter) EventAttributes(_ context.Context, owner Owner, eventID string) (map[string]any, error) {
	if eventID == "" || owner.UserID == "" {
		return nil, nil
	}
	e.mu.Lock()
	var found map[string]any
	e.each(func(r *record) {
		if found == nil && r.eventID == eventID && r.owner.matches(owner) {
			found = r.span.Attributes
		}
	})
	e.mu.Unlock()
	return cloneAttrs(found), nil
}

func cloneAttrs(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// convert turns a finished SDK span into a record.
func convert(s sdktrace.ReadOnlySpan) record {
	sc := s.SpanContext()
	attrs := s.Attributes()
	r := record{span: Span{
		Name:       s.Name(),
		SpanID:     sc.SpanID().String(),
		TraceID:    sc.TraceID().String(),
		StartTime:  s.StartTime().UnixNano(),
		EndTime:    s.EndTime().UnixNano(),
		Attributes: make(map[string]any, len(attrs)),
	}}
	if p := s.Parent(); p.SpanID().IsValid() {
		r.span.ParentSpanID = p.SpanID().String()
	}
	for _, kv := range attrs {
		r.span.Attributes[string(kv.Key)] = attrValue(kv.Value)
		switch kv.Key {
		case keySessionID:
			r.owner.SessionID = kv.Value.AsString()
		case keyAppName:
			r.owner.AppName = kv.Value.AsString()
		case keyUserID:
			r.owner.UserID = kv.Value.AsString()
		case keyEventID:
			r.eventID = kv.Value.AsString()
		}
	}
	return r
}

// attrValue returns the JSON-friendly value of an attribute.
func attrValue(v attribute.Value) any {
	switch v.Type() {
	case attribute.STRINGSLICE:
		return v.AsStringSlice()
	case attribute.INT64SLICE:
		return v.AsInt64Slice()
	case attribute.FLOAT64SLICE:
		return v.AsFloat64Slice()
	case attribute.BOOLSLICE:
		return v.AsBoolSlice()
	}
	return v.AsInterface()
}
