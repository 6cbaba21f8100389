package temporal

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
)

// frames returns the body of a stream of n committed events of text, and
// "end" if end.
func frames(t *testing.T, n int, text string, end bool) []byte {
	t.Helper()
	var b bytes.Buffer
	for i := range n {
		ev := event.New("inv", "agent")
		ev.Content = genai.NewContentFromText(fmt.Sprintf("%s %d", text, i), genai.RoleModel)
		line, err := ev.MarshalStored()
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if end {
		b.WriteString("end\n")
	}
	return b.Bytes()
}

// post sends body to the listener at base for request id with token and
// returns the status.
func post(t *testing.T, base, id, token string, body io.Reader) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+feedPath+id, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestD8ListenerAuthenticates: a feed listener takes a turn's stream only
// with the turn's token (no token, another token or the token of another
// turn are refused, and publish nothing), for a request whose client
// waits, once: a second stream for the same turn is refused.
//
// (CONFORMANCE D8)
func TestD8ListenerAuthenticates(t *testing.T) {
	h := &hub{feeds: map[string]*feed{}}
	hs := httptest.NewServer(newListener(h))
	defer hs.Close()
	const token, other = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
	f := h.subscribe("r1", token)
	defer h.unsubscribe("r1")
	h.subscribe("r2", other)
	defer h.unsubscribe("r2")
	h.subscribe("local", "") // a client without a listener takes no stream
	defer h.unsubscribe("local")
	for _, c := range []struct {
		id, token string
		want      int
	}{
		{"r1", "", http.StatusForbidden},
		{"r1", "wrong", http.StatusForbidden},
		{"r1", other, http.StatusForbidden},
		{"r1", strings.ToUpper(token), http.StatusForbidden},
		{"local", "", http.StatusForbidden},
		{"gone", token, http.StatusGone},
	} {
		if got := post(t, hs.URL, c.id, c.token, bytes.NewReader(frames(t, 1, "forged", true))); got != c.want {
			t.Errorf("stream for %s with token %q: status %d, want %d", c.id, c.token, got, c.want)
		}
	}
	if evs, lost := f.take(); len(evs) != 0 || lost {
		t.Fatalf("refused streams published %d events (lost %v)", len(evs), lost)
	}
	resp, err := http.Get(hs.URL + feedPath + "r1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET: status %d", resp.StatusCode)
	}
	if got := post(t, hs.URL, "r1", token, bytes.NewReader(frames(t, 3, "real", true))); got != http.StatusNoContent {
		t.Fatalf("the turn's stream: status %d", got)
	}
	evs, lost := f.take()
	if len(evs) != 3 || lost || evs[2].Text() != "real 2" {
		t.Fatalf("the feed holds %d events (lost %v), want the stream's 3", len(evs), lost)
	}
	if got := post(t, hs.URL, "r1", token, bytes.NewReader(frames(t, 1, "again", true))); got != http.StatusConflict {
		t.Fatalf("a second stream for the turn: status %d, want 409", got)
	}
	if evs, _ := f.take(); len(evs) != 0 {
		t.Fatalf("the second stream published %d events", len(evs))
	}
}

