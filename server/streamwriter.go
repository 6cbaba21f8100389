package server

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"
)

// StreamWriter is an http.ResponseWriter for a response written over time,
// such as an event stream, that bounds each write: every Write and Flush
// gets a write deadline of the timeout from its start, so a client that
// stops reading is cut off (the write fails) instead of blocking the
// handler, and what the handler holds, for good, while the time between
// writes and the length of the response are not limited. When its context
// is done (the client left, the work behind the stream was cancelled) a
// write in progress fails at once, and later ones get a second at most.
// The server's /run_sse streams use it with Config.StreamWriteTimeout;
// handlers mounted beside the API (server/a2aserver) use it for theirs.
//
// Like any ResponseWriter, it is not safe for concurrent writes; Close
// must be called once the handler is done writing.
type StreamWriter struct {
	ctx     context.Context
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration // per write; not positive: none
	stop    func() bool   // unregisters cancel

	// mu guards the write deadline, which cancel sets while a write may be
	// in progress, and the fields below.
	mu        sync.Mutex
	cancelled bool // ctx is done
	broken    bool // a write failed: the client is gone
	ended     bool // Close was called
}

// cancelWriteTimeout bounds the writes of a stream whose context is done:
// the frame that reports the cancellation, and what is left to flush.
const cancelWriteTimeout = time.Second

// NewStreamWriter returns a StreamWriter writing to w, whose writes each
// get timeout (none if not positive) and end early once ctx is done.
func NewStreamWriter(ctx context.Context, w http.ResponseWriter, timeout time.Duration) *StreamWriter {
	s := &StreamWriter{ctx: ctx, w: w, rc: http.NewResponseController(w), timeout: timeout}
	s.stop = context.AfterFunc(ctx, s.cancel)
	return s
}

// cancel runs when the context is done: a write in progress fails at
// once, and later writes get cancelWriteTimeout at most. A write that
// started once the context was done (the frame that reports the
// cancellation, say) has its deadline already (arm), and keeps it: cancel
// runs in a goroutine of its own, maybe after that write began.
func (s *StreamWriter) cancel() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.cancelled {
		return
	}
	s.cancelled = true
	_ = s.rc.SetWriteDeadline(time.Now())
}

// arm sets the deadline of the write about to start.
func (s *StreamWriter) arm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		s.cancelled = true
	}
	d := s.timeout
	if s.cancelled && (d <= 0 || d > cancelWriteTimeout) {
		d = cancelWriteTimeout
	}
	if d > 0 {
		_ = s.rc.SetWriteDeadline(time.Now().Add(d)) // http.ErrNotSupported: nothing to bound
	}
}

func (s *StreamWriter) fail() {
	s.mu.Lock()
	s.broken = true
	s.mu.Unlock()
}

// Header implements http.ResponseWriter.
func (s *StreamWriter) Header() http.Header { return s.w.Header() }

// WriteHeader implements http.ResponseWriter.
func (s *StreamWriter) WriteHeader(code int) { s.w.WriteHeader(code) }

// Write implements http.ResponseWriter, within the write deadline.
func (s *StreamWriter) Write(p []byte) (int, error) {
	s.arm()
	n, err := s.w.Write(p)
	if err != nil {
		s.fail()
	}
	return n, err
}

// FlushError sends what is buffered to the client, within the write
// deadline (http.ResponseController calls it).
func (s *StreamWriter) FlushError() error {
	s.arm()
	err := s.rc.Flush()
	if err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.fail()
	}
	return err
}

// Flush implements http.Flusher, as FlushError without its error.
func (s *StreamWriter) Flush() { _ = s.FlushError() }

// Unwrap returns the ResponseWriter written to, for
// http.ResponseController.
func (s *StreamWriter) Unwrap() http.ResponseWriter { return s.w }

// Close ends the bounds: unless a write failed (the client is gone), it
// lifts the deadline, so that the connection may serve more requests.
func (s *StreamWriter) Close() {
	s.stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	if !s.broken {
		_ = s.rc.SetWriteDeadline(time.Time{})
	}
}
