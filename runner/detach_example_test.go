package runner_test

import (
	"context"
	"fmt"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// A run cancelled with cause ErrDetached (its process shuts down, say)
// stops without aborting: the call stays open, and Resume, here in the
// same process, runs it and goes on.
func ExampleErrDetached() {
	ctx, detach := context.WithCancelCause(context.Background())
	calls := 0
	slow, _ := functiontool.New(functiontool.Config{Name: "slow", Description: "Takes its time."},
		func(ctx context.Context, _ tool.Context, _ struct{}) (map[string]any, error) {
			if calls++; calls == 1 {
				detach(runner.ErrDetached) // the worker shuts down while the tool runs
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return map[string]any{"done": true}, nil
		})
	m := scripted.NewSequence("m", scripted.Call("slow", nil), scripted.Text("Done."))
	a, _ := llmagent.New(llmagent.Config{Name: "helper", Model: m, Tools: []tool.Tool{slow}})
	r, _ := runner.New(runner.Config{AppName: "demo", Agent: a, Sessions: memsession.NewService(), AutoCreateSession: true, Resumable: true})

	var invocation string
	for ev, err := range r.Run(ctx, "ada", "s1", genai.NewContentFromText("go", genai.RoleUser), nil) {
		if err != nil {
			break
		}
		invocation = ev.InvocationID
	}
	for ev, err := range r.Resume(context.Background(), "ada", "s1", invocation, nil) {
		if err != nil {
			fmt.Println(err)
			break
		}
		if frs := ev.FunctionResponses(); len(frs) > 0 {
			fmt.Println(frs[0].Name, frs[0].Response)
		} else if ev.Text() != "" {
			fmt.Println(ev.Text())
		}
	}
	// Output:
	// slow map[done:true]
	// Done.
}
