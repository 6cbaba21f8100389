package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session/memsession"
)

// writeRecorder records every Write separately, to check SSE framing.
type writeRecorder struct {
	*httptest.ResponseRecorder
	writes []string
}

func (w *writeRecorder) Write(b []byte) (int, error) {
	w.writes = append(w.writes, string(b))
	return w.ResponseRecorder.Write(b)
}

func mustCreate(t *testing.T, f *fixture, id string) {
	t.Helper()
	if w := f.do(t, "POST", "/apps/demo/users/u1/sessions", `{"sessionId":"`+id+`"}`); w.Code != http.StatusOK {
		t.Fatalf("create %s: %d %s", id, w.Code, w.Body)
	}
}

// TestSSEFramesAreSingleWrites checks that every frame is written with one
// Write (clients misparse frames split across reads), and that streaming
// true passes partial events while false sends only complete ones. (That a
// frame is flushed while the agent works on is what startStream checks.)
func TestSSEFramesAreSingleWrites(t *testing.T) {
	f := newFixture(t, server.Config{})
	mustCreate(t, f, "s1")
	for _, streaming := range []bool{false, true} {
		w := &writeRecorder{ResponseRecorder: httptest.NewRecorder()}
		req := httptest.NewRequest("POST", "/run_sse", strings.NewReader(runBody("s1", "hello", streaming)))
		f.srv.ServeHTTP(w, req)
		if h := w.Header(); w.Code != http.StatusOK || h.Get("Content-Type") != "text/event-stream" ||
			h.Get("Cache-Control") != "no-cache" || h.Get("X-Accel-Buffering") != "no" {
			t.Fatalf("streaming=%v: %d %v", streaming, w.Code, h)
		}
		partials := 0
		for i, wr := range w.writes {
			if strings.Count(wr, "\n\n") != 1 || !strings.HasSuffix(wr, "\n\n") {
				t.Errorf("write %d is not exactly one frame: %q", i, wr)
			}
			if i == len(w.writes)-1 {
				if wr != ": done\n\n" {
					t.Errorf("last write = %q, want the done comment", wr)
				}
				continue
			}
			if ev := frameEvent(t, strings.TrimSuffix(wr, "\n\n")); ev["partial"] == true {
				partials++
			}
		}
		if want := map[bool]int{false: 0, true: 2}[streaming]; partials != want {
			t.Errorf("streaming=%v: %d partial frames, want %d", streaming, partials, want)
		}
	}
}

// TestSSEArtifactSplit checks the two-frame form of an event with content
// and an artifact delta.
func TestSSEArtifactSplit(t *testing.T) {
	f := newFixture(t, server.Config{})
	mustCreate(t, f, "s1")
	w := f.do(t, "POST", "/run_sse", runBody("s1", "artifact", false))
	frames := sseFrames(w.Body.String())
	if len(frames) != 3 {
		t.Fatalf("got %d frames, want content, actions and done: %q", len(frames), frames)
	}
	first, second := frameEvent(t, frames[0]), frameEvent(t, frames[1])
	if first["id"] != second["id"] || first["id"] == "" {
		t.Errorf("frame ids differ: %v vs %v", first["id"], second["id"])
	}
	if first["content"] == nil || len(first["actions"].(map[string]any)["artifactDelta"].(map[string]any)) != 0 {
		t.Errorf("first frame should carry content and an empty artifactDelta: %v", first)
	}
	if second["content"] != nil || second["actions"].(map[string]any)["artifactDelta"].(map[string]any)["report.txt"] != 0.0 {
		t.Errorf("second frame should carry the artifact delta and no content: %v", second)
	}
}

