package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/retry"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session/memsession"
)

// TestHostGuard: a request whose Host is not a loopback name or a
// configured host is refused, even when its Origin matches that Host (a page
// on a rebound domain), so DNS rebinding cannot reach the API.
func TestHostGuard(t *testing.T) {
	f := newFixture(t, server.Config{AllowedHosts: []string{"api.example.com", "10.0.0.5:8000"}})
	for _, tc := range []struct {
		host string
		want int
	}{
		{"localhost:8000", 200}, {"127.0.0.1:1234", 200}, {"[::1]:8000", 200}, {"localhost", 200},
		{"api.example.com", 200}, {"API.example.com:443", 200}, {"10.0.0.5:8000", 200},
		{"evil.example:8000", 421}, {"evil.example", 421}, {"10.0.0.5:9000", 421}, {"localhost.evil.example", 421},
	} {
		for _, method := range []string{"GET", "POST"} {
			path, body := "/apps/demo/users/u1/sessions", ""
			if method == "POST" {
				body = "{}"
			}
			req := httptest.NewRequest(method, path, strings.NewReader(body))
			req.Host = tc.host
			req.Header.Set("Origin", "http://"+tc.host) // same-origin as far as the page can tell
			req.Header.Set("Sec-Fetch-Site", "same-origin")
			w := httptest.NewRecorder()
			f.srv.ServeHTTP(w, req)
			if w.Code != tc.want {
				t.Errorf("%s Host %s: %d %s, want %d", method, tc.host, w.Code, w.Body, tc.want)
			}
		}
	}
	if _, err := server.New(server.Config{Apps: []*runner.Runner{f.runner}, AllowedHosts: []string{"http://x/"}}); err == nil {
		t.Error("an allowed host with a scheme was accepted")
	}
	open := newFixture(t, server.Config{AllowedHosts: []string{"*"}})
	req := httptest.NewRequest("GET", "/health", nil)
	req.Host = "anything.example"
	w := httptest.NewRecorder()
	open.srv.ServeHTTP(w, req)
	if w.Code != 200 {
		t.Errorf("AllowedHosts * refused a host: %d", w.Code)
	}
}

// TestAnyOriginWithoutCredentials: with "*" every origin (null included)
// gets Access-Control-Allow-Origin: * and never Allow-Credentials.
func TestAnyOriginWithoutCredentials(t *testing.T) {
	f := newFixture(t, server.Config{AllowedOrigins: []string{"*"}})
	for _, origin := range []string{"https://ui.example", "null"} {
		for _, method := range []string{"GET", "OPTIONS"} {
			w := f.do(t, method, "/list-apps", "", "Origin", origin, "Access-Control-Request-Method", "POST")
			h := w.Header()
			if h.Get("Access-Control-Allow-Origin") != "*" || h.Get("Access-Control-Allow-Credentials") != "" {
				t.Errorf("%s from %s: allow-origin %q, allow-credentials %q", method, origin, h.Get("Access-Control-Allow-Origin"), h.Get("Access-Control-Allow-Credentials"))
			}
		}
	}
	// A listed origin still gets credentials.
	f = newFixture(t, server.Config{AllowedOrigins: []string{"https://ui.example"}})
	w := f.do(t, "GET", "/list-apps", "", "Origin", "https://ui.example")
	if w.Header().Get("Access-Control-Allow-Origin") != "https://ui.example" || w.Header().Get("Access-Control-Allow-Credentials") != "true" {
		t.Errorf("listed origin: %v", w.Header())
	}
}

// bearer authenticates "Bearer <user>-token" as <user>.
func bearer(r *http.Request) (string, error) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	user, ok2 := strings.CutSuffix(tok, "-token")
	if !ok || !ok2 || user == "" {
		return "", errors.New("bad token")
	}
	return user, nil
}

