package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"sync"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
)

// runRequest is ADK's RunAgentRequest.
type runRequest struct {
	AppName    string
	UserID     string
	SessionID  string
	NewMessage *genai.Content
	Streaming  bool
	StateDelta map[string]any
	// InvocationID, when set, resumes that invocation of the session
	// (runner.RunOptions.InvocationID).
	InvocationID string
	// RetryOf is Loom's own field loomRetryOf, which ADK clients never
	// send: the id of a user event the session already stores whose turn
	// failed. The run then runs that turn again (runner.Runner.Resume)
	// instead of storing NewMessage as a new message.
	RetryOf string
}

func decodeRunRequest(r *http.Request) (*runRequest, error) {
	f, err := readObject(r)
	if err != nil {
		return nil, err
	}
	var req runRequest
	for _, m := range []struct {
		key string
		dst *string
	}{{"appName", &req.AppName}, {"userId", &req.UserID}, {"sessionId", &req.SessionID}, {"invocationId", &req.InvocationID}, {"loomRetryOf", &req.RetryOf}} {
		if *m.dst, err = f.string(m.key); err != nil {
			return nil, err
		}
	}
	if req.Streaming, err = f.bool("streaming"); err != nil {
		return nil, err
	}
	if req.StateDelta, err = f.object("stateDelta"); err != nil {
		return nil, err
	}
	if req.NewMessage, err = f.content("newMessage"); err != nil {
		return nil, err
	}
	if bound, ok := AuthenticatedUser(r.Context()); ok && req.UserID == "" {
		req.UserID = bound
	}
	if err := checkUser(r, req.UserID); err != nil {
		return nil, err
	}
	for _, id := range []struct{ what, v string }{{"appName", req.AppName}, {"userId", req.UserID}, {"sessionId", req.SessionID}} {
		if err := checkID(id.what, id.v); err != nil {
			return nil, err
		}
	}
	for _, m := range []struct {
		key     string
		missing bool
	}{{"appName", req.AppName == ""}, {"userId", req.UserID == ""}, {"sessionId", req.SessionID == ""}, {"newMessage", req.NewMessage == nil}} {
		if m.missing {
			return nil, unprocessable("Field required: %s", m.key)
		}
	}
	return &req, nil
}

// invocation is an invocation a run request started.
type invocation struct {
	ctx    context.Context
	events iter.Seq2[*event.Event, error]
	// stop cancels the invocation with a cause; done must be called once
	// events is no longer used.
	stop context.CancelCauseFunc
	done func()
}

// invoke starts the invocation a run request asks for. Its context ends
// with the request's, unless Config.KeepRunningOnDisconnect is set.
func (s *Server) invoke(r *http.Request, req *runRequest, streaming bool) (*invocation, error) {
	a, err := s.app(req.AppName)
	if err != nil {
		return nil, err
	}
	if err := s.authorizeState(r, req.UserID, req.StateDelta); err != nil {
		return nil, err
	}
	parent := r.Context()
	if s.cfg.KeepRunningOnDisconnect {
		parent = context.WithoutCancel(parent)
	}
	ctx, stop, done, err := s.runs.start(parent, sessionRef{a.AppName(), req.UserID, req.SessionID})
	if err != nil {
		return nil, err
	}
	inv := &invocation{ctx: ctx, stop: stop, done: done}
	opts := &runner.RunOptions{Streaming: streaming, StateDelta: req.StateDelta, InvocationID: req.InvocationID}
	switch {
	case req.RetryOf != "":
		id, err := s.retryInvocation(r.Context(), a, req)
		if err != nil {
			done()
			return nil, err
		}
		inv.events = a.Resume(ctx, req.UserID, req.SessionID, id, opts)
	case s.cfg.Invoker != nil:
		inv.events = s.cfg.Invoker.Run(ctx, a, req.UserID, req.SessionID, req.NewMessage, opts)
	default:
		inv.events = a.Run(ctx, req.UserID, req.SessionID, req.NewMessage, opts)
	}
	return inv, nil
}

