package server

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/loomkit/loom/plugin/telemetry"
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

// TraceQuery names the traces a debug trace route may read: those of the
// sessions of one user. UserID is empty only when AnyUser is set. AppName
// is empty on the older /debug/trace routes when the request names no app,
// and then matches every app; SessionID is empty for event lookups.
type TraceQuery struct {
	AppName   string
	UserID    string
	SessionID string
	// AnyUser asks for the session or event of any user. The server sets
	// it only for a request that names no user in the development setting
	// (see Server.devSetting), which is what ADK's web UI sends.
	AnyUser bool
}

// TraceSource answers the debug trace routes from recorded spans. It must
// return only spans of the sessions the query names, so that a user never
// reads another user's model requests, responses and tool arguments.
// Implementations must be safe for concurrent use.
type TraceSource interface {
	// SessionSpans returns the spans recorded for the session q names,
	// oldest first.
	SessionSpans(ctx context.Context, q TraceQuery) ([]Span, error)
	// EventAttributes returns the attributes of the span that produced an
	// event of a session of q's user (and app, if set), or nil if there is
	// none.
	EventAttributes(ctx context.Context, q TraceQuery, eventID string) (map[string]any, error)
}

// traceQuery returns the owner a trace route reads for: the {app} of the
// /dev/apps/... routes (or the app_name query parameter of the older ones)
// and the user named by the user_id query parameter or bound by
// Config.Authenticate. ok is false when no user is named: such a request
// can see no trace, except in the development setting, where it reads
// the traces of any user.
func (s *Server) traceQuery(r *http.Request) (q TraceQuery, ok bool, err error) {
	if app := r.PathValue("app"); app != "" {
		if _, err := s.app(app); err != nil {
			return q, false, err
		}
		q.AppName = app
	} else if app := queryParam(r, "appName", "app_name"); app != "" {
		if _, err := s.app(app); err != nil {
			return q, false, err
		}
		q.AppName = app
	}
	q.UserID = queryParam(r, "userId", "user_id")
	if err := checkUser(r, q.UserID); err != nil {
		return q, false, err
	}
	if bound, authed := AuthenticatedUser(r.Context()); authed {
		q.UserID = bound
	}
	if err := checkID("user id", q.UserID); err != nil {
		return q, false, err
	}
	if q.UserID == "" && s.devSetting(r) {
		q.AnyUser = true
	}
	return q, q.UserID != "" || q.AnyUser, nil
}

// devSetting reports whether r comes in the development setting, where one
// person runs the server on their machine and ADK's web UI reads traces
// without naming a user: no Config.Authenticate, no Config.AllowedHosts
// but loopback names (so the Host header names the loopback interface)
// and a client on a loopback address. A server reached from elsewhere, or
// with users, keeps every trace to its owner.
func (s *Server) devSetting(r *http.Request) bool {
	if s.cfg.Authenticate != nil {
		return false
	}
	for _, h := range s.cfg.AllowedHosts {
		if !isLoopback(h) {
			return false
		}
	}
	return isLoopback(r.RemoteAddr)
}

// isLoopback reports whether hostport (a host, or host:port) names the
// loopback interface.
func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// queryParam returns a query parameter given in camelCase or snake_case.
func queryParam(r *http.Request, camelName, snake string) string {
	q := r.URL.Query()
	if v := q.Get(camelName); v != "" {
		return v
	}
	return q.Get(snake)
}

// traceSession serves GET .../debug/trace/session/{sid}?user_id=U: the
// spans of U's session {sid}. A request naming no user gets an empty list
// (what ADK's web UI, which sends none, can display), or in the
// development setting the spans of the session {sid} of any user.
func (s *Server) traceSession(w http.ResponseWriter, r *http.Request) error {
	q, ok, err := s.traceQuery(r)
	if err != nil {
		return err
	}
	q.SessionID = r.PathValue("sid")
	spans := []Span{}
	if ok && s.cfg.Traces != nil {
		got, err := s.cfg.Traces.SessionSpans(r.Context(), q)
		if err != nil {
			return err
		}
		spans = append(spans, got...)
	}
	return writeJSON(w, http.StatusOK, spans)
}

// traceEvent serves GET .../debug/trace/{eventID}?user_id=U: the
// attributes of the span that produced the event, which must belong to a
// session of U; 404 otherwise, or when no user is named.
func (s *Server) traceEvent(w http.ResponseWriter, r *http.Request) error {
	q, ok, err := s.traceQuery(r)
	if err != nil {
		return err
	}
	var attrs map[string]any
	if ok && s.cfg.Traces != nil {
		if attrs, err = s.cfg.Traces.EventAttributes(r.Context(), q, r.PathValue("eventID")); err != nil {
			return err
		}
	}
	if attrs == nil {
		return &detailError{detail: "Trace not found: " + r.PathValue("eventID"), err: errNotFound}
	}
	return writeJSON(w, http.StatusOK, attrs)
}

// TelemetryTraces answers the debug trace routes from the spans a
// telemetry plugin keeps (plugin/telemetry's in-memory exporter), each
// query reading only its owner's: Config{Traces: TelemetryTraces(tel)}.
func TelemetryTraces(tel *telemetry.Telemetry) TraceSource { return telemetryTraces{tel} }

// telemetryTraces adapts a telemetry plugin to TraceSource. (The plugin, a
// lower layer, knows nothing of the server; this is where the two meet.)
type telemetryTraces struct{ tel *telemetry.Telemetry }

func (t telemetryTraces) SessionSpans(ctx context.Context, q TraceQuery) ([]Span, error) {
	spans, err := t.tel.SessionSpans(ctx, telemetry.Owner(q))
	out := make([]Span, len(spans))
	for i, s := range spans {
		out[i] = Span(s)
	}
	return out, err
}

func (t telemetryTraces) EventAttributes(ctx context.Context, q TraceQuery, eventID string) (map[string]any, error) {
	return t.tel.EventAttributes(ctx, telemetry.Owner(q), eventID)
}
