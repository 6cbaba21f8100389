package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/artifact/memartifact"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session/memsession"
)

// FuzzRunRequest posts arbitrary bodies to /run and /run_sse of a real
// server (memory stores, an LLM agent on a scripted model). A body may be
// refused with a 4xx, but never fail with a 5xx, and whatever a run
// accepted must leave its session readable: GET session answers 200 with a
// JSON session.
func FuzzRunRequest(f *testing.F) {
	deep := strings.Repeat("[", 9990) + strings.Repeat("]", 9990)
	for _, seed := range []string{
		`{"appName":"fuzz","userId":"u","sessionId":"s","newMessage":{"role":"user","parts":[{"text":"hi"}]}}`,
		`{"app_name":"fuzz","user_id":"u","session_id":"s","new_message":{"parts":[{"text":"hi"}]},"state_delta":{"k":[1,{"a":null}]},"streaming":true}`,
		`{"appName":"fuzz","userId":"u","sessionId":"s","newMessage":{"parts":[{"text":"x"}]},"stateDelta":{"k":` + deep + `}}`,
		`{"appName":"fuzz","userId":"u","sessionId":"s","newMessage":{"parts":[{"functionResponse":{"name":"f","response":{"k":` + deep + `}}}]}}`,
		`{"appName":"fuzz","userId":"u","sessionId":"s","newMessage":{"parts":[null]}}`,
		`{"appName":"fuzz","userId":"u","sessionId":"s","newMessage":{"role":"model","parts":[{}]}}`,
		`{"appName":"fuzz","userId":"u\u0000","sessionId":"s","newMessage":{"parts":[{"inlineData":{"mimeType":"text/plain","data":"aGk="}}]}}`,
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	llm := scripted.New("fuzz-model", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		return scripted.Turn{Text: "ok"}, nil
	})
	root, err := llmagent.New(llmagent.Config{Name: "root", Model: llm})
	if err != nil {
		f.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "fuzz", Agent: root, Sessions: memsession.NewService(),
		Artifacts: memartifact.NewService(), AutoCreateSession: true})
	if err != nil {
		f.Fatal(err)
	}
	srv, err := server.New(server.Config{Apps: []*runner.Runner{r}, AllowedHosts: []string{"example.com"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body string, sse bool) {
		path := "/run"
		if sse {
			path = "/run_sse"
		}
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, httptest.NewRequest("POST", path, strings.NewReader(body)))
		if w.Code >= 500 {
			t.Fatalf("%s answered %d: %s", path, w.Code, w.Body)
		}
		if w.Code != http.StatusOK {
			return
		}
		var req map[string]any
		if err := json.Unmarshal([]byte(body), &req); err != nil {
			t.Fatalf("accepted a body that is not a JSON object: %v", err)
		}
		pick := func(camel, snake string) string {
			if v, ok := req[camel].(string); ok && v != "" {
				return v
			}
			v, _ := req[snake].(string)
			return v
		}
		get := "/apps/" + url.PathEscape(pick("appName", "app_name")) + "/users/" + url.PathEscape(pick("userId", "user_id")) +
			"/sessions/" + url.PathEscape(pick("sessionId", "session_id"))
		g := httptest.NewRecorder()
		srv.ServeHTTP(g, httptest.NewRequest("GET", get, nil))
		b, _ := io.ReadAll(g.Body)
		var sess struct {
			ID     string            `json:"id"`
			Events []json.RawMessage `json:"events"`
		}
		if g.Code != http.StatusOK || json.Unmarshal(b, &sess) != nil || len(sess.Events) == 0 {
			t.Fatalf("after an accepted run, GET %s: %d %.300s", get, g.Code, b)
		}
	})
}
