package server_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session/memsession"
)

// retryBody is runBody with Loom's loomRetryOf field.
func retryBody(session, text, retryOf string) string {
	var m map[string]any
	_ = json.Unmarshal([]byte(runBody(session, text, false)), &m)
	m["loomRetryOf"] = retryOf
	b, _ := json.Marshal(m)
	return string(b)
}

// TestRunRetryOfStoredMessage: a turn whose model call fails leaves the
// user's message stored; a run with loomRetryOf naming that message runs
// the turn again without storing the message a second time, and a retry
// of anything but the session's latest message of the user is refused
// with nothing stored.
func TestRunRetryOfStoredMessage(t *testing.T) {
	var calls atomic.Int32
	llm := scripted.New("flaky", func(context.Context, *model.Request) (scripted.Turn, error) {
		if calls.Add(1) == 1 {
			return scripted.Turn{}, &model.Error{Provider: "openai", StatusCode: 401, Code: "invalid_api_key", Message: "Incorrect API key"}
		}
		return scripted.Text("hello back"), nil
	})
	root, err := llmagent.New(llmagent.Config{Name: "root", Model: llm})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "demo", Agent: root, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{Apps: []*runner.Runner{r}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	do := func(method, path, body string) *httptest.ResponseRecorder {
		t.Helper()
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, httptest.NewRequest(method, "http://127.0.0.1"+path, strings.NewReader(body)))
		return w
	}
	type stored struct {
		ID      string `json:"id"`
		Author  string `json:"author"`
		Content struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"content"`
	}
	events := func() []stored {
		t.Helper()
		w := do("GET", "/apps/demo/users/u1/sessions/s1", "")
		var s struct{ Events []stored }
		if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil {
			t.Fatalf("session: %v: %s", err, w.Body)
		}
		return s.Events
	}

	if w := do("POST", "/run_sse", runBody("s1", "hello", false)); w.Code != http.StatusBadGateway {
		t.Fatalf("failing model: %d %s, want 502", w.Code, w.Body)
	}
	evs := events()
	if len(evs) != 1 || evs[0].Author != "user" {
		t.Fatalf("after the failed turn the session holds %+v, want the user's message", evs)
	}
	msg := evs[0].ID

	// Refused retries store nothing.
	for _, c := range []struct {
		id   string
		want int
	}{{"no-such-event", http.StatusNotFound}} {
		if w := do("POST", "/run_sse", retryBody("s1", "hello", c.id)); w.Code != c.want {
			t.Errorf("retry of %s: %d %s, want %d", c.id, w.Code, w.Body, c.want)
		}
	}
	if n := len(events()); n != 1 {
		t.Fatalf("refused retries stored events: %d", n)
	}

	w := do("POST", "/run_sse", retryBody("s1", "hello", msg))
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "hello back") {
		t.Fatalf("retry: %d %s", w.Code, w.Body)
	}
	evs = events()
	users := 0
	for _, ev := range evs {
		if ev.Author == "user" {
			users++
		}
	}
	if users != 1 || len(evs) != 2 || evs[1].Content.Parts[0].Text != "hello back" {
		t.Fatalf("after the retry the session holds %+v, want one message and the answer", evs)
	}

	// The answer is not a message of the user; an older message is not
	// the latest one.
	if w := do("POST", "/run_sse", retryBody("s1", "hello", evs[1].ID)); w.Code != http.StatusNotFound {
		t.Errorf("retry of the answer: %d %s, want 404", w.Code, w.Body)
	}
	if w := do("POST", "/run", runBody("s1", "again", false)); w.Code != http.StatusOK {
		t.Fatalf("new message: %d %s", w.Code, w.Body)
	}
	if w := do("POST", "/run", retryBody("s1", "hello", msg)); w.Code != http.StatusConflict {
		t.Errorf("retry of an older message: %d %s, want 409", w.Code, w.Body)
	}
	if n := len(events()); n != 4 {
		t.Errorf("session holds %d events, want 4 (two messages, two answers)", n)
	}
}