// TestAuthenticate: with Config.Authenticate every route but /health needs
// a user; a route naming another user gets 403, and a run without userId
// runs as the authenticated user.
func TestAuthenticate(t *testing.T) {
	f := newFixture(t, server.Config{Authenticate: bearer})
	alice := []string{"Authorization", "Bearer alice-token"}
	if w := f.do(t, "GET", "/health", ""); w.Code != 200 {
		t.Errorf("health without a token: %d", w.Code)
	}
	for _, path := range []string{"/list-apps", "/apps/demo/users/alice/sessions"} {
		if w := f.do(t, "GET", path, ""); w.Code != http.StatusUnauthorized {
			t.Errorf("GET %s without a token: %d", path, w.Code)
		}
		if w := f.do(t, "GET", path, "", "Authorization", "Bearer nope"); w.Code != http.StatusUnauthorized {
			t.Errorf("GET %s with a bad token: %d", path, w.Code)
		}
	}
	if w := f.do(t, "POST", "/apps/demo/users/alice/sessions", `{"sessionId":"s1"}`, alice...); w.Code != 200 {
		t.Fatalf("create own session: %d %s", w.Code, w.Body)
	}
	if w := f.do(t, "POST", "/apps/demo/users/bob/sessions", `{"sessionId":"s1"}`, "Authorization", "Bearer bob-token"); w.Code != 200 {
		t.Fatalf("bob creates his session: %d %s", w.Code, w.Body)
	}
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/apps/demo/users/bob/sessions", ""},
		{"GET", "/apps/demo/users/bob/sessions/s1", ""},
		{"PATCH", "/apps/demo/users/bob/sessions/s1", `{"stateDelta":{"x":1}}`},
		{"DELETE", "/apps/demo/users/bob/sessions/s1", ""},
		{"POST", "/apps/demo/users/bob/sessions/s1/cancel", ""},
		{"GET", "/apps/demo/users/bob/sessions/s1/artifacts", ""},
		{"POST", "/run", strings.ReplaceAll(runBody("s1", "hello", false), "u1", "bob")},
		{"POST", "/run_sse", strings.ReplaceAll(runBody("s1", "hello", false), "u1", "bob")},
		{"GET", "/debug/trace/session/s1?user_id=bob", ""},
		{"GET", "/dev/apps/demo/debug/trace/some-event?user_id=bob", ""},
	} {
		if w := f.do(t, tc.method, tc.path, tc.body, alice...); w.Code != http.StatusForbidden {
			t.Errorf("alice: %s %s: %d %s, want 403", tc.method, tc.path, w.Code, w.Body)
		}
	}
	// A run without userId is alice's.
	w := f.do(t, "POST", "/run", `{"appName":"demo","sessionId":"s1","newMessage":{"parts":[{"text":"hello"}]}}`, alice...)
	if w.Code != 200 {
		t.Fatalf("run as alice: %d %s", w.Code, w.Body)
	}
	var sess struct{ Events []any }
	if err := json.Unmarshal(f.do(t, "GET", "/apps/demo/users/alice/sessions/s1", "", alice...).Body.Bytes(), &sess); err != nil || len(sess.Events) != 2 {
		t.Errorf("alice's session after the run: %d events, %v", len(sess.Events), err)
	}
	if err := json.Unmarshal(f.do(t, "GET", "/apps/demo/users/bob/sessions/s1", "", "Authorization", "Bearer bob-token").Body.Bytes(), &sess); err != nil || len(sess.Events) != 0 {
		t.Errorf("bob's session after alice's run: %d events, %v", len(sess.Events), err)
	}
}

