package reflectretry_test

import (
	"context"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/plugin/reflectretry"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
)

// BenchmarkInvocation is one invocation in which the model calls a tool
// once and then answers: without the plugin (Off), with it and a tool that
// succeeds (On), and with it and a tool that fails once, so the model is
// called a third time after the guidance (OnFailure); and the same answer
// through WrapModel (ModelOff: no wrapper, ModelOn: wrapped, well formed).
func BenchmarkInvocation(b *testing.B) {
	for _, c := range []struct {
		name    string
		plugins []*plugin.Plugin
		fails   bool
		wrap    bool
	}{
		{name: "Off"},
		{name: "On", plugins: []*plugin.Plugin{reflectretry.New(reflectretry.Config{})}},
		{name: "OnFailure", plugins: []*plugin.Plugin{reflectretry.New(reflectretry.Config{})}, fails: true},
		{name: "ModelOn", wrap: true},
	} {
		b.Run(c.name, func(b *testing.B) {
			lt := &lookupTool{fail: func(n int64) bool { return c.fails && n%2 == 1 }}
			m := scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
				last := req.Contents[len(req.Contents)-1]
				if fr := last.Parts[0].FunctionResponse; fr != nil && fr.Response["response_type"] == nil {
					return scripted.Text("done"), nil
				}
				return scripted.Call("lookup", map[string]any{"id": 1}), nil
			})
			var llm model.LLM = m
			if c.wrap {
				llm = reflectretry.WrapModel(m, reflectretry.ModelConfig{})
			}
			a, err := llmagent.New(llmagent.Config{Name: "a", Model: llm, Tools: []tool.Tool{lt}})
			if err != nil {
				b.Fatal(err)
			}
			r, err := runner.New(runner.Config{AppName: "app", Agent: a, Sessions: memsession.NewService(), AutoCreateSession: true, Plugins: c.plugins})
			if err != nil {
				b.Fatal(err)
			}
			msg := genai.NewContentFromText("go", genai.RoleUser)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				// A fresh session per 20 invocations keeps the history short.
				sid := "s" + string(rune('a'+i/20%26)) + string(rune('a'+i/520%26))
				evs, err := r.RunSync(context.Background(), "u", sid, msg, nil)
				if err != nil {
					b.Fatal(err)
				}
				if evs[len(evs)-1].Text() != "done" {
					b.Fatal("no answer")
				}
			}
		})
	}
}