// TestOriginCheck refuses cross-origin writes from unknown origins and
// serves CORS to allowed ones.
func TestOriginCheck(t *testing.T) {
	f := newFixture(t, server.Config{AllowedOrigins: []string{"https://ui.example.com"}})
	create := `{"sessionId":"x"}`
	path := "/apps/demo/users/u1/sessions"

	w := f.do(t, "POST", path, create, "Origin", "https://evil.example.net")
	if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "Origin not allowed: https://evil.example.net") {
		t.Errorf("foreign origin: %d %s", w.Code, w.Body)
	}
	w = f.do(t, "POST", path, create, "Origin", "https://evil.example.net", "Sec-Fetch-Site", "cross-site")
	if w.Code != http.StatusForbidden {
		t.Errorf("cross-site fetch: %d %s", w.Code, w.Body)
	}
	if w = f.do(t, "GET", path, "", "Origin", "https://evil.example.net"); w.Code != http.StatusOK || w.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("foreign GET: %d, ACAO %q", w.Code, w.Header().Get("Access-Control-Allow-Origin"))
	}
	// httptest requests have Host example.com.
	if w = f.do(t, "POST", path, `{"sessionId":"same"}`, "Origin", "http://example.com"); w.Code != http.StatusOK {
		t.Errorf("same-host origin: %d %s", w.Code, w.Body)
	}
	if w = f.do(t, "POST", path, create, "Origin", "https://ui.example.com"); w.Code != http.StatusOK ||
		w.Header().Get("Access-Control-Allow-Origin") != "https://ui.example.com" {
		t.Errorf("allowed origin: %d, ACAO %q", w.Code, w.Header().Get("Access-Control-Allow-Origin"))
	}
	w = f.do(t, "OPTIONS", "/run_sse", "", "Origin", "https://ui.example.com",
		"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type")
	if w.Code != http.StatusNoContent || !strings.Contains(w.Header().Get("Access-Control-Allow-Methods"), "POST") ||
		w.Header().Get("Access-Control-Allow-Headers") != "content-type" {
		t.Errorf("preflight: %d %v", w.Code, w.Header())
	}
	if w = f.do(t, "POST", path, `{"sessionId":"cli"}`); w.Code != http.StatusOK {
		t.Errorf("request without Origin: %d %s", w.Code, w.Body)
	}

	if _, err := server.New(server.Config{Apps: []*runner.Runner{f.runner}, AllowedOrigins: []string{"not a url"}}); err == nil {
		t.Error("New accepted a malformed allowed origin")
	}
}

// TestRequestSizeLimit answers an over-size body with 413.
func TestRequestSizeLimit(t *testing.T) {
	f := newFixture(t, server.Config{MaxRequestBytes: 1024})
	mustCreate(t, f, "s1")
	w := f.do(t, "POST", "/run", runBody("s1", strings.Repeat("x", 4096), false))
	if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "limit 1024 bytes") {
		t.Errorf("got %d %s", w.Code, w.Body)
	}
	if w = f.do(t, "POST", "/run", runBody("s1", "small", false)); w.Code != http.StatusOK {
		t.Errorf("small body: %d %s", w.Code, w.Body)
	}
}

// startStream posts a /run_sse request to a real server and returns a reader
// positioned after the first frame.
func startStream(t *testing.T, ctx context.Context, url, body string) (*http.Response, *bufio.Reader) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "POST", url+"/run_sse", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	rd := bufio.NewReader(resp.Body)
	line, err := rd.ReadString('\n')
	if err != nil || !strings.Contains(line, "Started.") {
		t.Fatalf("first frame %q: %v", line, err)
	}
	return resp, rd
}

// wait receives from ch, failing the test if nothing arrives: a safety net
// against hangs, not a speed assertion.
func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("gave up waiting for %s", what)
		var zero T
		return zero
	}
}

// TestClientDisconnectCancelsInvocation: closing the connection cancels the
// invocation's context, and the agent sees it.
func TestClientDisconnectCancelsInvocation(t *testing.T) {
	f := newFixture(t, server.Config{})
	ts := httptest.NewServer(f.srv)
	defer ts.Close()
	mustCreate(t, f, "s1")
	ctx, cancel := context.WithCancel(context.Background())
	resp, _ := startStream(t, ctx, ts.URL, runBody("s1", "block", true))
	wait(t, f.started, "the agent to start")
	cancel()
	resp.Body.Close()
	if err := wait(t, f.observed, "the agent to observe cancellation"); err == nil {
		t.Error("the agent saw no context error")
	}
}

