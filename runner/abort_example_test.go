package runner_test

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// Cancelling a run while a tool works aborts the invocation: the runner
// answers the open call with ADK's abort response, so the next turn's
// history is valid.
func Example_abort() {
	ctx, cancel := context.WithCancel(context.Background())
	slow, _ := functiontool.New(functiontool.Config{Name: "slow", Description: "Takes its time."},
		func(ctx context.Context, _ tool.Context, _ struct{}) (map[string]any, error) {
			cancel() // the user presses Stop while the tool runs
			<-ctx.Done()
			return nil, ctx.Err()
		})
	m := scripted.NewSequence("m", scripted.Call("slow", nil), scripted.Text("Ready again."))
	a, _ := llmagent.New(llmagent.Config{Name: "helper", Model: m, Tools: []tool.Tool{slow}})
	r, _ := runner.New(runner.Config{AppName: "demo", Agent: a, Sessions: memsession.NewService(), AutoCreateSession: true})

	for ev, err := range r.Run(ctx, "ada", "s1", genai.NewContentFromText("go", genai.RoleUser), nil) {
		if err != nil {
			fmt.Println("cancelled:", errors.Is(err, context.Canceled))
			break
		}
		if event.IsAbort(ev) {
			fr := ev.FunctionResponses()[0]
			fmt.Println(ev.ErrorCode, fr.Name, fr.Response["error"])
		}
	}
	evs, _ := r.RunSync(context.Background(), "ada", "s1", genai.NewContentFromText("hello?", genai.RoleUser), nil)
	fmt.Println(evs[len(evs)-1].Text())
	// Output:
	// INVOCATION_ABORTED slow Invocation was aborted by client.
	// cancelled: true
	// Ready again.
}
