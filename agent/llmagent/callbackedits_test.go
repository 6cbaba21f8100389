package llmagent_test

import (
	"context"
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
			a, err := llmagent.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			r, err := runner.New(runner.Config{AppName: "app", Agent: a, Sessions: memsession.NewService(),
				AutoCreateSession: true, Plugins: plugins})
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{"one", "two", "three"} {
				if _, err := r.RunSync(t.Context(), "u", "s", genai.NewContentFromText(q, genai.RoleUser), nil); err != nil {
					t.Fatal(err)
				}
			}
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
		a, err := llmagent.New(llmagent.Config{Name: "echo", Model: m})
		if err != nil {
			t.Fatal(err)
		}
		look := plugin.Plugin{Name: "look", Callbacks: agent.Callbacks{ReadOnlyModelHooks: readOnly,
			BeforeModel: []agent.BeforeModelCallback{func(_ context.Context, _ *agent.CallbackContext, req *model.Request) (*model.Response, error) {
				firsts = append(firsts, req.Contents[0])
				return nil, nil
			}}}}
		r, err := runner.New(runner.Config{AppName: "app", Agent: a, Sessions: memsession.NewService(),
			AutoCreateSession: true, Plugins: []*plugin.Plugin{&look}})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"one", "two", "three"} {
			if _, err := r.RunSync(t.Context(), "u", "s", genai.NewContentFromText(q, genai.RoleUser), nil); err != nil {
				t.Fatal(err)
			}
		}
		shared := firsts[0] == firsts[1] && firsts[1] == firsts[2]
		if shared != readOnly {
			t.Errorf("read-only hooks %v: the calls' first contents are one object: %v, want %v", readOnly, shared, readOnly)
		}
		if got := texts(firsts); !slices.Equal(got, []string{"one", "one", "one"}) {
			t.Errorf("read-only hooks %v: the calls' first contents are %q", readOnly, got)
		}
	}
}