// TestCancelEndpoint cancels a running invocation through the API; the
// stream ends with an error frame.
func TestCancelEndpoint(t *testing.T) {
	f := newFixture(t, server.Config{})
	ts := httptest.NewServer(f.srv)
	defer ts.Close()
	mustCreate(t, f, "s1")
	resp, rd := startStream(t, context.Background(), ts.URL, runBody("s1", "block", false))
	defer resp.Body.Close()
	wait(t, f.started, "the agent to start")

	w := f.do(t, "POST", "/apps/demo/users/u1/sessions/s1/cancel", "")
	if w.Code != http.StatusOK || strings.TrimSpace(w.Body.String()) != `{"cancelled":1}` {
		t.Fatalf("cancel: %d %s", w.Code, w.Body)
	}
	wait(t, f.observed, "the agent to observe cancellation")
	rest, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	frames := sseFrames(strings.TrimPrefix(string(rest), "\n"))
	if len(frames) != 2 || frameEvent(t, frames[0])["errorCode"] != event.ErrorCodeAborted || frameEvent(t, frames[1])["error"] != "Invocation cancelled" {
		t.Errorf("after cancel got %q, want the abort event and the error frame", rest)
	}
}

// TestCloseCancelsRuns: Close ends open streams and refuses new runs.
func TestCloseCancelsRuns(t *testing.T) {
	f := newFixture(t, server.Config{})
	ts := httptest.NewServer(f.srv)
	defer ts.Close()
	mustCreate(t, f, "s1")
	resp, rd := startStream(t, context.Background(), ts.URL, runBody("s1", "block", false))
	defer resp.Body.Close()
	wait(t, f.started, "the agent to start")
	if err := f.srv.Close(); err != nil {
		t.Fatal(err)
	}
	wait(t, f.observed, "the agent to observe shutdown")
	rest, _ := io.ReadAll(rd)
	if !strings.Contains(string(rest), `"error":"Server is shutting down"`) {
		t.Errorf("stream after Close: %q", rest)
	}
	w := f.do(t, "POST", "/run", runBody("s1", "hello", false))
	if w.Code != http.StatusServiceUnavailable {
		t.Errorf("run after Close: %d %s", w.Code, w.Body)
	}
	if w = f.do(t, "GET", "/health", ""); w.Code != http.StatusOK {
		t.Errorf("health after Close: %d", w.Code)
	}
}

