package server

import (
	"context"
	"net/http"
)

// Span is one recorded trace span as the debug trace routes report it.
// Times are nanoseconds since the Unix epoch.
type Span struct {
	Name         string         `json:"name"`
	SpanID       string         `json:"span_id"`
	TraceID      string         `json:"trace_id"`
	StartTime    int64          `json:"start_time"`
	EndTime      int64          `json:"end_time"`
	Attributes   map[string]any `json:"attributes"`
	ParentSpanID string         `json:"parent_span_id,omitempty"`
}

// TraceSource answers the debug trace routes from recorded spans.
// Implementations must be safe for concurrent use.
type TraceSource interface {
	// SessionSpans returns the spans recorded for a session, oldest first.
	SessionSpans(ctx context.Context, sessionID string) ([]Span, error)
	// EventAttributes returns the attributes of the span that produced an
	// event, or nil if there is none.
	EventAttributes(ctx context.Context, eventID string) (map[string]any, error)
}

// checkTraceApp rejects an unknown {app} on the /dev/apps/... routes; the
// older /debug/trace routes have none.
func (s *Server) checkTraceApp(r *http.Request) error {
	if app := r.PathValue("app"); app != "" {
		_, err := s.app(app)
		return err
	}
	return nil
}

// traceSession serves GET .../debug/trace/session/{sid}.
func (s *Server) traceSession(w http.ResponseWriter, r *http.Request) error {
	if err := s.checkTraceApp(r); err != nil {
		return err
	}
	spans := []Span{}
	if s.cfg.Traces != nil {
		got, err := s.cfg.Traces.SessionSpans(r.Context(), r.PathValue("sid"))
		if err != nil {
			return err
		}
		spans = append(spans, got...)
	}
	return writeJSON(w, http.StatusOK, spans)
}

// traceEvent serves GET .../debug/trace/{eventID}.
func (s *Server) traceEvent(w http.ResponseWriter, r *http.Request) error {
	if err := s.checkTraceApp(r); err != nil {
		return err
	}
	attrs := map[string]any{}
	if s.cfg.Traces != nil {
		got, err := s.cfg.Traces.EventAttributes(r.Context(), r.PathValue("eventID"))
		if err != nil {
			return err
		}
		for k, v := range got {
			attrs[k] = v
		}
	}
	return writeJSON(w, http.StatusOK, attrs)
}