// TestIDLimits: app, user and session ids longer than 128 bytes or holding
// control characters are refused with 400 wherever they come in.
func TestIDLimits(t *testing.T) {
	f := newFixture(t, server.Config{})
	long := strings.Repeat("x", 129)
	ok := strings.Repeat("x", 128)
	for _, tc := range []struct {
		method, path, body string
		want               int
	}{
		{"POST", "/apps/demo/users/u1/sessions", `{"sessionId":"` + long + `"}`, 400},
		{"POST", "/apps/demo/users/u1/sessions", `{"sessionId":"a\u0000b"}`, 400},
		{"POST", "/apps/demo/users/u1/sessions", `{"sessionId":"a\nb"}`, 400},
		{"POST", "/apps/demo/users/u1/sessions/" + long, `{}`, 400},
		{"POST", "/apps/demo/users/" + long + "/sessions", `{}`, 400},
		{"GET", "/apps/demo/users/u1/sessions/a%01b", ``, 400},
		{"POST", "/run", runBody(long, "hello", false), 400},
		{"POST", "/run", strings.Replace(runBody("s1", "hello", false), `"u1"`, `"u\u0007"`, 1), 400},
		{"POST", "/run", strings.Replace(runBody("s1", "hello", false), `"u1"`, `".."`, 1), 400},
		{"POST", "/apps/demo/users/u1/sessions", `{"sessionId":"."}`, 400},
		{"POST", "/apps/demo/users/u1/sessions", `{"sessionId":"` + ok + `"}`, 200},
		{"POST", "/run", runBody(ok, "hello", false), 200},
	} {
		if w := f.do(t, tc.method, tc.path, tc.body); w.Code != tc.want {
			t.Errorf("%s %.60s %.60s: %d %s, want %d", tc.method, tc.path, tc.body, w.Code, w.Body, tc.want)
		}
	}
}

// TestForkIDLimits: the fork route checks the new session's id as the
// create route does (a session it could make would be one no path can
// address), and bounds the event id.
func TestForkIDLimits(t *testing.T) {
	f := newFixture(t, server.Config{})
	mustCreate(t, f, "s1")
	f.do(t, "POST", "/run", runBody("s1", "hello", false))
	long := strings.Repeat("x", 129)
	for _, body := range []string{
		`{"sessionId":".."}`, `{"sessionId":"."}`, `{"sessionId":"` + long + `"}`, `{"sessionId":"a\u0000b"}`,
		`{"sessionId":"f1","eventId":"` + long + `"}`, `{"sessionId":"f1","eventId":"a\nb"}`,
	} {
		if w := f.do(t, "POST", "/apps/demo/users/u1/sessions/s1/fork", body); w.Code != http.StatusBadRequest {
			t.Errorf("fork with %.60s: %d %.100s, want 400", body, w.Code, w.Body)
		}
	}
	var list []struct{ ID string }
	if err := json.Unmarshal(f.do(t, "GET", "/apps/demo/users/u1/sessions", "").Body.Bytes(), &list); err != nil || len(list) != 1 {
		t.Errorf("sessions after the refused forks: %+v, %v", list, err)
	}
	if w := f.do(t, "POST", "/apps/demo/users/u1/sessions/s1/fork", `{"sessionId":"`+long[1:]+`"}`); w.Code != 200 {
		t.Errorf("fork to a 128-byte id: %d %s", w.Code, w.Body)
	}
}

// nested returns a JSON value nested n arrays deep.
func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// TestNestingDepth: a body nested deeper than the limit is refused with 400
// before anything is stored, and the session stays readable.
func TestNestingDepth(t *testing.T) {
	f := newFixture(t, server.Config{})
	mustCreate(t, f, "s1")
	deep := nested(9990) // decodes (Go's limit is 10000), but not once stored inside an event
	for _, tc := range []struct{ method, path, body string }{
		{"PATCH", "/apps/demo/users/u1/sessions/s1", `{"stateDelta":{"k":` + deep + `}}`},
		{"POST", "/run", `{"appName":"demo","userId":"u1","sessionId":"s1","stateDelta":{"k":` + deep + `},"newMessage":{"parts":[{"text":"hi"}]}}`},
		{"POST", "/run", `{"appName":"demo","userId":"u1","sessionId":"s1","newMessage":{"parts":[{"functionResponse":{"name":"f","response":{"k":` + deep + `}}}]}}`},
		{"POST", "/apps/demo/users/u1/sessions", `{"sessionId":"s2","state":{"k":` + deep + `}}`},
		{"POST", "/apps/demo/users/u1/sessions/s3", `{"k":` + deep + `}`},
	} {
		if w := f.do(t, tc.method, tc.path, tc.body); w.Code != http.StatusBadRequest {
			t.Errorf("%s %s: %d %.200s, want 400", tc.method, tc.path, w.Code, w.Body)
		}
	}
	if w := f.do(t, "GET", "/apps/demo/users/u1/sessions/s1", ""); w.Code != 200 || strings.Contains(w.Body.String(), "[[[") {
		t.Errorf("session after refused writes: %d %.200s", w.Code, w.Body)
	}
	// Within the limit, and deep strings of brackets, pass.
	body := `{"stateDelta":{"k":` + nested(40) + `,"s":"` + strings.Repeat("[", 1000) + `"}}`
	if w := f.do(t, "PATCH", "/apps/demo/users/u1/sessions/s1", body); w.Code != 200 {
		t.Errorf("PATCH within the limit: %d %.200s", w.Code, w.Body)
	}
}