// TestConcurrentRunsSerialize sends parallel runs to one session: the
// runner serializes them, so each invocation's events are contiguous in the
// session (run under -race).
func TestConcurrentRunsSerialize(t *testing.T) {
	f := newFixture(t, server.Config{})
	mustCreate(t, f, "s1")
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := range n {
		wg.Go(func() {
			path := "/run"
			if i%2 == 1 {
				path = "/run_sse"
			}
			if w := f.do(t, "POST", path, runBody("s1", "multi", false)); w.Code != http.StatusOK {
				errs <- w.Body.String()
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	var sess struct {
		Events []struct {
			InvocationID string `json:"invocationId"`
			Author       string `json:"author"`
		} `json:"events"`
	}
	if err := json.Unmarshal(f.do(t, "GET", "/apps/demo/users/u1/sessions/s1", "").Body.Bytes(), &sess); err != nil {
		t.Fatal(err)
	}
	if len(sess.Events) != 4*n {
		t.Fatalf("session has %d events, want %d", len(sess.Events), 4*n)
	}
	for i := 0; i < len(sess.Events); i += 4 {
		group := sess.Events[i : i+4]
		if group[0].Author != "user" {
			t.Errorf("event %d: author %q, want the user message first", i, group[0].Author)
		}
		for _, ev := range group[1:] {
			if ev.InvocationID != group[0].InvocationID {
				t.Errorf("events %d-%d interleave invocations %s and %s", i, i+3, group[0].InvocationID, ev.InvocationID)
			}
		}
	}
}

// TestPatchDuringRun sends a PATCH of a session's state while an
// invocation runs in the session: the PATCH waits for the invocation, which
// completes (200) with all its events, and the patched value is stored too.
func TestPatchDuringRun(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	root, err := agent.New(agent.Config{Name: "root_agent", Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
		return func(yield func(*event.Event, error) bool) {
			ev := inv.NewEvent()
			ev.Content = genai.NewContentFromText("one", genai.RoleModel)
			ev.Actions.StateDelta = map[string]any{"a": 1}
			if !yield(ev, nil) {
				return
			}
			close(started)
			<-release
			ev = inv.NewEvent()
			ev.Content = genai.NewContentFromText("two", genai.RoleModel)
			ev.Actions.StateDelta = map[string]any{"b": 2}
			yield(ev, nil)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "demo", Agent: root, Sessions: memsession.NewService()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Apps: []*runner.Runner{r}, AllowedHosts: []string{"example.com"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{srv: srv, runner: r}
	mustCreate(t, f, "s1")
	var wg sync.WaitGroup
	var run, patch *httptest.ResponseRecorder
	wg.Go(func() { run = f.do(t, "POST", "/run", runBody("s1", "go", false)) })
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not start")
	}
	wg.Go(func() { patch = f.do(t, "PATCH", "/apps/demo/users/u1/sessions/s1", `{"stateDelta":{"p":3}}`) })
	time.Sleep(20 * time.Millisecond) // let the PATCH arrive while the run holds the session
	close(release)
	wg.Wait()
	if run.Code != http.StatusOK || strings.Count(run.Body.String(), `"author":"root_agent"`) != 2 {
		t.Errorf("the run with a PATCH in the middle: %d %.300s", run.Code, run.Body)
	}
	if patch.Code != http.StatusOK || !strings.Contains(patch.Body.String(), `"p":3`) {
		t.Errorf("the PATCH: %d %.300s", patch.Code, patch.Body)
	}
	var sess struct {
		State  map[string]any
		Events []any
	}
	if err := json.Unmarshal(f.do(t, "GET", "/apps/demo/users/u1/sessions/s1", "").Body.Bytes(), &sess); err != nil {
		t.Fatal(err)
	}
	if sess.State["a"] != 1.0 || sess.State["b"] != 2.0 || sess.State["p"] != 3.0 || len(sess.Events) != 4 {
		t.Errorf("the session after both: state %v, %d events, want a, b and p and 4 events", sess.State, len(sess.Events))
	}
}

// TestNewRejectsBadConfig covers configuration errors.
func TestNewRejectsBadConfig(t *testing.T) {
	if _, err := server.New(server.Config{}); err == nil {
		t.Error("New accepted no apps")
	}
	f := newFixture(t, server.Config{})
	if _, err := server.New(server.Config{Apps: []*runner.Runner{f.runner, f.runner}}); err == nil {
		t.Error("New accepted a duplicate app name")
	}
}

// TestRunRequestNormalizesContent: a snake_case message with URL-safe
// base64 bytes (as ADK Python clients send) is stored as the same bytes.
func TestRunRequestNormalizesContent(t *testing.T) {
	f := newFixture(t, server.Config{})
	mustCreate(t, f, "s1")
	// "\xfb\xff" is "-_8=" in URL-safe base64 and "+/8=" in standard.
	body := `{"app_name":"demo","user_id":"u1","session_id":"s1","streaming":null,"new_message":{"role":"user","parts":[{"text":"hi"},{"inline_data":{"mime_type":"application/octet-stream","data":"-_8="}}]}}`
	if w := f.do(t, "POST", "/run", body); w.Code != http.StatusOK {
		t.Fatalf("run: %d %s", w.Code, w.Body)
	}
	w := f.do(t, "GET", "/apps/demo/users/u1/sessions/s1", "")
	if !strings.Contains(w.Body.String(), `"inlineData":{"data":"+/8=","mimeType":"application/octet-stream"}`) {
		t.Errorf("stored message lost its bytes: %s", w.Body)
	}
}

// FuzzRunBody feeds arbitrary bodies to /run and /run_sse: the server must
// answer every one with a status and, for errors, a JSON detail.
func FuzzRunBody(f *testing.F) {
	for _, seed := range []string{
		runBody("s1", "hello", false), runBody("s1", "hello", true), `{"app_name":"demo"}`, `null`, `[]`, `{"newMessage":7}`,
		`{"appName":"demo","userId":"u1","sessionId":"s1","newMessage":{"parts":[{"inline_data":{"data":"%%%"}}]}}`,
		`{"appName":"demo","userId":"u1","sessionId":"s1","stateDelta":[1],"newMessage":{"parts":[{"text":"x"}]}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		fx := newFixture(t, server.Config{})
		mustCreate(t, fx, "s1")
		for _, path := range []string{"/run", "/run_sse"} {
			w := fx.do(t, "POST", path, body)
			if w.Code >= 400 {
				var e struct {
					Detail string `json:"detail"`
				}
				if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Detail == "" {
					t.Errorf("%s: status %d with body %q", path, w.Code, w.Body)
				}
			}
		}
	})
}
