package exitlooptool_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/exitlooptool"
)

// TestA5ExitLoopSetsEscalate: the tool escalates and skips summarization,
// and declares an empty object of parameters.
func TestA5ExitLoopSetsEscalate(t *testing.T) {
	var tl tool.Tool = exitlooptool.New()
	if tl.Name() != "exit_loop" || tl.Description() == "" {
		t.Errorf("name %q, description %q", tl.Name(), tl.Description())
	}
	d := tl.Declaration()
	if d == nil || d.Name != "exit_loop" || d.Description != tl.Description() {
		t.Fatalf("declaration = %+v", d)
	}
	schema, ok := d.ParametersJsonSchema.(map[string]any)
	if !ok || schema["type"] != "object" {
		t.Fatalf("parameters schema = %#v, want an object", d.ParametersJsonSchema)
	}
	if props, ok := schema["properties"].(map[string]any); !ok || len(props) != 0 {
		t.Errorf("properties = %#v, want none", schema["properties"])
	}

	tc := agent.NewToolContext(agent.NewInvocation(agent.InvocationConfig{}), "call-1")
	res, err := tl.Run(context.Background(), tc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res == nil || len(res) != 0 {
		t.Errorf("result = %#v, want an empty map", res)
	}
	if a := tc.Actions(); !a.Escalate || !a.SkipSummarization {
		t.Errorf("actions = %+v, want escalate and skip summarization", a)
	}
}

func Example() {
	t := exitlooptool.New()
	tc := agent.NewToolContext(agent.NewInvocation(agent.InvocationConfig{}), "call-1")
	res, _ := t.Run(context.Background(), tc, map[string]any{})
	fmt.Println(t.Name(), len(res), tc.Actions().Escalate)
	// Output: exit_loop 0 true
}
