package telemetry

import (
	"context"
	"maps"
	"slices"
	"sync"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
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
// It is a span processor as well as an exporter: register it with
// sdktrace.WithSpanProcessor, which stores each sampled span as it ends
// with no batch to build, or behind a synchronous processor
// (sdktrace.WithSyncer). Either way a span can be looked up as soon as it
// has ended.
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

// record is a finished span, kept as the SDK hands it over and converted
// to a Span only when a trace route reads it, with the keys the routes
// search by.
type record struct {
	span    sdktrace.ReadOnlySpan // nil if converted
	conv    *Span                 // the span, converted at once because it had attributes to cut
	traceID trace.TraceID
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
	// AnyUser, in a query, matches the records of every user (UserID is
	// then ignored): for a single-user development server, whose web UI
	// names no user.
	AnyUser bool
}

// matches reports whether a record's owner o is covered by the query q
// (q.SessionID is ignored when empty, for event queries).
func (o Owner) matches(q Owner) bool {
	return o.UserID != "" && (q.AnyUser || o.UserID == q.UserID) &&
		(q.AppName == "" || o.AppName == q.AppName) &&
		(q.SessionID == "" || o.SessionID == q.SessionID)
}

var (
	_ sdktrace.SpanExporter  = (*Exporter)(nil)
	_ sdktrace.SpanProcessor = (*Exporter)(nil)
)

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
		recs = append(recs, keep(s, e.maxAttr))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range recs {
		e.addLocked(r)
	}
	return nil
}

// OnStart implements sdktrace.SpanProcessor. Spans are kept when they end.
func (e *Exporter) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd implements sdktrace.SpanProcessor: it stores a sampled span as
// ExportSpans does.
func (e *Exporter) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	r := keep(s, e.maxAttr)
	e.mu.Lock()
	e.addLocked(r)
	e.mu.Unlock()
}

// ForceFlush implements sdktrace.SpanProcessor. Nothing is buffered.
func (e *Exporter) ForceFlush(context.Context) error { return nil }

// addLocked stores a record, dropping the oldest beyond the bounds. e.mu
// is held.
func (e *Exporter) addLocked(r record) {
	e.total++
	e.recs = append(e.recs, r)
	e.bytes += r.size
	for n := len(e.recs) - e.head; n > 0 && (n > e.maxSpans || (e.maxBytes >= 0 && e.bytes > e.maxBytes)); n-- {
		e.bytes -= e.recs[e.head].size
		e.recs[e.head] = record{}
		e.head++
	}
	// Reclaim the dropped slots once they are the larger part.
	if e.head > 64 && e.head*2 >= len(e.recs) {
		n := copy(e.recs, e.recs[e.head:])
		clear(e.recs[n:])
		e.recs, e.head = e.recs[:n], 0
	}
}

// Shutdown implements sdktrace.SpanExporter and sdktrace.SpanProcessor.
// The stored spans stay readable.
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
	if owner.SessionID == "" || (owner.UserID == "" && !owner.AnyUser) {
		return out, nil
	}
	e.mu.Lock()
	traces := map[trace.TraceID]bool{}
	e.each(func(r *record) {
		if r.owner.matches(owner) {
			traces[r.traceID] = true
		}
	})
	var found []record
	if len(traces) > 0 {
		e.each(func(r *record) {
			if traces[r.traceID] {
				found = append(found, *r)
			}
		})
	}
	e.mu.Unlock()
	for _, r := range found {
		out = append(out, r.read(e.maxAttr))
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
	if eventID == "" || (owner.UserID == "" && !owner.AnyUser) {
		return nil, nil
	}
	e.mu.Lock()
	var found *record
	e.each(func(r *record) {
		if found == nil && r.eventID == eventID && r.owner.matches(owner) {
			c := *r
			found = &c
		}
	})
	e.mu.Unlock()
	if found == nil {
		return nil, nil
	}
	return found.read(e.maxAttr).Attributes, nil
}

