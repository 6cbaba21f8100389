package eval

import (
	"context"
	"errors"
	"fmt"
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
	var actual []*Invocation
	var transcript strings.Builder
	msg := sc.StartingPrompt
	for len(actual) < limit {
		inv, err := turn(genai.NewContentFromText(msg, genai.RoleUser))
		if err != nil {
			return actual, fmt.Errorf("turn %d: %w", len(actual), err)
		}
		actual = append(actual, inv)
		fmt.Fprintf(&transcript, "user: %s\nagent: %s\n", msg, Text(inv.FinalResponse))
		next, err := ask(ctx, sim, nil, fmt.Sprintf(simulatorPrompt, StopSignal, sc.ConversationPlan, transcript.String()))
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
