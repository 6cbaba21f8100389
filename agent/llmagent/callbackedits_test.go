package llmagent_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
)

// texts returns the text of every part of contents, in order.
func texts(contents []*genai.Content) []string {
	var out []string
	for _, c := range contents {
		for _, p := range c.Parts {
			out = append(out, p.Text)
		}
	}
	return out
}

// runTurns runs one turn per question on one session of a new runner
// over a, with plugins.
func runTurns(t *testing.T, a agent.Agent, plugins []*plugin.Plugin, questions ...string) {
	t.Helper()
	r, err := runner.New(runner.Config{AppName: app, Agent: a, Sessions: memsession.NewService(),
		AutoCreateSession: true, Plugins: plugins})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range questions {
		if _, err := r.RunSync(t.Context(), user, sid, genai.NewContentFromText(q, genai.RoleUser), nil); err != nil {
			t.Fatal(err)
		}
	}
}

// editRequest edits a model request as a before-model callback may: it
// rewrites the latest content's text in place and puts a new content in
// the first slot.
func editRequest(req *model.Request) {
	last := req.Contents[len(req.Contents)-1]
	last.Parts[0].Text = "[edited] " + last.Parts[0].Text
	req.Contents[0] = genai.NewContentFromText("replaced", genai.RoleUser)
}

// TestCallbackEditsStayInTheirRequest checks that a before-model callback
// that changes the request's contents, in place or slot by slot, changes
// what that one model call receives, and nothing else: the next call of
// the agent starts again from the session's history, as a call on a
// reloaded session would (CONFORMANCE A9). Both the agent's own callback
// and a plugin's are checked.
func TestCallbackEditsStayInTheirRequest(t *testing.T) {
	for _, where := range []string{"agent", "plugin"} {
		t.Run(where, func(t *testing.T) {
			var saw, sent [][]string
			m := scripted.New("echo", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
				sent = append(sent, texts(req.Contents))
				return scripted.Text("ok"), nil
			})
			edit := func(_ context.Context, _ *agent.CallbackContext, req *model.Request) (*model.Response, error) {
				saw = append(saw, texts(req.Contents))
				editRequest(req)
				return nil, nil
			}
			cfg := llmagent.Config{Name: "echo", Model: m}
			var plugins []*plugin.Plugin
			if where == "agent" {
				cfg.BeforeModel = []agent.BeforeModelCallback{edit}
			} else {
				plugins = []*plugin.Plugin{{Name: "edit", Callbacks: agent.Callbacks{BeforeModel: []agent.BeforeModelCallback{edit}}}}
			}
			runTurns(t, mustAgent(t, cfg), plugins, "one", "two", "three")
			wantSaw := [][]string{{"one"}, {"one", "ok", "two"}, {"one", "ok", "two", "ok", "three"}}
			wantSent := [][]string{{"replaced"}, {"replaced", "ok", "[edited] two"}, {"replaced", "ok", "two", "ok", "[edited] three"}}
			if !slices.EqualFunc(saw, wantSaw, slices.Equal) {
				t.Errorf("the callback saw %q, want %q", saw, wantSaw)
			}
			if !slices.EqualFunc(sent, wantSent, slices.Equal) {
				t.Errorf("the model received %q, want %q", sent, wantSent)
			}
		})
	}
}

// TestReadOnlyHooksShareTheHistory checks the other side of
// TestCallbackEditsStayInTheirRequest: when only read-only global hooks
// (agent.Callbacks.ReadOnlyModelHooks, as logging and tracing set) see the
// requests, they share the agent's model history, so that a call does not
// copy it; a hook that may edit gets a copy of it every call.
func TestReadOnlyHooksShareTheHistory(t *testing.T) {
	for _, readOnly := range []bool{true, false} {
		var firsts []*genai.Content
		m := scripted.New("echo", func(context.Context, *model.Request) (scripted.Turn, error) {
			return scripted.Text("ok"), nil
		})
		look := plugin.Plugin{Name: "look", Callbacks: agent.Callbacks{ReadOnlyModelHooks: readOnly,
			BeforeModel: []agent.BeforeModelCallback{func(_ context.Context, _ *agent.CallbackContext, req *model.Request) (*model.Response, error) {
				firsts = append(firsts, req.Contents[0])
				return nil, nil
			}}}}
		runTurns(t, mustAgent(t, llmagent.Config{Name: "echo", Model: m}), []*plugin.Plugin{&look}, "one", "two", "three")
		shared := firsts[0] == firsts[1] && firsts[1] == firsts[2]
		if shared != readOnly {
			t.Errorf("read-only hooks %v: the calls' first contents are one object: %v, want %v", readOnly, shared, readOnly)
		}
		if got := texts(firsts); !slices.Equal(got, []string{"one", "one", "one"}) {
			t.Errorf("read-only hooks %v: the calls' first contents are %q", readOnly, got)
		}
	}
}

// TestToolArgsAreTheCallsOwn checks that a before-tool callback and a tool
// that change the arguments they are given change what the tool receives
// and nothing else: the function call the caller received, the one
// stored, and the one the model sees in its history on the next call all
// keep the arguments the model gave (CONFORMANCE A9).
func TestToolArgsAreTheCallsOwn(t *testing.T) {
	var history []map[string]any
	calls := 0
	m := scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		calls++
		if calls == 1 {
			return scripted.Call("change_args", map[string]any{"a": "from the model"}), nil
		}
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				if p.FunctionCall != nil {
					history = append(history, p.FunctionCall.Args)
				}
			}
		}
		return scripted.Text("done"), nil
	})
	changeArgs := fnTool{name: "change_args", run: func(_ context.Context, _ tool.Context, args map[string]any) (map[string]any, error) {
		got := args["a"]
		args["a"] = "changed by the tool"
		return map[string]any{"got": got}, nil
	}}
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, Tools: []tool.Tool{changeArgs},
		BeforeTool: []agent.BeforeToolCallback{func(_ context.Context, _ tool.Context, _ tool.Tool, args map[string]any) (map[string]any, error) {
			args["a"] = "changed by the callback"
			return nil, nil
		}}}), nil, nil)
	evs := f.run(t, "go", nil)
	var received, kept []map[string]any
	var results []any
	for _, ev := range evs {
		for _, fc := range ev.FunctionCalls() {
			received = append(received, fc.Args)
		}
		for _, fr := range ev.FunctionResponses() {
			results = append(results, fr.Response["got"])
		}
	}
	for _, ev := range f.session(t).Events() {
		for _, fc := range ev.FunctionCalls() {
			kept = append(kept, fc.Args)
		}
	}
	want := fmt.Sprint([]map[string]any{{"a": "from the model"}})
	for what, got := range map[string][]map[string]any{"received": received, "stored": kept, "sent to the model": history} {
		if fmt.Sprint(got) != want {
			t.Errorf("the call %s has arguments %v, want %v", what, got, want)
		}
	}
	if fmt.Sprint(results) != "[changed by the callback]" {
		t.Errorf("the tool got %v, want the callback's change", results)
	}
}
