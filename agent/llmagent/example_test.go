package llmagent_test

import (
	"context"
	"fmt"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// An LLM agent with a function tool, on the offline scripted model: the
// model calls the tool, the runner commits the call and the result, and the
// model answers from the result.
func Example_functionTool() {
	type addArgs struct {
		A int `json:"a" jsonschema:"the first addend"`
		B int `json:"b" jsonschema:"the second addend"`
	}
	add, _ := functiontool.New(functiontool.Config{Name: "add", Description: "Adds two integers."},
		func(ctx context.Context, tc tool.Context, args addArgs) (int, error) {
			tc.State().Set("last_sum", args.A+args.B)
			return args.A + args.B, nil
		})
	// The scripted model calls add, then reads the tool's result.
	llm := scripted.New("calculator-model", func(ctx context.Context, req *model.Request) (scripted.Turn, error) {
		if res := scripted.LastFunctionResponse(req); len(res) > 0 {
			return scripted.Text(fmt.Sprintf("The sum is %v.", res[0].Response["result"])), nil
		}
		return scripted.Call("add", map[string]any{"a": 1, "b": 2}), nil
	})
	calc, _ := llmagent.New(llmagent.Config{
		Name:        "calculator",
		Model:       llm,
		Instruction: "Use the add tool to add numbers.",
		Tools:       []tool.Tool{add},
		OutputKey:   "answer",
	})
	r, _ := runner.New(runner.Config{AppName: "calc", Agent: calc, Sessions: memsession.NewService(), AutoCreateSession: true})
	for ev, err := range r.Run(context.Background(), "bob", "s1", genai.NewContentFromText("What is 1 + 2?", genai.RoleUser), nil) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		switch {
		case len(ev.FunctionCalls()) > 0:
			fc := ev.FunctionCalls()[0]
			fmt.Printf("call %s(%v, %v)\n", fc.Name, fc.Args["a"], fc.Args["b"])
		case len(ev.FunctionResponses()) > 0:
			fmt.Printf("result %v, state delta %v\n", ev.FunctionResponses()[0].Response["result"], ev.Actions.StateDelta)
		default:
			fmt.Printf("answer %q (final: %v)\n", ev.Text(), ev.IsFinalResponse())
		}
	}
	// Output:
	// call add(1, 2)
	// result 3, state delta map[last_sum:3]
	// answer "The sum is 3." (final: true)
}