// retryInvocation checks a retry (runRequest.RetryOf) against the session
// and returns the invocation to run again: the event must be a message of
// the user that the session stores, with no message of the user after it,
// and the request must not also ask for a state change or another
// invocation. A message that was never stored is sent without loomRetryOf.
func (s *Server) retryInvocation(ctx context.Context, a *runner.Runner, req *runRequest) (string, error) {
	if s.cfg.Invoker != nil {
		return "", unprocessable("loomRetryOf is not supported by this server's invoker: send the message again without it")
	}
	if req.InvocationID != "" || len(req.StateDelta) > 0 {
		return "", unprocessable("loomRetryOf cannot be combined with invocationId or stateDelta")
	}
	sess, err := a.Sessions().Get(ctx, session.Key{AppName: a.AppName(), UserID: req.UserID, SessionID: req.SessionID}, nil)
	if err != nil {
		return "", sessionError(req.SessionID, err)
	}
	events := sess.Events()
	found := -1
	for i, ev := range events {
		if ev.ID == req.RetryOf {
			found = i
			break
		}
	}
	if found < 0 || events[found].Author != event.AuthorUser {
		return "", &detailError{detail: "No message of the user with id " + req.RetryOf + " in session " + req.SessionID, err: errNotFound}
	}
	for _, ev := range events[found+1:] {
		if ev.Author == event.AuthorUser {
			return "", &detailError{detail: "Message " + req.RetryOf + " is not the latest message of session " + req.SessionID + ": send a new message instead", err: errConflict}
		}
	}
	return events[found].InvocationID, nil
}

// runError gives an invocation's error the detail its client should see.
func runError(ctx context.Context, req *runRequest, err error) error {
	if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// Report why the context ended (cancel route, shutdown) rather
		// than a bare "context canceled".
		err = fmt.Errorf("%w: %w", cause, err)
	}
	return sessionError(req.SessionID, err)
}

// run serves POST /run: it runs the invocation to completion and answers
// its events as a JSON array.
func (s *Server) run(w http.ResponseWriter, r *http.Request) error {
	req, err := decodeRunRequest(r)
	if err != nil {
		return err
	}
	inv, err := s.invoke(r, req, false)
	if err != nil {
		return err
	}
	defer inv.done()
	ctx := inv.ctx
	out := []*event.Event{}
	for ev, err := range inv.events {
		if err != nil {
			return runError(ctx, req, err)
		}
		if !ev.Partial {
			out = append(out, ev)
		}
	}
	if err := context.Cause(ctx); err != nil {
		return runError(ctx, req, err)
	}
	return writeJSON(w, http.StatusOK, out)
}

// doneFrame ends a stream that completed normally: an SSE comment, which
// EventSource and ADK clients skip.
const doneFrame = ": done\n\n"

// runSSE serves POST /run_sse: the invocation's events as server-sent
// events, one frame per event.
func (s *Server) runSSE(w http.ResponseWriter, r *http.Request) error {
	req, err := decodeRunRequest(r)
	if err != nil {
		return err
	}
	inv, err := s.invoke(r, req, req.Streaming)
	if err != nil {
		return err
	}
	defer inv.done()
	ctx := inv.ctx
	// The writer's deadline, moved to now when the invocation is
	// cancelled, ends a write blocked on a client that stopped reading;
	// without it the handler would wait in Write, and the invocation hold
	// the session, for as long as the client stalls.
	st := &sseStream{sw: NewStreamWriter(ctx, w, s.cfg.StreamWriteTimeout)}
	defer st.close()
	gone := false
	for ev, err := range inv.events {
		if err != nil {
			if gone {
				return nil
			}
			return st.fail(runError(ctx, req, err), s)
		}
		if gone || (ev.Partial && !req.Streaming) {
			continue
		}
		if !st.event(ev) {
			if s.cfg.KeepRunningOnDisconnect {
				gone = true // the invocation runs on, unread
				continue
			}
			// The client is gone: the invocation is aborted, and the
			// runner closes it in the session before the loop ends.
			inv.stop(errClientGone)
			return nil
		}
	}
	if gone {
		return nil
	}
	if err := context.Cause(ctx); err != nil {
		// The agent stopped quietly on cancellation: still tell the client.
		return st.fail(runError(ctx, req, err), s)
	}
	st.write([]byte(doneFrame))
	return nil
}

// sseStream writes server-sent event frames, sending the response header
// with the first one so that errors before it get a normal JSON response.
//
// Every write to the connection (a frame's Write, a flush) goes through a
// StreamWriter: it gets a write deadline of the server's
// StreamWriteTimeout, so a client that stops reading is cut off instead
// of blocking the handler, and the invocation with it, for good; and
// cancelling the invocation moves the deadline to now.
type sseStream struct {
	sw      *StreamWriter
	started bool
	buf     []byte

	// mu orders writes and the delayed flush; the fields below are its.
	mu      sync.Mutex
	broken  bool        // the client is gone
	pending bool        // written, not yet flushed
	flusher *time.Timer // flushes what is pending flushDelay after it was written
	closed  bool
}

