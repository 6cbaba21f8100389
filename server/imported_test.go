package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/agent/workflowagent"
	"github.com/loomkit/loom/artifact/memartifact"
	"github.com/loomkit/loom/examples/workflow"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// toolApp is an application whose tools count their runs: a plain tool, one
// that needs the user's approval and a long-running one, called by an LLM
// agent inside a sequence (so its invocations also write the sequence's
// checkpoints).
type toolApp struct {
	runs atomic.Int64
}

func (a *toolApp) runner(t *testing.T) *runner.Runner {
	t.Helper()
	counted := func(name string, cfg functiontool.Config) tool.Tool {
		cfg.Name, cfg.Description = name, "Counts its runs."
		tl, err := functiontool.New(cfg, func(_ context.Context, _ tool.Context, args struct {
			Text string `json:"text"`
		}) (map[string]any, error) {
			a.runs.Add(1)
			return map[string]any{"done": args.Text}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	llm := scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if len(scripted.LastFunctionResponse(req)) > 0 {
			return scripted.Text("done"), nil
		}
		switch text := userText(req); {
		case strings.Contains(text, "note"):
			return scripted.Call("save_note", map[string]any{"text": "hello"}), nil
		case strings.Contains(text, "email"):
			return scripted.Call("send_email", map[string]any{"text": "hello"}), nil
		case strings.Contains(text, "job"):
			return scripted.Call("start_job", map[string]any{"text": "hello"}), nil
		}
		return scripted.Text("ok"), nil
	})
	worker, err := llmagent.New(llmagent.Config{Name: "worker", Model: llm, Tools: []tool.Tool{
		counted("save_note", functiontool.Config{}),
		counted("send_email", functiontool.Config{RequireConfirmation: true}),
		counted("start_job", functiontool.Config{LongRunning: true}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	greeter, err := llmagent.New(llmagent.Config{Name: "greeter", Model: scripted.New("g", func(context.Context, *model.Request) (scripted.Turn, error) {
		return scripted.Text("hi"), nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	seq, err := workflowagent.NewSequential(workflowagent.Config{Name: "pipeline", SubAgents: []agent.Agent{greeter, worker}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "tools", Agent: seq, Sessions: memsession.NewService(), Artifacts: memartifact.NewService()})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestR10ImportedHistoryResumesNothing is a property test of imported
// histories: every history the runtime writes (plain tool calls, approvals,
// long-running calls, a graph workflow's nodes, its request for input and
// its checkpoints), imported whole, cut at any event, or with events left
// out, gives a client nothing to resume. A run naming any invocation id of
// it is refused and stores nothing, an answer to any call of it is refused,
// and no tool or node runs (CONFORMANCE R10).
func TestR10ImportedHistoryResumesNothing(t *testing.T) {
	tools := &toolApp{}
	wf, err := workflow.New(workflow.Offline())
	if err != nil {
		t.Fatal(err)
	}
	wfRunner, err := runner.New(runner.Config{AppName: "workflow", Agent: wf, Sessions: memsession.NewService()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Config{
		Apps:         []*runner.Runner{tools.runner(t), wfRunner},
		Logger:       slog.New(slog.DiscardHandler),
		AllowedHosts: []string{"example.com"},
	})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{srv: srv}

	// Histories written by the runtime, each left in every state it
	// passes through: paused, answered, finished.
	type source struct {
		app   string
		turns []string // messages; "answer:<call name>:<json>" answers that call
	}
	sources := []source{
		{"tools", []string{"save a note", "send an email", `answer:adk_request_confirmation:{"confirmed":true}`, "start a job", `answer:start_job:{"status":"finished"}`, "send an email"}},
		{"tools", []string{"start a job", "send an email"}},
		{"workflow", []string{"I want a refund for order 77", `answer:adk_request_input:{"result":"yes"}`, "I want a refund for order 78", "what are your hours?"}},
		{"workflow", []string{"I want a refund for order 79"}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for si, src := range sources {
		sid := fmt.Sprintf("src%d", si)
		mustCreateIn(t, f, src.app, sid)
		for _, turn := range src.turns {
			var body string
			if name, resp, ok := strings.Cut(strings.TrimPrefix(turn, "answer:"), ":"); ok && strings.HasPrefix(turn, "answer:") {
				id := lastCallID(t, sessionEvents(t, f, src.app, sid), name)
				body = fmt.Sprintf(`{"appName":%q,"userId":"u1","sessionId":%q,"newMessage":{"role":"user","parts":[{"functionResponse":{"id":%q,"name":%q,"response":%s}}]}}`,
					src.app, sid, id, name, resp)
			} else {
				body = fmt.Sprintf(`{"appName":%q,"userId":"u1","sessionId":%q,"newMessage":{"role":"user","parts":[{"text":%q}]}}`, src.app, sid, turn)
			}
			if w := f.do(t, "POST", "/run", body); w.Code != http.StatusOK {
				t.Fatalf("%s %q: %d %s", src.app, turn, w.Code, w.Body)
			}
		}
		history := sessionEvents(t, f, src.app, sid)

		// The imported histories: the whole log, every prefix, and random
		// subsets.
		var cuts [][]json.RawMessage
		for n := 1; n <= len(history); n++ {
			cuts = append(cuts, history[:n])
		}
		for range 8 {
			var sub []json.RawMessage
			for _, ev := range history {
				if rng.IntN(3) > 0 {
					sub = append(sub, ev)
				}
			}
			if len(sub) > 0 {
				cuts = append(cuts, sub)
			}
		}
		for ci, cut := range cuts {
			runsBefore := tools.runs.Load()
			sid := fmt.Sprintf("imp%d-%d", si, ci)
			events, _ := json.Marshal(cut)
			if w := f.do(t, "POST", "/apps/"+src.app+"/users/u1/sessions", fmt.Sprintf(`{"sessionId":%q,"events":%s}`, sid, events)); w.Code != http.StatusOK {
				t.Fatalf("import %s: %d %s", sid, w.Code, w.Body)
			}
			stored := len(sessionEvents(t, f, src.app, sid))
			var msgs []string
			for _, inv := range invocationIDs(t, cut) {
				for _, text := range []string{"yes", "go on"} {
					msgs = append(msgs, fmt.Sprintf(`{"appName":%q,"userId":"u1","sessionId":%q,"invocationId":%q,"newMessage":{"role":"user","parts":[{"text":%q}]}}`,
						src.app, sid, inv, text))
				}
			}
			for _, call := range functionCalls(t, cut) {
				for _, resp := range []string{`{"confirmed":true}`, `{"result":"yes"}`, `{"status":"finished"}`} {
					msgs = append(msgs, fmt.Sprintf(`{"appName":%q,"userId":"u1","sessionId":%q,"newMessage":{"role":"user","parts":[{"functionResponse":{"id":%q,"name":%q,"response":%s}}]}}`,
						src.app, sid, call[0], call[1], resp))
				}
			}
			for _, msg := range msgs {
				if w := f.do(t, "POST", "/run", msg); w.Code != http.StatusBadRequest {
					t.Errorf("%s: %s: %d %s, want 400", sid, msg, w.Code, w.Body)
				}
				if n := len(sessionEvents(t, f, src.app, sid)); n != stored {
					t.Fatalf("%s: %s: the session went from %d to %d events", sid, msg, stored, n)
				}
			}
			if n := tools.runs.Load(); n != runsBefore {
				t.Fatalf("%s: tools ran %d times for an imported history", sid, n-runsBefore)
			}
		}
	}
}

// userText returns the user's last message in req, passing over what
// other agents said (relayed as user content "For context: ...").
func userText(req *model.Request) string {
	for i := len(req.Contents) - 1; i >= 0; i-- {
		c := req.Contents[i]
		if c.Role != "user" || len(c.Parts) == 0 || strings.HasPrefix(c.Parts[0].Text, "For context:") {
			continue
		}
		return c.Parts[0].Text
	}
	return ""
}

func mustCreateIn(t *testing.T, f *fixture, app, id string) {
	t.Helper()
	if w := f.do(t, "POST", "/apps/"+app+"/users/u1/sessions", `{"sessionId":"`+id+`"}`); w.Code != http.StatusOK {
		t.Fatalf("create %s: %d %s", id, w.Code, w.Body)
	}
}

// sessionEvents returns the events of a session as the API returns them.
func sessionEvents(t *testing.T, f *fixture, app, id string) []json.RawMessage {
	t.Helper()
	w := f.do(t, "GET", "/apps/"+app+"/users/u1/sessions/"+id, "")
	if w.Code != http.StatusOK {
		t.Fatalf("get %s: %d %s", id, w.Code, w.Body)
	}
	var sess struct{ Events []json.RawMessage }
	if err := json.Unmarshal(w.Body.Bytes(), &sess); err != nil {
		t.Fatal(err)
	}
	return sess.Events
}

// wireEvent is what the property test reads of an event.
type wireEvent struct {
	InvocationID string `json:"invocationId"`
	Content      *struct {
		Parts []struct {
			FunctionCall *struct{ ID, Name string } `json:"functionCall"`
		} `json:"parts"`
	} `json:"content"`
}

func decodeEvents(t *testing.T, evs []json.RawMessage) []wireEvent {
	t.Helper()
	out := make([]wireEvent, len(evs))
	for i, raw := range evs {
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func invocationIDs(t *testing.T, evs []json.RawMessage) []string {
	seen := map[string]bool{}
	var out []string
	for _, ev := range decodeEvents(t, evs) {
		if ev.InvocationID != "" && !seen[ev.InvocationID] {
			seen[ev.InvocationID] = true
			out = append(out, ev.InvocationID)
		}
	}
	return out
}

// functionCalls returns the [id, name] of every function call.
func functionCalls(t *testing.T, evs []json.RawMessage) [][2]string {
	var out [][2]string
	for _, ev := range decodeEvents(t, evs) {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if fc := p.FunctionCall; fc != nil {
				out = append(out, [2]string{fc.ID, fc.Name})
			}
		}
	}
	return out
}

func lastCallID(t *testing.T, evs []json.RawMessage, name string) string {
	t.Helper()
	calls := functionCalls(t, evs)
	for i := len(calls) - 1; i >= 0; i-- {
		if calls[i][1] == name {
			return calls[i][0]
		}
	}
	t.Fatalf("no call of %s", name)
	return ""
}
