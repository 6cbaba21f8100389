package advisortool_test

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/advisortool"
)

// BenchmarkInvocation is one invocation of an agent that has the advisor
// tool: it answers at once (Unused), or consults the advisor once first
// (Consulted), each consultation checked against both budgets (the
// defaults; ten invocations per session).
func BenchmarkInvocation(b *testing.B) {
	for _, consult := range []bool{false, true} {
		name := "Unused"
		if consult {
			name = "Consulted"
		}
		b.Run(name, func(b *testing.B) {
			at, err := advisortool.New(advisortool.Config{Model: scripted.New("adv", func(context.Context, *model.Request) (scripted.Turn, error) {
				return scripted.Text("advice"), nil
			}), MaxPerTurn: 2})
			if err != nil {
				b.Fatal(err)
			}
			m := scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
				last := req.Contents[len(req.Contents)-1]
				if !consult || last.Parts[0].FunctionResponse != nil {
					return scripted.Text("done"), nil
				}
				return scripted.Call(advisortool.DefaultName, map[string]any{"question": "q"}), nil
			})
			a, err := llmagent.New(llmagent.Config{Name: "a", Model: m, Tools: []tool.Tool{at}})
			if err != nil {
				b.Fatal(err)
			}
			r, err := runner.New(runner.Config{AppName: "app", Agent: a, Sessions: memsession.NewService(), AutoCreateSession: true})
			if err != nil {
				b.Fatal(err)
			}
			msg := genai.NewContentFromText("go", genai.RoleUser)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				evs, err := r.RunSync(context.Background(), "u", fmt.Sprint("s", i/10), msg, nil)
				if err != nil || evs[len(evs)-1].Text() != "done" {
					b.Fatal(err)
				}
			}
		})
	}
}
