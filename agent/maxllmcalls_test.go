package agent_test

import (
	"errors"
	"testing"

	"github.com/loomkit/loom/agent"
)

// calls counts the model calls an invocation configured with n allows
// before ErrLLMCallLimit, up to max (max+1 means no limit was met).
func calls(t *testing.T, n, max int) int {
	t.Helper()
	inv := agent.NewInvocation(agent.InvocationConfig{RunConfig: agent.RunConfig{MaxLLMCalls: n}})
	for i := 1; i <= max; i++ {
		if err := inv.CountLLMCall(); err != nil {
			if !errors.Is(err, agent.ErrLLMCallLimit) {
				t.Fatalf("call %d: %v", i, err)
			}
			return i - 1
		}
	}
	return max + 1
}

// TestR12MaxLLMCallsFromEnvironment: with RunConfig.MaxLLMCalls zero, the
// limit is ADK_MAX_LLM_CALLS (zero or negative there: no limit; unset or
// not an integer: the default of 500); a limit set in the run config wins
// over the environment.
func TestR12MaxLLMCallsFromEnvironment(t *testing.T) {
	cases := []struct {
		env        string
		set        bool
		configured int
		want       int
	}{
		{set: false, want: agent.DefaultMaxLLMCalls},
		{env: "3", set: true, want: 3},
		{env: " 2 ", set: true, want: 2},
		{env: "3", set: true, configured: 5, want: 5},
		{env: "3", set: true, configured: -1, want: 601},
		{env: "0", set: true, want: 601},
		{env: "-4", set: true, want: 601},
		{env: "many", set: true, want: agent.DefaultMaxLLMCalls},
		{env: "", set: true, want: agent.DefaultMaxLLMCalls},
	}
	for _, c := range cases {
		if c.set {
			t.Setenv(agent.MaxLLMCallsEnv, c.env)
		} else {
			t.Setenv(agent.MaxLLMCallsEnv, "")
		}
		if got := calls(t, c.configured, 600); got != c.want {
			t.Errorf("%s=%q, configured %d: %d calls allowed, want %d", agent.MaxLLMCallsEnv, c.env, c.configured, got, c.want)
		}
	}
	// A changed value takes effect at the next invocation.
	t.Setenv(agent.MaxLLMCallsEnv, "1")
	if got := calls(t, 0, 10); got != 1 {
		t.Errorf("after changing the value to 1: %d calls allowed", got)
	}
}

// BenchmarkNewInvocationLimit is the cost of starting an invocation whose
// limit comes from the run config (Configured), from the default with
// ADK_MAX_LLM_CALLS unset (Unset) and from the variable (FromEnvironment).
func BenchmarkNewInvocationLimit(b *testing.B) {
	for _, c := range []struct {
		name       string
		env        string
		set        bool
		configured int
	}{{name: "Configured", configured: 100}, {name: "Unset"}, {name: "FromEnvironment", env: "40", set: true}} {
		b.Run(c.name, func(b *testing.B) {
			if c.set {
				b.Setenv(agent.MaxLLMCallsEnv, c.env)
			} else {
				b.Setenv(agent.MaxLLMCallsEnv, "")
			}
			cfg := agent.InvocationConfig{ID: "i", RunConfig: agent.RunConfig{MaxLLMCalls: c.configured}}
			b.ReportAllocs()
			for b.Loop() {
				if err := agent.NewInvocation(cfg).CountLLMCall(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
