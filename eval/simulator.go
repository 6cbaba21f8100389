package eval

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"google.golang.org/genai"
)

// StopSignal is what the simulated user says when the conversation is
// over, as in ADK.
const StopSignal = "</finished>"

// defaultMaxInvocations bounds a simulated conversation.
const defaultMaxInvocations = 20

const simulatorPrompt = `You are playing the user in a conversation with an AI agent. Follow
the plan below. Write only the user's next message, in the user's voice,
short and natural. When the plan is complete, or the agent cannot help any
further, answer with exactly %s and nothing else.

Plan:
<plan>
%s
</plan>

The conversation so far:
<conversation>
%s</conversation>
`

// simulate plays a scenario: the starting prompt, then the simulator's
// messages until it says the stop signal or the bound is reached.
func simulate(ctx context.Context, sc *Scenario, opts *Options, turn func(*genai.Content) (*Invocation, error)) ([]*Invocation, error) {
	sim := opts.UserSimulator
	if sim == nil && opts.Simulator != nil && opts.Simulator.Model != "" && opts.Models != nil {
		var err error
		if sim, err = opts.Models(ctx, opts.Simulator.Model); err != nil {
			return nil, fmt.Errorf("user simulator model %s: %w", opts.Simulator.Model, err)
		}
	}
	if sim == nil {
		sim = opts.Judge
	}
	if sim == nil {
		return nil, errors.New("a conversation scenario needs a user simulator model")
	}
	limit := defaultMaxInvocations
	if opts.Simulator != nil && opts.Simulator.MaxAllowedInvocations > 0 {
		limit = opts.Simulator.MaxAllowedInvocations
	}
	var cfg *genai.GenerateContentConfig
	if opts.Simulator != nil {
		var err error
		if cfg, err = genConfig(opts.Simulator.ModelConfiguration); err != nil {
			return nil, fmt.Errorf("user_simulator_config.model_configuration: %w", err)
		}
	}
	var actual []*Invocation
	var transcript strings.Builder
	msg := sc.StartingPrompt
	for len(actual) < limit {
		inv, err := turn(genai.NewContentFromText(msg, genai.RoleUser))
		if err != nil {
			return actual, fmt.Errorf("turn %d: %w", len(actual), err)
		}
		actual = append(actual, inv)
		fmt.Fprintf(&transcript, "user: %s\nagent: %s\n", msg, textOf(inv.FinalResponse))
		next, err := askWith(ctx, sim, cfg, simulatorInstructions(sc, opts.Simulator, transcript.String()))
		if err != nil {
			return actual, fmt.Errorf("user simulator: %w", err)
		}
		next = strings.TrimSpace(next)
		if next == "" || strings.Contains(next, StopSignal) {
			break
		}
		msg = next
	}
	return actual, nil
}

// placeholder matches a Jinja-style placeholder, {{ name }}.
func placeholder(name string) *regexp.Regexp {
	return regexp.MustCompile(`\{\{\s*` + name + `\s*\}\}`)
}

// simulatorInstructions is the prompt of the simulated user: the config's
// custom instructions with their placeholders filled, or Loom's own.
func simulatorInstructions(sc *Scenario, cfg *SimulatorConfig, history string) string {
	if cfg == nil || cfg.CustomInstructions == "" {
		return fmt.Sprintf(simulatorPrompt, StopSignal, sc.ConversationPlan, history)
	}
	persona := ""
	if raw, ok := sc.Extra["user_persona"]; ok {
		persona = string(raw)
	}
	out := cfg.CustomInstructions
	for name, value := range map[string]string{"stop_signal": StopSignal, "conversation_plan": sc.ConversationPlan, "conversation_history": history, "persona": persona} {
		out = placeholder(name).ReplaceAllLiteralString(out, value)
	}
	return out
}
