package exitlooptool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/exitlooptool"
)

// TestA5ExitLoopSetsEscalate: the tool escalates and skips summarization,
// and is declared as ADK declares it: no parameters, an untyped result.
func TestA5ExitLoopSetsEscalate(t *testing.T) {
	var tl tool.Function = exitlooptool.New()
	if tl.Name() != "exit_loop" || tl.Description() == "" {
		t.Errorf("name %q, description %q", tl.Name(), tl.Description())
	}
	d := tl.Declaration()
	if d == nil || d.Name != "exit_loop" || d.Description != tl.Description() {
		t.Fatalf("declaration = %+v", d)
	}
	got, _ := json.Marshal(d)
	want := `{"description":"Exits the loop.\n\n  Call this function only when you are instructed to do so.\n  ","name":"exit_loop","response":{}}`
	if string(got) != want {
		t.Errorf("declaration = %s, want %s", got, want)
	}

	tc := agent.NewToolContext(agent.NewInvocation(agent.InvocationConfig{}), "call-1")
	res, err := tl.Run(context.Background(), tc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := res["result"]; len(res) != 1 || !ok || v != nil {
		t.Errorf("result = %#v, want ADK's {\"result\": null}", res)
	}
	if a := tc.Actions(); !a.Escalate || !a.SkipSummarization {
		t.Errorf("actions = %+v, want escalate and skip summarization", a)
	}
}

func Example() {
	t := exitlooptool.New()
	tc := agent.NewToolContext(agent.NewInvocation(agent.InvocationConfig{}), "call-1")
	res, _ := t.Run(context.Background(), tc, map[string]any{})
	fmt.Println(t.Name(), res, tc.Actions().Escalate)
	// Output: exit_loop map[result:<nil>] true
}
