package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// flood is an agent that commits one event, then streams up to 400 partial
// events of 256 KiB each, more than a client that reads nothing can buffer.
// It counts the partials it produced, and closes finished when it returns.
type flood struct {
	produced atomic.Int64
	finished chan struct{}
}

func (fl *flood) run(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
	big := strings.Repeat("x", 256<<10)
	return func(yield func(*event.Event, error) bool) {
		if inv.UserContent().Parts[0].Text != "flood" {
			yield(text(inv, "Hi."), nil)
			return
		}
		defer close(fl.finished)
		ev := text(inv, "Starting.")
		ev.Actions.StateDelta = map[string]any{"started": true}
		if !yield(ev, nil) {
			return
		}
		for range 400 {
			if ctx.Err() != nil {
				return
			}
			ev := text(inv, big)
			ev.Partial = true // forwarded only, never stored
			fl.produced.Add(1)
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// newFloodServer serves an app whose agent is a flood, over a real
// connection, with session s1 created.
func newFloodServer(t *testing.T, cfg server.Config) (*flood, *server.Server, *httptest.Server) {
	t.Helper()
	fl := &flood{finished: make(chan struct{})}
	root, err := agent.New(agent.Config{Name: "root_agent", Run: fl.run})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "demo", Agent: root, Sessions: memsession.NewService()})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Apps = []*runner.Runner{r}
	cfg.Logger = slog.New(slog.DiscardHandler)
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	if _, err := r.Sessions().Create(context.Background(), session.Key{AppName: "demo", UserID: "u1", SessionID: "s1"}, nil); err != nil {
		t.Fatal(err)
	}
	return fl, srv, ts
}

// stall sends a streaming /run_sse request for a flood and reads nothing,
// and waits until the server's writes block.
func stall(t *testing.T, fl *flood, ts *httptest.Server) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	body := runBody("s1", "flood", true)
	fmt.Fprintf(conn, "POST /run_sse HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	for last, deadline := int64(-1), time.Now().Add(20*time.Second); ; {
		time.Sleep(200 * time.Millisecond)
		n := fl.produced.Load()
		if n == last && n > 0 {
			break
		}
		if n >= 400 || time.Now().After(deadline) {
			t.Fatalf("the stream never blocked (%d events)", n)
		}
		last = n
	}
	return conn
}

func waitFinished(t *testing.T, fl *flood, within time.Duration, what string) {
	t.Helper()
	select {
	case <-fl.finished:
	case <-time.After(within):
		t.Fatalf("%s: the invocation still runs after %v (%d events)", what, within, fl.produced.Load())
	}
}

// later runs again in s1, which needs the stalled invocation to have
// released the session, and returns the stored session.
func later(t *testing.T, srv *server.Server) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest("POST", "http://127.0.0.1/run", strings.NewReader(runBody("s1", "again", false))).WithContext(ctx))
	if w.Code != http.StatusOK {
		t.Errorf("a later run in the session: %d %.200s", w.Code, w.Body)
	}
	w = httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest("GET", "http://127.0.0.1/apps/demo/users/u1/sessions/s1", nil))
	var sess map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &sess); err != nil {
		t.Fatal(err)
	}
	return sess
}

// TestStalledStreamIsCutOff: a /run_sse client that stops reading is cut
// off once a frame has waited Config.StreamWriteTimeout; its invocation
// stops as if the client had left (aborted, CONFORMANCE R13), what it
// committed stays, and the session is free for the next run.
func TestStalledStreamIsCutOff(t *testing.T) {
	fl, srv, ts := newFloodServer(t, server.Config{StreamWriteTimeout: 300 * time.Millisecond})
	stall(t, fl, ts)
	waitFinished(t, fl, 5*time.Second, "after the write timeout")
	sess := later(t, srv)
	events, _ := sess["events"].([]any)
	if st, _ := sess["state"].(map[string]any); st["started"] != true || len(events) != 5 {
		t.Fatalf("the session after the cut stream and a later run: state %v, %d events, want started and 5 events", sess["state"], len(events))
	}
	if ab, _ := events[2].(map[string]any); ab["errorCode"] != event.ErrorCodeAborted {
		t.Errorf("event 2 of the session %v, want the abort event", ab)
	}
}

// TestStalledStreamEndsOnCancel: with no write timeout, a stalled stream's
// invocation still ends when the cancel route cancels it, and when the
// server closes.
func TestStalledStreamEndsOnCancel(t *testing.T) {
	fl, srv, ts := newFloodServer(t, server.Config{StreamWriteTimeout: -1})
	stall(t, fl, ts)
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest("POST", "http://127.0.0.1/apps/demo/users/u1/sessions/s1/cancel", nil))
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"cancelled":1`) {
		t.Fatalf("cancel: %d %s", w.Code, w.Body)
	}
	waitFinished(t, fl, 5*time.Second, "after cancel")
	later(t, srv)

	fl, srv, ts = newFloodServer(t, server.Config{StreamWriteTimeout: -1})
	stall(t, fl, ts)
	srv.Close()
	waitFinished(t, fl, 5*time.Second, "after Server.Close")
}

// TestSlowStreamIsNotCutOff: the write timeout bounds each frame's write,
// not the time between frames: an agent slower than the timeout streams
// to a reading client in full, and the connection serves the next request
// after that.
func TestSlowStreamIsNotCutOff(t *testing.T) {
	const timeout = 100 * time.Millisecond
	root, err := agent.New(agent.Config{Name: "root_agent", Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
		return func(yield func(*event.Event, error) bool) {
			for i := range 3 {
				time.Sleep(2 * timeout)
				if !yield(text(inv, fmt.Sprint("part ", i, strings.Repeat(".", 64<<10))), nil) {
					return
				}
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "demo", Agent: root, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Apps: []*runner.Runner{r}, StreamWriteTimeout: timeout, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(srv)
	var conns atomic.Int64
	ts.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	ts.Start()
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	resp, err := client.Post(ts.URL+"/run_sse", "application/json", strings.NewReader(runBody("s1", "go", false)))
	if err != nil {
		t.Fatal(err)
	}
	var frames []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line := sc.Text(); line != "" {
			frames = append(frames, line)
		}
		time.Sleep(timeout / 4) // a slow reader
	}
	resp.Body.Close()
	if err := sc.Err(); err != nil || len(frames) != 4 || frames[3] != ": done" {
		t.Fatalf("the stream: %d frames, %v; want 3 events and the end", len(frames), err)
	}
	// The connection's write deadline is gone with the stream.
	time.Sleep(2 * timeout)
	resp, err = client.Get(ts.URL + "/list-apps")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || conns.Load() != 1 {
		t.Errorf("the next request: %d %s over %d connections, want 200 over the same one", resp.StatusCode, b, conns.Load())
	}
}