// flushDelay is how long a written frame may wait in the response buffer
// for the frames that follow it before it is flushed: the frames of an
// invocation whose steps take no time (a scripted model, a fast tool, the
// end of a run) leave in one write, and a frame followed by a slow step
// (a model call, a long tool) still reaches the client within this delay.
const flushDelay = time.Millisecond

func (st *sseStream) start() {
	if st.started {
		return
	}
	st.started = true
	h := st.sw.Header()
	for _, kv := range sseHeaders {
		h[kv.key] = kv.value
	}
	st.sw.WriteHeader(http.StatusOK)
}

// sseHeaders are the headers of an event stream, in canonical form. Every
// response shares their values: net/http copies a handler's header when it
// writes it, and a value appended to grows into a new array (each has no
// spare capacity).
var sseHeaders = [...]struct {
	key   string
	value []string
}{
	{"Content-Type", []string{"text/event-stream"}},
	{"Cache-Control", []string{"no-cache"}},
	{"X-Accel-Buffering", []string{"no"}}, // keep reverse proxies from buffering the stream
}

// write sends one complete frame in a single Write, to be flushed within
// flushDelay. It reports false once the client is gone.
func (st *sseStream) write(frame []byte) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.start()
	if st.broken {
		return false
	}
	if _, err := st.sw.Write(frame); err != nil {
		st.broken = true
		return false
	}
	if !st.pending {
		st.pending = true
		if st.flusher == nil {
			st.flusher = time.AfterFunc(flushDelay, st.flush)
		} else {
			st.flusher.Reset(flushDelay)
		}
	}
	return true
}

// flush sends what is pending, unless the handler is done with the stream.
func (st *sseStream) flush() {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed || !st.pending || st.broken {
		return
	}
	st.pending = false
	if err := st.sw.FlushError(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		st.broken = true
	}
}

// close ends the delayed flushes and sends what is left, within the write
// deadline, before the handler returns. Then, unless the client is gone,
// the writer lifts the deadline: the connection may serve more requests
// (or the JSON error of a stream that never started).
func (st *sseStream) close() {
	st.mu.Lock()
	st.closed = true
	if st.flusher != nil {
		st.flusher.Stop()
	}
	if st.started && st.pending && !st.broken {
		st.pending = false
		if err := st.sw.FlushError(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			st.broken = true
		}
	}
	st.mu.Unlock()
	st.sw.Close()
}

// frame writes "data: <json>\n\n" for v.
func (st *sseStream) frame(v any) bool {
	var err error
	st.buf = append(st.buf[:0], "data: "...)
	if ev, ok := v.(*event.Event); ok {
		st.buf, err = ev.AppendJSON(st.buf) // the event's own encoding, with no copy
	} else {
		var b []byte
		b, err = json.Marshal(v)
		st.buf = append(st.buf, b...)
	}
	if err != nil {
		b, _ := json.Marshal(map[string]string{"error": "encode event: " + err.Error()})
		st.buf = append(append(st.buf[:0], "data: "...), b...)
	}
	st.buf = append(st.buf, "\n\n"...)
	return st.write(st.buf)
}

// event sends one event; one carrying both content and an artifact delta is
// split into two frames with the same id, as ADK clients expect.
func (st *sseStream) event(ev *event.Event) bool {
	if ev.Content == nil || len(ev.Actions.ArtifactDelta) == 0 {
		return st.frame(ev)
	}
	content, actions := *ev, *ev
	content.Actions.ArtifactDelta = nil
	actions.Content = nil
	return st.frame(&content) && st.frame(&actions)
}

// fail ends the stream with err: as a JSON error response if nothing was
// sent yet, else as an error frame. A cancellation through the cancel route
// is not a failure of the request: it always gets a 200 stream that ends
// with the error frame, as it does after the first event.
func (st *sseStream) fail(err error, s *Server) error {
	if !st.started && !isCancelled(err) {
		return err
	}
	if code := status(err); code >= http.StatusInternalServerError && code != http.StatusServiceUnavailable {
		s.log.Error("server: invocation failed", "error", err)
	}
	st.frame(map[string]string{"error": detail(err)})
	return nil
}
