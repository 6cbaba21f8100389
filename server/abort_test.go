package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// abortApp is a server over an LLM agent that calls the tool "slow" once,
// then answers "hello again" to every message. The tool reports on started
// and returns when release is closed or its context ends.
type abortApp struct {
	ts      *httptest.Server
	runner  *runner.Runner
	model   *scripted.Model
	started chan struct{}
	release chan struct{}
}

func newAbortApp(t *testing.T, cfg server.Config) *abortApp {
	t.Helper()
	a := &abortApp{started: make(chan struct{}, 1), release: make(chan struct{})}
	slow, err := functiontool.New(functiontool.Config{Name: "slow", Description: "Takes its time."},
		func(ctx context.Context, _ tool.Context, _ struct{}) (map[string]any, error) {
			a.started <- struct{}{}
			select {
			case <-a.release:
				return map[string]any{"ok": true}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int32
	a.model = scripted.New("m", func(context.Context, *model.Request) (scripted.Turn, error) {
		if calls.Add(1) == 1 {
			return scripted.Call("slow", nil), nil
		}
		return scripted.Text("hello again"), nil
	}).Recording()
	ag, err := llmagent.New(llmagent.Config{Name: "A", Model: a.model, Tools: []tool.Tool{slow}})
	if err != nil {
		t.Fatal(err)
	}
	a.runner, err = runner.New(runner.Config{AppName: "demo", Agent: ag, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Apps = []*runner.Runner{a.runner}
	cfg.Logger = slog.New(slog.DiscardHandler)
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.ts = httptest.NewServer(srv)
	t.Cleanup(a.ts.Close)
	return a
}

// disconnectMidTool starts a /run_sse turn, reads its first frame (the
// call), waits for the tool to start and disconnects.
func (a *abortApp) disconnectMidTool(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "POST", a.ts.URL+"/run_sse", strings.NewReader(runBody("s1", "go", false)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.Contains(line, "functionCall") {
		t.Fatalf("first frame %q: %v", line, err)
	}
	wait(t, a.started, "the tool to start")
	cancel()
	resp.Body.Close()
}

// events polls the session until cond holds of its events.
func (a *abortApp) events(t *testing.T, what string, cond func([]*event.Event) bool) []*event.Event {
	t.Helper()
	key := session.Key{AppName: "demo", UserID: "u1", SessionID: "s1"}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if s, err := a.runner.Sessions().Get(context.Background(), key, nil); err == nil && cond(s.Events()) {
			return s.Events()
		}
	}
	t.Fatalf("gave up waiting for %s", what)
	return nil
}

// nextTurn runs a turn through /run and checks that it answers and that the
// model saw every call paired with its response.
func (a *abortApp) nextTurn(t *testing.T) {
	t.Helper()
	resp, err := http.Post(a.ts.URL+"/run", "application/json", strings.NewReader(runBody("s1", "again", false)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var evs []*event.Event
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &evs) != nil || len(evs) == 0 {
		t.Fatalf("next turn: %d %s", resp.StatusCode, body)
	}
	if got := model.Text(evs[len(evs)-1].Content, ""); got != "hello again" {
		t.Fatalf("next turn answered %q", got)
	}
	reqs := a.model.Requests()
	last := reqs[len(reqs)-1]
	for i, c := range last.Contents {
		for _, p := range c.Parts {
			if p == nil || p.FunctionCall == nil {
				continue
			}
			ok := false
			if i+1 < len(last.Contents) {
				for _, q := range last.Contents[i+1].Parts {
					ok = ok || (q != nil && q.FunctionResponse != nil && q.FunctionResponse.ID == p.FunctionCall.ID)
				}
			}
			if !ok {
				t.Errorf("the model got call %s without its response", p.FunctionCall.ID)
			}
		}
	}
}

// TestR13DisconnectMidToolAborts checks that a /run_sse client that
// disconnects while a tool runs aborts the invocation, which leaves the
// call answered with ADK's synthetic error response, and that the next
// turn works on a valid history (CONFORMANCE R13).
func TestR13DisconnectMidToolAborts(t *testing.T) {
	a := newAbortApp(t, server.Config{})
	a.disconnectMidTool(t)
	evs := a.events(t, "the abort event", func(evs []*event.Event) bool { return len(evs) > 0 && event.IsAbort(evs[len(evs)-1]) })
	frs := evs[len(evs)-1].FunctionResponses()
	if len(frs) != 1 || frs[0].Name != "slow" || frs[0].Response["error"] != event.AbortMessage {
		t.Fatalf("abort event responses %+v", frs)
	}
	a.nextTurn(t)
}

// TestKeepRunningOnDisconnect checks that with the option set, a client
// that disconnects leaves its invocation running to its end: the tool's
// own response and the model's answer are committed, and nothing is
// aborted.
func TestKeepRunningOnDisconnect(t *testing.T) {
	a := newAbortApp(t, server.Config{KeepRunningOnDisconnect: true})
	a.disconnectMidTool(t)
	time.Sleep(50 * time.Millisecond) // the server notices the disconnect
	close(a.release)
	evs := a.events(t, "the answer", func(evs []*event.Event) bool {
		return len(evs) > 0 && model.Text(evs[len(evs)-1].Content, "") == "hello again"
	})
	for _, ev := range evs {
		if event.IsAbort(ev) {
			t.Fatal("the invocation was aborted")
		}
		for _, fr := range ev.FunctionResponses() {
			if fr.Response["ok"] != true {
				t.Errorf("tool response %v", fr.Response)
			}
		}
	}
	a.nextTurn(t)
}
