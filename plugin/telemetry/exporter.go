package telemetry

import (
	"context"
	"slices"
	"sync"
	"unsafe"

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

// DefaultMaxSpanBytes is the estimated memory an Exporter keeps spans in
// when its options leave MaxBytes zero.
const DefaultMaxSpanBytes = 32 << 20

// DefaultMaxAttributeBytes is the length to which an Exporter truncates a
// string attribute when its options leave MaxAttributeBytes zero.
const DefaultMaxAttributeBytes = 16 << 10

// ExporterOptions bounds what an Exporter keeps. The zero value is the
// default.
type ExporterOptions struct {
	// MaxSpans is the number of spans kept (DefaultMaxSpans if zero or
	// negative).
	MaxSpans int
	// MaxBytes bounds the estimated memory of the kept spans: their
	// names, ids and attributes, payloads included (DefaultMaxSpanBytes if
	// zero; negative: no bound in bytes).
	MaxBytes int64
	// MaxAttributeBytes truncates each string attribute to this length,
	// marking the cut (DefaultMaxAttributeBytes if zero; negative: none is
	// truncated).
	MaxAttributeBytes int
}

// Exporter is an in-memory span exporter of bounded size: it keeps the most
// recent spans, at most a number of them and a number of bytes, dropping
// the oldest. It answers the server's debug trace routes (see Span). It is
// safe for concurrent use.
//
// Register it with a synchronous processor (sdktrace.WithSyncer) so that a
// span can be looked up as soon as it has ended.
type Exporter struct {
	maxSpans int
	maxBytes int64 // negative: unbounded
	maxAttr  int   // negative: no truncation

	mu    sync.Mutex
	recs  []record // held records are recs[head:], oldest first
	head  int
	bytes int64  // estimated memory of the held records
	total uint64 // spans exported since creation
}

// record is a finished span as the trace routes report it, with the keys
// they search by.
type record struct {
	span    Span
	owner   Owner
	eventID string
	size    int64 // estimated memory
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
// (DefaultMaxSpans if maxSpans <= 0) and the default bounds of
// ExporterOptions otherwise.
func NewExporter(maxSpans int) *Exporter {
	return NewExporterWith(ExporterOptions{MaxSpans: maxSpans})
}

// NewExporterWith returns an exporter with the given bounds.
func NewExporterWith(opts ExporterOptions) *Exporter {
	e := &Exporter{maxSpans: opts.MaxSpans, maxBytes: opts.MaxBytes, maxAttr: opts.MaxAttributeBytes}
	if e.maxSpans <= 0 {
		e.maxSpans = DefaultMaxSpans
	}
	if e.maxBytes == 0 {
		e.maxBytes = DefaultMaxSpanBytes
	}
	if e.maxAttr == 0 {
		e.maxAttr = DefaultMaxAttributeBytes
	}
	return e
}

// ExportSpans implements sdktrace.SpanExporter: it stores the spans,
// dropping the oldest beyond the bounds.
func (e *Exporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	recs := make([]record, 0, len(spans))
	for _, s := range spans {
		recs = append(recs, convert(s, e.maxAttr))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range recs {
		e.total++
		e.recs = append(e.recs, r)
		e.bytes += r.size
		for n := len(e.recs) - e.head; n > 0 && (n > e.maxSpans || (e.maxBytes >= 0 && e.bytes > e.maxBytes)); n-- {
			e.bytes -= e.recs[e.head].size
			e.recs[e.head] = record{}
			e.head++
		}
	}
	// Reclaim the dropped slots once they are the larger part.
	if e.head > 64 && e.head*2 >= len(e.recs) {
		n := copy(e.recs, e.recs[e.head:])
		clear(e.recs[n:])
		e.recs, e.head = e.recs[:n], 0
	}
	return nil
}

// Shutdown implements sdktrace.SpanExporter. The stored spans stay readable.
func (e *Exporter) Shutdown(context.Context) error { return nil }

// Len returns the number of spans held.
func (e *Exporter) Len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.recs) - e.head
}

// Cap returns the maximum number of spans held.
func (e *Exporter) Cap() int { return e.maxSpans }

// Bytes returns the estimated memory of the spans held.
func (e *Exporter) Bytes() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.bytes
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
	for i := e.head; i < len(e.recs); i++ {
		f(&e.recs[i])
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

// Estimated fixed costs of a record and of one attribute in its map.
const (
	recordBytes = int64(unsafe.Sizeof(record{})) + 56 // and its map's header
	attrBytes   = 40                                  // a map slot and the boxed value
)

// convert turns a finished SDK span into a record, truncating string
// attributes to maxAttr bytes (none if negative).
func convert(s sdktrace.ReadOnlySpan, maxAttr int) record {
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
	r.size = recordBytes + int64(len(r.span.Name)+len(r.span.SpanID)+len(r.span.TraceID)+len(r.span.ParentSpanID))
	for _, kv := range attrs {
		v := attrValue(kv.Value)
		switch x := v.(type) {
		case string:
			if maxAttr >= 0 {
				x = truncate(x, maxAttr)
				v = x
			}
			r.size += int64(len(x))
		case []string:
			for i, e := range x {
				if maxAttr >= 0 {
					x[i] = truncate(e, maxAttr)
				}
				r.size += 16 + int64(len(x[i]))
			}
		case []int64:
			r.size += 8 * int64(len(x))
		case []float64:
			r.size += 8 * int64(len(x))
		case []bool:
			r.size += int64(len(x))
		}
		r.size += attrBytes + int64(len(kv.Key))
		r.span.Attributes[string(kv.Key)] = v
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
