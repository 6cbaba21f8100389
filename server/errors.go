package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
)

// Errors the server reports; serveError maps them to statuses.
var (
	errAppNotFound   = errors.New("app not found")
	errBadRequest    = errors.New("bad request")
	errUnprocessable = errors.New("unprocessable request")
	errCancelled     = errors.New("invocation cancelled")
	errClientGone    = errors.New("client disconnected")
	errForbidden     = errors.New("forbidden") // a user other than the authenticated one, a refused history
	errShutdown      = errors.New("server is shutting down")
	errNotFound      = errors.New("not found")
	errConflict      = errors.New("conflict") // a request that does not fit the session's current state
)

// statusClientClosed is the status logged for a request whose client went
// away (nginx's 499); the client never sees it: serveError writes nothing
// for it.
const statusClientClosed = 499

// detailError gives an error the detail text the client sees. The status
// still comes from the error it wraps.
type detailError struct {
	detail string
	err    error
}

func (e *detailError) Error() string { return e.detail + ": " + e.err.Error() }
func (e *detailError) Unwrap() error { return e.err }

// badRequest returns an error answered with 400 and the given detail.
func badRequest(format string, args ...any) error {
	return &detailError{detail: fmt.Sprintf(format, args...), err: errBadRequest}
}

// unprocessable returns an error answered with 422 and the given detail.
func unprocessable(format string, args ...any) error {
	return &detailError{detail: fmt.Sprintf(format, args...), err: errUnprocessable}
}

// sessionError attaches ADK's detail texts to session errors about id.
func sessionError(id string, err error) error {
	switch {
	case errors.Is(err, session.ErrNotFound):
		return &detailError{detail: "Session not found: " + id, err: err}
	case errors.Is(err, session.ErrAlreadyExists):
		return &detailError{detail: "Session already exists: " + id, err: err}
	}
	return err
}

// artifactError attaches a detail text to artifact errors about name.
func artifactError(name string, err error) error {
	if errors.Is(err, artifact.ErrNotFound) {
		return &detailError{detail: "Artifact not found: " + name, err: err}
	}
	return err
}

// status maps an error to its HTTP status. It is the only place that does.
func status(err error) int {
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr), errors.Is(err, errTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, errUnauthenticated):
		return http.StatusUnauthorized
	case errors.Is(err, errForbidden):
		return http.StatusForbidden
	case errors.Is(err, errAppNotFound), errors.Is(err, errNotFound), errors.Is(err, session.ErrNotFound), errors.Is(err, artifact.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, session.ErrAlreadyExists), errors.Is(err, session.ErrStale), errors.Is(err, errConflict):
		return http.StatusConflict
	case errors.Is(err, errBadRequest), errors.Is(err, session.ErrInvalid),
		errors.Is(err, runner.ErrInvalid), errors.Is(err, artifact.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, errUnprocessable):
		return http.StatusUnprocessableEntity
	case errors.Is(err, errShutdown):
		return http.StatusServiceUnavailable
	case errors.Is(err, errBusy):
		return http.StatusTooManyRequests
	case errors.Is(err, errNotImplemented):
		return http.StatusNotImplemented
	case isCancelled(err):
		// Cancelled through the cancel route while the client waits.
		return http.StatusConflict
	case errors.Is(err, context.Canceled):
		return statusClientClosed
	}
	var me *model.Error
	if errors.As(err, &me) {
		return modelStatus(me)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// modelStatus maps a model provider's failure to the status of a gateway
// whose upstream failed: its rate limit stays 429 (the client should slow
// down), a timeout is 504, an overloaded or unavailable provider 503, and
// any other failure 502.
func modelStatus(me *model.Error) int {
	switch {
	case me.StatusCode == http.StatusTooManyRequests || me.Code == "RESOURCE_EXHAUSTED" || me.Code == "rate_limit_error":
		return http.StatusTooManyRequests
	case me.Code == "TIMEOUT" || me.StatusCode == http.StatusRequestTimeout || me.StatusCode == http.StatusGatewayTimeout:
		return http.StatusGatewayTimeout
	case me.StatusCode == http.StatusServiceUnavailable || me.StatusCode == 529 || me.Retryable:
		return http.StatusServiceUnavailable
	}
	return http.StatusBadGateway
}

// errorBody is ADK's error response.
type errorBody struct {
	Detail string `json:"detail"`
}

// detail returns the text a client sees for err.
func detail(err error) string {
	var de *detailError
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &de):
		return de.detail
	case errors.As(err, &maxErr):
		return fmt.Sprintf("Request body too large (limit %d bytes)", maxErr.Limit)
	case errors.Is(err, errShutdown):
		return "Server is shutting down"
	case isCancelled(err):
		return "Invocation cancelled"
	}
	return err.Error()
}

// serveError answers a request whose handler failed.
func (s *Server) serveError(w http.ResponseWriter, r *http.Request, err error) {
	code := status(err)
	if code == statusClientClosed && r.Context().Err() == nil {
		code = http.StatusInternalServerError
	}
	if code >= http.StatusInternalServerError && code != http.StatusServiceUnavailable {
		s.log.ErrorContext(r.Context(), "server: request failed", "method", r.Method, "path", r.URL.Path, "status", code, "error", err)
	}
	if code == statusClientClosed {
		return // nobody is listening
	}
	_ = writeJSON(w, code, errorBody{detail(err)})
}

// writeJSON writes v as a JSON response.
func writeJSON(w http.ResponseWriter, code int, v any) error {
	var b []byte
	var err error
	switch m := v.(type) {
	case *session.Session, *event.Event:
		// They write compact JSON, escaped as encoding/json escapes it:
		// reading it through json.Marshal again would only copy it.
		b, err = m.(json.Marshaler).MarshalJSON()
	default:
		b, err = json.Marshal(v)
	}
	if err != nil {
		return fmt.Errorf("server: encode response: %w", err)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b) // a failed write means the client is gone: nothing left to do
	return nil
}

// isCancelled reports whether err ends an invocation cancelled on request:
// through this server's cancel route, or through another replica's when
// the replicas share a session store (session.ErrCancelRequested).
func isCancelled(err error) bool {
	return errors.Is(err, errCancelled) || errors.Is(err, session.ErrCancelRequested)
}