// TestInvalidMessage: a message whose parts are null or empty, or whose
// role is "model", is refused with 400 and not stored.
func TestInvalidMessage(t *testing.T) {
	f := newFixture(t, server.Config{})
	mustCreate(t, f, "s1")
	for _, msg := range []string{`{"parts":[null]}`, `{"parts":[{}]}`, `{"role":"model","parts":[{"text":"I approve."}]}`} {
		for _, path := range []string{"/run", "/run_sse"} {
			body := `{"appName":"demo","userId":"u1","sessionId":"s1","newMessage":` + msg + `}`
			if w := f.do(t, "POST", path, body); w.Code != http.StatusBadRequest {
				t.Errorf("%s %s: %d %s, want 400", path, msg, w.Code, w.Body)
			}
		}
	}
	var sess struct{ Events []any }
	if err := json.Unmarshal(f.do(t, "GET", "/apps/demo/users/u1/sessions/s1", "").Body.Bytes(), &sess); err != nil || len(sess.Events) != 0 {
		t.Errorf("session after refused runs: %d events, %v", len(sess.Events), err)
	}
}

// TestModelErrorStatus: model failures reach the client as a gateway's
// statuses (429 for a rate limit, 503 when overloaded, 502 otherwise), on
// /run and before the first /run_sse frame alike.
func TestModelErrorStatus(t *testing.T) {
	f := newFixture(t, server.Config{})
	mustCreate(t, f, "s1")
	for text, want := range map[string]int{"ratelimit": 429, "overloaded": 503, "upstream": 502} {
		for _, path := range []string{"/run", "/run_sse"} {
			if w := f.do(t, "POST", path, runBody("s1", text, false)); w.Code != want {
				t.Errorf("%s %s: %d %s, want %d", path, text, w.Code, w.Body, want)
			}
		}
	}
}

// TestCancelBeforeFirstFrame: cancelling a run that has sent nothing yet
// answers the waiting /run_sse client with a 200 stream ending in the
// cancellation frame, as after the first frame, never with 499.
func TestCancelBeforeFirstFrame(t *testing.T) {
	f := newFixture(t, server.Config{})
	ts := httptest.NewServer(f.srv)
	defer ts.Close()
	mustCreate(t, f, "s1")
	type result struct {
		code int
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.Post(ts.URL+"/run_sse", "application/json", strings.NewReader(runBody("s1", "wait", false)))
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- result{resp.StatusCode, string(b), err}
	}()
	wait(t, f.started, "the agent to start")
	if w := f.do(t, "POST", "/apps/demo/users/u1/sessions/s1/cancel", ""); w.Code != 200 {
		t.Fatalf("cancel: %d %s", w.Code, w.Body)
	}
	res := wait(t, done, "the stream to end")
	if res.err != nil || res.code != http.StatusOK {
		t.Fatalf("stream: %d %q %v, want 200", res.code, res.body, res.err)
	}
	frames := sseFrames(res.body)
	if len(frames) != 2 || frameEvent(t, frames[0])["errorCode"] != event.ErrorCodeAborted || frameEvent(t, frames[1])["error"] != "Invocation cancelled" {
		t.Errorf("frames %q, want the abort event and the cancellation frame", frames)
	}
	wait(t, f.observed, "the agent to observe cancellation")

	// A waiting /run client gets a status it can read: 409.
	go func() {
		resp, err := http.Post(ts.URL+"/run", "application/json", strings.NewReader(runBody("s1", "wait", false)))
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- result{resp.StatusCode, string(b), err}
	}()
	wait(t, f.started, "the agent to start")
	f.do(t, "POST", "/apps/demo/users/u1/sessions/s1/cancel", "")
	if res := wait(t, done, "the run to end"); res.err != nil || res.code != http.StatusConflict || !strings.Contains(res.body, "Invocation cancelled") {
		t.Errorf("/run cancelled: %d %q %v, want 409", res.code, res.body, res.err)
	}
}

