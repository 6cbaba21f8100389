package remoteagent_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/agent/remoteagent"
	"github.com/loomkit/loom/agent/workflowagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/agenttool"
)

// jsServer starts the scripted A2A agent of testdata/js/server.cjs on the
// A2A JavaScript SDK (installed by scripts/a2a-js.sh, its node_modules in
// LOOM_A2A_JS) and returns its base URL. It skips the test (fails it under
// CI) when the SDK is not installed.
func jsServer(t *testing.T) string {
	t.Helper()
	modules := os.Getenv("LOOM_A2A_JS")
	if modules == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("LOOM_A2A_JS is not set; run scripts/a2a-js.sh")
		}
		t.Skip("LOOM_A2A_JS is not set; run scripts/a2a-js.sh to install the A2A JavaScript SDK")
	}
	cmd := exec.Command("node", "testdata/js/server.cjs", modules)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close() // the server exits at the end of its input
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		io.Copy(io.Discard, stdout)
	}()
	select {
	case line := <-lines:
		base, ok := strings.CutPrefix(line, "listening ")
		if !ok {
			t.Fatalf("the JS server printed %q, want \"listening URL\"", line)
		}
		return base
	case <-time.After(30 * time.Second):
		t.Fatal("the JS server did not start in 30s")
	}
	return ""
}

func newRunner(t *testing.T, root agent.Agent) *runner.Runner {
	t.Helper()
	r, err := runner.New(runner.Config{AppName: "app", Agent: root, Sessions: session.NewService(memsession.New(), nil), AutoCreateSession: true, Resumable: true})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func newRemote(t *testing.T, name, url string) *remoteagent.Agent {
	t.Helper()
	a, err := remoteagent.New(remoteagent.Config{Name: name, URL: url})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// turn runs one message and returns the committed events and the partial
// ones.
func turn(t *testing.T, r *runner.Runner, sid string, msg *genai.Content) (committed, partial []*event.Event) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for ev, err := range r.Run(ctx, "u", sid, msg, nil) {
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		if ev.Partial {
			partial = append(partial, ev)
		} else {
			committed = append(committed, ev)
		}
	}
	return committed, partial
}

func text(evs []*event.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Content == nil {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.Text != "" && !p.Thought {
				b.WriteString(p.Text)
				b.WriteByte('\n')
			}
		}
	}
	return b.String()
}

func user(s string) *genai.Content { return genai.NewContentFromText(s, genai.RoleUser) }

// pausedCall returns the long-running call of the last event.
func pausedCall(t *testing.T, evs []*event.Event) *genai.FunctionCall {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	last := evs[len(evs)-1]
	calls, _ := agent.PausingCalls(last)
	if len(calls) != 1 {
		t.Fatalf("last event %+v pauses %d calls, want 1", last, len(calls))
	}
	return calls[0]
}

func answer(fc *genai.FunctionCall, resp map[string]any) *genai.Content {
	return &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: fc.ID, Name: fc.Name, Response: resp}}}}
}

// (CONFORMANCE P3)
func TestJSServer(t *testing.T) {
	base := jsServer(t)
	r := newRunner(t, newRemote(t, "js", base))

	evs, partial := turn(t, r, "s1", user("hello"))
	if got := text(evs); !strings.Contains(got, "js agent: hello (turn 1)") {
		t.Errorf("first turn: committed text %q, want the JS agent's artifact", got)
	}
	if got := text(partial); !strings.Contains(got, "thinking") {
		t.Errorf("first turn: partial text %q, want the working status message", got)
	}
	for _, ev := range evs {
		if ev.Author != "js" || ev.CustomMetadata[remoteagent.MetaContextID] == "" {
			t.Errorf("event %+v: want author js and the remote context id", ev)
		}
	}
	// The session's remote context continues.
	evs, _ = turn(t, r, "s1", user("again"))
	if got := text(evs); !strings.Contains(got, "js agent: again (turn 2)") {
		t.Errorf("second turn: %q, want turn 2 of the same remote context", got)
	}
	// Another session is another remote context.
	evs, _ = turn(t, r, "s2", user("other"))
	if got := text(evs); !strings.Contains(got, "(turn 1)") {
		t.Errorf("other session: %q, want a new remote context", got)
	}
}

// (CONFORMANCE P3)
func TestJSServerInputRequired(t *testing.T) {
	base := jsServer(t)
	r := newRunner(t, newRemote(t, "js", base))

	evs, _ := turn(t, r, "s", user("name please"))
	fc := pausedCall(t, evs)
	if fc.Name != remoteagent.InputFunction || fc.Args["message"] != "What is your name?" {
		t.Fatalf("paused call = %+v, want %s asking the remote's question", fc, remoteagent.InputFunction)
	}
	if got := text(evs); !strings.Contains(got, "What is your name?") {
		t.Errorf("pause event text %q, want the question", got)
	}
	evs, _ = turn(t, r, "s", answer(fc, map[string]any{"response": "Ada"}))
	if got := text(evs); !strings.Contains(got, "Nice to meet you, Ada.") {
		t.Errorf("after the answer: %q, want the remote's reply to it", got)
	}
}

