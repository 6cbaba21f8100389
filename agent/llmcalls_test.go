package agent_test

import (
	"errors"
	"testing"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
)

// TestR7CountStartsAtPriorCalls: an invocation resumed with the calls it
// made before (InvocationConfig.LLMCalls) reaches its limit after the
// calls left.
func TestR7CountStartsAtPriorCalls(t *testing.T) {
	inv := agent.NewInvocation(agent.InvocationConfig{RunConfig: agent.RunConfig{MaxLLMCalls: 3}, LLMCalls: 2})
	if err := inv.CountLLMCall(); err != nil {
		t.Fatalf("third call: %v", err)
	}
	if err := inv.CountLLMCall(); !errors.Is(err, agent.ErrLLMCallLimit) {
		t.Fatalf("fourth call: %v, want ErrLLMCallLimit", err)
	}
	unlimited := agent.NewInvocation(agent.InvocationConfig{RunConfig: agent.RunConfig{MaxLLMCalls: -1}, LLMCalls: agent.DefaultMaxLLMCalls})
	if err := unlimited.CountLLMCall(); err != nil {
		t.Fatalf("no limit: %v", err)
	}
}

// TestR7MarkLLMCall: the mark is recorded in a copy of the event's
// metadata, and only marked events count.
func TestR7MarkLLMCall(t *testing.T) {
	meta := map[string]any{"k": "v"}
	ev := event.New("e-1", "a")
	ev.CustomMetadata = meta
	if agent.IsLLMCall(ev) {
		t.Fatal("an unmarked event counts as a model call")
	}
	agent.MarkLLMCall(ev)
	if !agent.IsLLMCall(ev) || ev.CustomMetadata["k"] != "v" || len(meta) != 1 {
		t.Fatalf("marked metadata %v, original %v", ev.CustomMetadata, meta)
	}
	other := event.New("e-1", "a")
	other.CustomMetadata = map[string]any{agent.MetadataLLMCall: "yes"}
	if agent.IsLLMCall(other) {
		t.Fatal("a non-boolean value counts as a mark")
	}
}