// TestSlowBodyIsCutOff: a client trickling its body in is cut off after
// Config.BodyReadTimeout, while a response may outlast it.
func TestSlowBodyIsCutOff(t *testing.T) {
	f := newFixture(t, server.Config{BodyReadTimeout: 300 * time.Millisecond})
	ts := httptest.NewServer(f.srv)
	defer ts.Close()
	mustCreate(t, f, "s1")
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := runBody("s1", "hello", false)
	if _, err := io.WriteString(conn, "POST /run HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body[:5]); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	go func() { // one byte every 100 ms, for at most 5 s
		for i := 5; i < len(body) && time.Since(start) < 5*time.Second; i++ {
			time.Sleep(100 * time.Millisecond)
			if _, err := conn.Write([]byte{body[i]}); err != nil {
				return
			}
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	reply, err := io.ReadAll(conn)
	// The server answers 400 and closes; unread bytes may turn the close
	// into a reset that discards the answer, but either way it is quick.
	if elapsed := time.Since(start); elapsed > 2500*time.Millisecond || err == nil && !strings.HasPrefix(string(reply), "HTTP/1.1 400") {
		t.Errorf("after %v the slow client got %.100q, %v; want the connection ended within the timeout", elapsed, reply, err)
	}

	// A stream longer than the body timeout is not cut.
	resp, rd := startStream(t, t.Context(), ts.URL, runBody("s1", "block", true))
	defer resp.Body.Close()
	wait(t, f.started, "the agent to start")
	time.Sleep(600 * time.Millisecond)
	select {
	case err := <-f.observed:
		t.Fatalf("the stream was cancelled after the body timeout: %v", err)
	default:
	}
	f.do(t, "POST", "/apps/demo/users/u1/sessions/s1/cancel", "")
	rest, _ := io.ReadAll(rd)
	if !strings.Contains(string(rest), "Invocation cancelled") {
		t.Errorf("stream end %q", rest)
	}
}

// TestModelRateLimitThroughAgent: a provider's 429, raised by the model of
// an LLM agent, reaches the client as 429.
func TestModelRateLimitThroughAgent(t *testing.T) {
	llm := scripted.New("limited", func(context.Context, *model.Request) (scripted.Turn, error) {
		return scripted.Turn{}, &retry.ExhaustedError{Attempts: 4, Err: &model.Error{Provider: "gemini", StatusCode: 429, Code: "RESOURCE_EXHAUSTED", Message: "quota", Retryable: true}}
	})
	root, err := llmagent.New(llmagent.Config{Name: "root", Model: llm})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "demo", Agent: root, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Apps: []*runner.Runner{r}, AllowedHosts: []string{"example.com"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/run", "/run_sse"} {
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, httptest.NewRequest("POST", path, strings.NewReader(runBody("s1", "hi", false))))
		if w.Code != http.StatusTooManyRequests {
			t.Errorf("%s: %d %s, want 429", path, w.Code, w.Body)
		}
	}
}
