package telemetry_test

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/plugin/telemetry"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// A runner with the telemetry plugin records a span tree per invocation,
// which the Telemetry serves to the server's trace routes.
func Example() {
	tel, err := telemetry.New(telemetry.Config{})
	if err != nil {
		panic(err)
	}
	defer tel.Shutdown(context.Background())

	add, err := functiontool.New(functiontool.Config{Name: "add", Description: "Adds two integers."},
		func(_ context.Context, _ tool.Context, in struct{ A, B int }) (int, error) { return in.A + in.B, nil })
	if err != nil {
		panic(err)
	}
	m := scripted.NewSequence("demo-model", scripted.Call("add", map[string]any{"A": 1, "B": 2}), scripted.Text("3"))
	calc, err := llmagent.New(llmagent.Config{Name: "calc", Model: m, Tools: []tool.Tool{add}})
	if err != nil {
		panic(err)
	}
	r, err := runner.New(runner.Config{AppName: "demo", Agent: calc, Sessions: memsession.NewService(),
		AutoCreateSession: true, Plugins: []*plugin.Plugin{tel.Plugin()}})
	if err != nil {
		panic(err)
	}
	if _, err := r.RunSync(context.Background(), "user", "s1", genai.NewContentFromText("1+2?", genai.RoleUser), nil); err != nil {
		panic(err)
	}

	// The same answers GET /dev/apps/demo/debug/trace/session/s1 gives to user "user"
	// once the server's Config.Traces reads tel.
	spans, _ := tel.SessionSpans(context.Background(), telemetry.Owner{AppName: "demo", UserID: "user", SessionID: "s1"})
	depth := map[string]int{}
	for _, s := range spans {
		if s.ParentSpanID != "" {
			depth[s.SpanID] = depth[s.ParentSpanID] + 1
		}
		fmt.Println(strings.Repeat("  ", depth[s.SpanID]) + s.Name)
	}
	// Output:
	// invocation
	//   invoke_agent calc
	//     call_llm
	//     execute_tool add
	//     call_llm
}
