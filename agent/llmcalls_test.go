package agent_test

import (
	"errors"
	"testing"

	"github.com/loomkit/loom/agent"
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
