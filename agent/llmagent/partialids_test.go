package llmagent_test

import (
	"context"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/tool"
)

// TestStreamedChunksShareTheCallID: as in ADK, the partial events of one
// streamed model call and the complete event that ends it carry one id;
// the next model call gets another, and the tool's response its own.
func TestStreamedChunksShareTheCallID(t *testing.T) {
	m := scripted.NewSequence("m",
		scripted.Turn{Calls: []*genai.FunctionCall{{Name: "echo", Args: map[string]any{"x": 1}}}},
		scripted.Turn{Text: "one two three", Chunks: []string{"one ", "two ", "three"}},
	)
	echo := fnTool{name: "echo", run: func(_ context.Context, _ tool.Context, args map[string]any) (map[string]any, error) { return args, nil }}
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, Tools: []tool.Tool{echo}}), nil, nil)
	evs := f.run(t, "hi", &runner.RunOptions{Streaming: true})
	var partialIDs []string
	var final []string
	for _, e := range evs {
		if e.Partial {
			partialIDs = append(partialIDs, e.ID)
		} else {
			final = append(final, e.ID)
		}
	}
	if len(partialIDs) != 3 || partialIDs[0] != partialIDs[1] || partialIDs[1] != partialIDs[2] {
		t.Fatalf("partial ids %q, want three equal ones", partialIDs)
	}
	// call, tool response, text
	if len(final) != 3 || final[2] != partialIDs[0] || final[0] == final[2] || final[1] == final[0] || final[1] == final[2] {
		t.Errorf("complete event ids %q (partials %s): want the text's to be the partials' id and the others distinct", final, partialIDs[0])
	}
}
