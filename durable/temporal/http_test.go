package temporal_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/durable/temporal"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session"
)

// sse posts a run request to /run_sse and returns the data frames.
func sse(t *testing.T, base, sessionID string, msg *genai.Content) []map[string]any {
	t.Helper()
	body, err := json.Marshal(map[string]any{"appName": appName, "userId": user, "sessionId": sessionID, "newMessage": msg})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(base+"/run_sse", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("run_sse: status %d", resp.StatusCode)
	}
	var frames []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var f map[string]any
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatal(err)
		}
		if e, ok := f["error"]; ok {
			t.Fatalf("run_sse error frame: %v", e)
		}
		frames = append(frames, f)
	}
	return frames
}

// streamedText reads a /run_sse stream's frames in order and returns the
// text of each, "partial:" before partial ones, calling frame (when not
// nil) with each text as it arrives; an error frame fails the test.
func streamedText(t *testing.T, r io.Reader, frame func(text string, partial bool)) []string {
	t.Helper()
	var got []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var f struct {
			Partial bool           `json:"partial"`
			Content *genai.Content `json:"content"`
			Error   any            `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatal(err)
		}
		if f.Error != nil {
			t.Fatalf("run_sse error frame: %s", line)
		}
		s := ""
		if f.Content != nil && len(f.Content.Parts) > 0 {
			s = f.Content.Parts[0].Text
		}
		if frame != nil {
			frame(s, f.Partial)
		}
		if f.Partial {
			s = "partial:" + s
		}
		got = append(got, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestHTTPConfirmation: through Loom's HTTP API with invocations on
// Temporal, a tool confirmation pauses the invocation, the answer posted
// to /run_sse later resumes it on the worker, and the session log equals
// that of an in-process run.
//
// (CONFORMANCE D1)
func TestHTTPConfirmation(t *testing.T) {
	c := dial(t)
	dir := t.TempDir()
	ctx := context.Background()
	svc := sessionsIn(t)
	app, err := newApp(dir, 0, svc)
	if err != nil {
		t.Fatal(err)
	}
	cl := inProcessClient(t, c, app, temporal.Options{})
	srv, err := server.New(server.Config{Apps: []*runner.Runner{app}, Invoker: cl})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	k := session.Key{AppName: appName, UserID: user, SessionID: "http-" + newQueue()}
	if _, err := svc.Create(ctx, k, nil); err != nil {
		t.Fatal(err)
	}

	// An answer to a call that is not pending is refused before anything
	// reaches Temporal.
	body, _ := json.Marshal(map[string]any{"appName": appName, "userId": user, "sessionId": k.SessionID, "newMessage": approve("nope", "adk_request_confirmation")})
	resp, err := http.Post(hs.URL+"/run_sse", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode < 400 || resp.StatusCode >= 500 {
		t.Fatalf("answer to no pending call: status %d, want a client error", resp.StatusCode)
	}

	frames := sse(t, hs.URL, k.SessionID, text("pay"))
	b, _ := json.Marshal(frames)
	if !strings.Contains(string(b), "adk_request_confirmation") || lines(t, dir, "pay.count") != 0 {
		t.Fatalf("first turn streamed %s; want a confirmation request and no payment", b)
	}
	time.Sleep(time.Second) // the answer comes later: the workflow waits
	sess, err := svc.Get(ctx, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	frames = sse(t, hs.URL, k.SessionID, approve(confirmationCall(t, sess)))
	b, _ = json.Marshal(frames)
	if !strings.Contains(string(b), "pay done") || !strings.Contains(string(b), "reported") {
		t.Fatalf("answer streamed %s; want the rest of the invocation", b)
	}
	if n := lines(t, dir, "pay.count"); n != 1 {
		t.Fatalf("paid %d times, want 1", n)
	}
	if sess, err = svc.Get(ctx, k, nil); err != nil {
		t.Fatal(err)
	}
	got, want := shape(t, sess), inProcess(t, sessionsIn(t), "pay")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("log on Temporal:\n%s\nin process:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
