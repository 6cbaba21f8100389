package functiontool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// WeatherArgs are the arguments of the weather tool. The jsonschema tags
// become the descriptions the model reads; Unit is optional.
type WeatherArgs struct {
	City string `json:"city" jsonschema:"the city to report on"`
	Unit string `json:"unit,omitempty" jsonschema:"c or f; c by default"`
}

// Report is the weather tool's result.
type Report struct {
	City        string  `json:"city"`
	Temperature float64 `json:"temperature"`
}

func Example() {
	weather, err := functiontool.New(functiontool.Config{
		Name:        "get_weather",
		Description: "Reports the current weather in a city.",
	}, func(ctx context.Context, tc tool.Context, args WeatherArgs) (Report, error) {
		return Report{City: args.City, Temperature: 21.5}, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	// The declaration the model sees.
	schema, _ := json.Marshal(weather.Declaration().ParametersJsonSchema)
	fmt.Println(string(schema))

	// An LLM agent runs the tool for each function call; here we call it
	// directly with the model's arguments.
	tc := exampleToolContext()
	res, err := weather.Run(context.Background(), tc, map[string]any{"city": "Oslo"})
	fmt.Println(res, err)

	// Arguments that do not match the schema are reported to the model.
	_, err = weather.Run(context.Background(), tc, map[string]any{"city": 7})
	fmt.Println(err)
	// Output:
	// {"type":"object","properties":{"city":{"type":"string","description":"the city to report on"},"unit":{"type":"string","description":"c or f; c by default"}},"required":["city"],"additionalProperties":false}
	// map[city:Oslo temperature:21.5] <nil>
	// tool "get_weather": invalid arguments: argument "city" must be of type string, got integer 7
}

// exampleToolContext builds the context an agent would give a tool.
func exampleToolContext() tool.Context {
	ctx := context.Background()
	svc := memsession.NewService()
	sess, _ := svc.Create(ctx, session.Key{AppName: "app", UserID: "u1"}, nil)
	a, _ := agent.New(agent.Config{Name: "assistant", Run: func(context.Context, *agent.Invocation) iter.Seq2[*event.Event, error] {
		return func(func(*event.Event, error) bool) {}
	}})
	tree, _ := agent.NewTree(a)
	inv := agent.NewInvocation(agent.InvocationConfig{Session: sess, Tree: tree})
	return agent.NewToolContext(inv.For(a), "call-1")
}
