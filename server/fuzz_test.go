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
	"github.com/loomkit/loom/event"
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
		`{"app_name":"fuzz","user_id":"u","session_Id":"s2","new_message":{"pArts":[{"teXt":"hi"}]}}`,
		`{"appName":"fuzz","userId":"u","sessionId":"s3","session_id":"s4","newMessage":{"parts":[{"text":"hi"}]}}`,
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
		req := topMembers(t, body)
		pick := func(name string) string {
			v, _ := req[name].(string)
			return v
		}
		get := "/apps/" + url.PathEscape(pick("appName")) + "/users/" + url.PathEscape(pick("userId")) +
			"/sessions/" + url.PathEscape(pick("sessionId"))
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

// topMembers reads an accepted body's members as the server does: keys in
// camelCase (event.CamelCase), in order, the last of a name winning and a
// null removing it.
func topMembers(t *testing.T, body string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("accepted a body that is not a JSON object: %v %v", tok, err)
	}
	m := map[string]any{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("accepted a body that is not a JSON object: %v", err)
		}
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("accepted a body that is not a JSON object: %v", err)
		}
		k := event.CamelCase(tok.(string))
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m
}