// TestD8ListenerBounded: a feed listener bounds the bytes of a turn's
// stream, the length of one event, the streams it reads at once and the
// time a stream may stay silent; past a bound it refuses the rest, the
// feed keeps the prefix it took and reports the loss, so that its client
// reads the log. A stream whose client leaves is cut at once.
//
// (CONFORMANCE D8)
func TestD8ListenerBounded(t *testing.T) {
	h := &hub{feeds: map[string]*feed{}}
	l := newListener(h)
	l.maxBytes, l.maxLine, l.idle, l.slots = 4096, 1024, 300*time.Millisecond, make(chan struct{}, 1)
	hs := httptest.NewServer(l)
	defer hs.Close()
	const token = "0123456789abcdef0123456789abcdef"

	f := h.subscribe("bytes", token)
	if got := post(t, hs.URL, "bytes", token, bytes.NewReader(frames(t, 200, "many", true))); got != http.StatusRequestEntityTooLarge {
		t.Fatalf("a stream past the bytes of a turn: status %d, want 413", got)
	}
	evs, lost := f.take()
	if !lost || len(evs) == 0 || len(evs) >= 200 || evs[0].Text() != "many 0" || evs[len(evs)-1].Text() != fmt.Sprintf("many %d", len(evs)-1) {
		t.Fatalf("the feed holds %d events (lost %v), want a prefix and the loss", len(evs), lost)
	}
	h.unsubscribe("bytes")

	f = h.subscribe("line", token)
	if got := post(t, hs.URL, "line", token, bytes.NewReader(frames(t, 1, strings.Repeat("x", 2000), true))); got != http.StatusRequestEntityTooLarge {
		t.Fatalf("an event past the line bound: status %d, want 413", got)
	}
	if _, lost := f.take(); !lost {
		t.Fatal("the feed does not report the loss")
	}
	h.unsubscribe("line")

	// One stream at once: a silent one holds the slot until its idle
	// timeout, and a second one meanwhile is refused.
	f = h.subscribe("idle", token)
	h.subscribe("second", token)
	pr, pw := io.Pipe()
	defer pw.Close()
	idle := make(chan int, 1)
	start := time.Now()
	go func() { idle <- post(t, hs.URL, "idle", token, pr) }()
	if _, err := pw.Write(frames(t, 1, "first", false)); err != nil {
		t.Fatal(err)
	}
	if got := post(t, hs.URL, "second", token, bytes.NewReader(frames(t, 1, "second", true))); got != http.StatusServiceUnavailable {
		t.Fatalf("a stream past the streams at once: status %d, want 503", got)
	}
	select {
	case got := <-idle:
		if got != http.StatusRequestTimeout {
			t.Fatalf("a silent stream: status %d, want 408", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a silent stream was not cut")
	}
	if d := time.Since(start); d < l.idle {
		t.Fatalf("the silent stream was cut after %v, before its idle timeout", d)
	}
	if evs, lost := f.take(); len(evs) != 1 || !lost {
		t.Fatalf("the feed holds %d events (lost %v), want the first and the loss", len(evs), lost)
	}
	h.unsubscribe("idle")
	h.unsubscribe("second")

	// A client that leaves cuts its stream at once.
	l.idle = time.Minute
	f = h.subscribe("left", token)
	pr, pw = io.Pipe()
	defer pw.Close()
	left := make(chan int, 1)
	go func() { left <- post(t, hs.URL, "left", token, pr) }()
	if _, err := pw.Write(frames(t, 1, "first", false)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.wake: // the listener reads the stream
	case <-time.After(10 * time.Second):
		t.Fatal("the stream's first event did not arrive")
	}
	h.unsubscribe("left")
	select {
	case got := <-left:
		if got != http.StatusGone {
			t.Fatalf("a stream whose client left: status %d, want 410", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream of a client that left was not cut")
	}
}

// TestD9PushNeverBlocksTheTurn: a turn's stream to a listener that
// accepts the connection but never reads, or to an address nobody listens
// on, never blocks the turn: publishing thousands of events returns at
// once and finishing waits at most pushWait.
//
// (CONFORMANCE D9)
func TestD9PushNeverBlocksTheTurn(t *testing.T) {
	saved := pushWait
	pushWait = 300 * time.Millisecond
	defer func() { pushWait = saved }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn // accepted, never read
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	big := event.New("inv", "agent")
	big.Content = genai.NewContentFromText(strings.Repeat("x", 8<<10), genai.RoleModel)
	for _, addr := range []string{ln.Addr().String(), closed.Addr().String()} {
		start := time.Now()
		p := push("http://"+addr+feedPath+"r", "token")
		for range 5000 {
			p.publish(big)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("%s: publishing took %v", addr, d)
		}
		if !p.broken.Load() {
			t.Fatalf("%s: the stream kept every event", addr)
		}
		start = time.Now()
		p.finish(true)
		if d := time.Since(start); d > pushWait+2*time.Second {
			t.Fatalf("%s: finishing took %v, want at most about %v", addr, d, pushWait)
		}
	}
}