func TestJSServerErrors(t *testing.T) {
	base := jsServer(t)
	r := newRunner(t, newRemote(t, "js", base))
	for _, tc := range []struct{ msg, code, text string }{
		{"fail now", remoteagent.ErrorTaskFailed, "failed on purpose"},
		{"reject this", remoteagent.ErrorTaskRejected, "does not do that"},
	} {
		evs, _ := turn(t, r, "s-"+tc.code, user(tc.msg))
		last := evs[len(evs)-1]
		if last.ErrorCode != tc.code || !strings.Contains(last.ErrorMessage, tc.text) {
			t.Errorf("%q: last event error %q %q, want %s with %q", tc.msg, last.ErrorCode, last.ErrorMessage, tc.code, tc.text)
		}
	}

	// An unreachable remote is an error event, not a failed invocation.
	r = newRunner(t, newRemote(t, "gone", "http://127.0.0.1:1"))
	evs, _ := turn(t, r, "s", user("hello"))
	if len(evs) != 1 || evs[0].ErrorCode != remoteagent.ErrorUnreachable || !strings.Contains(evs[0].ErrorMessage, "127.0.0.1:1") {
		t.Errorf("unreachable remote: events %+v, want one %s error naming the URL", evs, remoteagent.ErrorUnreachable)
	}
}

// router is a root LLM agent that transfers to the remote agent or calls
// it as a tool, as its scripted model says.
func router(t *testing.T, respond scripted.Responder, subs []agent.Agent, tools []tool.Tool) agent.Agent {
	t.Helper()
	a, err := llmagent.New(llmagent.Config{Name: "root", Model: scripted.New("router", respond), SubAgents: subs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// (CONFORMANCE P3)
func TestJSServerAsSubAgent(t *testing.T) {
	base := jsServer(t)
	remote := newRemote(t, "js", base)
	root := router(t, func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		return scripted.Call("transfer_to_agent", map[string]any{"agent_name": "js"}), nil
	}, []agent.Agent{remote}, nil)
	r := newRunner(t, root)
	evs, _ := turn(t, r, "s", user("hello via transfer"))
	var transferred, answered bool
	for _, ev := range evs {
		transferred = transferred || ev.Actions.TransferToAgent == "js"
		answered = answered || ev.Author == "js" && strings.Contains(text([]*event.Event{ev}), "js agent: hello via transfer")
	}
	if !transferred || !answered {
		t.Errorf("transfer: events %q, want a transfer to js and its answer", text(evs))
	}
}

// (CONFORMANCE P3)
func TestJSServerAsTool(t *testing.T) {
	base := jsServer(t)
	at, err := agenttool.New(newRemote(t, "js", base), nil)
	if err != nil {
		t.Fatal(err)
	}
	root := router(t, func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if res := scripted.LastFunctionResponse(req); len(res) > 0 {
			return scripted.Text("the tool said: " + res[0].Response["result"].(string)), nil
		}
		return scripted.Call("js", map[string]any{"request": "hello as a tool"}), nil
	}, nil, []tool.Tool{at})
	r := newRunner(t, root)
	evs, _ := turn(t, r, "s", user("go"))
	if got := text(evs); !strings.Contains(got, "the tool said: js agent: hello as a tool (turn 1)") {
		t.Errorf("agent tool: %q, want the remote's answer as the tool result", got)
	}
}

// As a workflow node: the remote's pause pauses the workflow, and the
// answer resumes the remote task, then the workflow goes on.
//
// (CONFORMANCE P3)
func TestJSServerInWorkflow(t *testing.T) {
	base := jsServer(t)
	after, err := llmagent.New(llmagent.Config{Name: "after", Model: scripted.New("m", func(context.Context, *model.Request) (scripted.Turn, error) {
		return scripted.Text("after the remote"), nil
	})})
	if err != nil {
		t.Fatal(err)
	}
	seq, err := workflowagent.NewSequential(workflowagent.Config{Name: "seq", SubAgents: []agent.Agent{newRemote(t, "js", base), after}})
	if err != nil {
		t.Fatal(err)
	}
	r := newRunner(t, seq)
	evs, _ := turn(t, r, "s", user("name please"))
	fc := pausedCall(t, evs)
	for _, ev := range evs {
		if ev.Author == "after" {
			t.Fatalf("the workflow went on past the paused remote: %q", text(evs))
		}
	}
	evs, _ = turn(t, r, "s", answer(fc, map[string]any{"response": "Grace"}))
	got := text(evs)
	if !strings.Contains(got, "Nice to meet you, Grace.") || !strings.Contains(got, "after the remote") {
		t.Errorf("resumed workflow: %q, want the remote's reply, then the next node", got)
	}
}
