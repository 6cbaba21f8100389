package reflectretry

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/tool"
)

type nopTool struct{}

func (nopTool) Name() string                            { return "t" }
func (nopTool) Description() string                     { return "" }
func (nopTool) Declaration() *genai.FunctionDeclaration { return &genai.FunctionDeclaration{Name: "t"} }

// TestCountersDroppedWhenInvocationEnds: an invocation's counters are gone
// once it ends, so the plugin's memory does not grow with invocations.
func TestCountersDroppedWhenInvocationEnds(t *testing.T) {
	r := &retrier{cfg: Config{MaxRetries: 3}, counts: map[string]map[string]int{}}
	ctx := context.Background()
	for _, id := range []string{"i1", "i2", "i3"} {
		inv := agent.NewInvocation(agent.InvocationConfig{ID: id})
		if res, _ := r.onError(ctx, agent.NewToolContext(inv, "call"), nopTool{}, nil, errors.New("boom")); res == nil {
			t.Fatal("no guidance")
		}
		if len(r.counts) != 1 {
			t.Fatalf("%d scopes counted during invocation %s", len(r.counts), id)
		}
		r.forget(inv.ID())
	}
	if n := len(r.counts); n != 0 {
		t.Fatalf("%d scopes still counted after their invocations ended", n)
	}
}

func (nopTool) Run(context.Context, tool.Context, map[string]any) (map[string]any, error) {
	return nil, nil
}