// read returns the record's span, the caller's own.
func (r *record) read(maxAttr int) Span {
	if r.conv == nil {
		return convert(r.span, maxAttr)
	}
	sp := *r.conv
	sp.Attributes = maps.Clone(sp.Attributes)
	return sp
}

// Estimated fixed costs of a record (with the SDK's snapshot of the span)
// and of one attribute in the snapshot.
const (
	recordBytes = int64(unsafe.Sizeof(record{})) + 512
	attrBytes   = 48
)

// keep makes the record of a finished SDK span: its search keys and its
// estimated memory. Converting it waits for a read (convert), unless it has
// string attributes over maxAttr bytes: then it is converted (and they are
// cut) at once, so that the long values are not held.
func keep(s sdktrace.ReadOnlySpan, maxAttr int) record {
	r := record{span: s, traceID: s.SpanContext().TraceID(), size: recordBytes + int64(len(s.Name()))}
	for _, kv := range s.Attributes() {
		r.size += attrBytes + int64(len(kv.Key))
		switch kv.Value.Type() {
		case attribute.STRING:
			n := len(kv.Value.AsString())
			if maxAttr >= 0 && n > maxAttr {
				r.conv = new(Span)
			}
			r.size += int64(n)
		case attribute.STRINGSLICE:
			list, ok := sharedFinishReason(kv) // read without copying it
			if !ok {
				list = kv.Value.AsStringSlice()
			}
			for _, x := range list {
				if maxAttr >= 0 && len(x) > maxAttr {
					r.conv = new(Span)
				}
				r.size += 16 + int64(len(x))
			}
		case attribute.INT64SLICE:
			r.size += 8 * int64(len(kv.Value.AsInt64Slice()))
		case attribute.FLOAT64SLICE:
			r.size += 8 * int64(len(kv.Value.AsFloat64Slice()))
		case attribute.BOOLSLICE:
			r.size += int64(len(kv.Value.AsBoolSlice()))
		}
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
	if r.conv != nil {
		*r.conv, r.span = convert(s, maxAttr), nil
		r.size = recordBytes + spanSize(r.conv)
	}
	return r
}

// spanSize estimates the memory of a converted span.
func spanSize(sp *Span) int64 {
	n := int64(len(sp.Name) + len(sp.SpanID) + len(sp.TraceID) + len(sp.ParentSpanID))
	for k, v := range sp.Attributes {
		n += attrBytes + int64(len(k))
		switch x := v.(type) {
		case string:
			n += int64(len(x))
		case []string:
			for _, e := range x {
				n += 16 + int64(len(e))
			}
		case []int64:
			n += 8 * int64(len(x))
		case []float64:
			n += 8 * int64(len(x))
		case []bool:
			n += int64(len(x))
		}
	}
	return n
}

// convert turns a finished SDK span into the Span the trace routes report,
// a value of the caller's own, truncating string attributes to maxAttr
// bytes (none if negative).
func convert(s sdktrace.ReadOnlySpan, maxAttr int) Span {
	sc := s.SpanContext()
	attrs := s.Attributes()
	span := Span{
		Name:       s.Name(),
		SpanID:     sc.SpanID().String(),
		TraceID:    sc.TraceID().String(),
		StartTime:  s.StartTime().UnixNano(),
		EndTime:    s.EndTime().UnixNano(),
		Attributes: make(map[string]any, len(attrs)),
	}
	if p := s.Parent(); p.SpanID().IsValid() {
		span.ParentSpanID = p.SpanID().String()
	}
	for _, kv := range attrs {
		v := attrValue(kv.Value)
		switch x := v.(type) {
		case string:
			if maxAttr >= 0 {
				v = truncate(x, maxAttr)
			}
		case []string:
			for i, e := range x {
				if maxAttr >= 0 {
					x[i] = truncate(e, maxAttr)
				}
			}
		}
		span.Attributes[string(kv.Key)] = v
	}
	return span
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
