package eval

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/genai"
)

// HallucinationMetric is ADK's name for the groundedness metric.
const HallucinationMetric = "hallucinations_v1"

// Grounding asks a judge model whether each sentence of a final response is
// supported by what the agent had: the user's message and the invocation's
// tool calls, tool results and intermediate responses (ADK's
// hallucinations_v1). The judge labels every sentence supported,
// unsupported, contradictory, disputed or not_applicable; a sample scores
// the share of supported sentences among the labelled others (1 when every
// sentence is not_applicable). An invocation scores the mean over its
// NumSamples samples, and the overall score is the mean over invocations.
// It needs no expected invocations, so it also scores scenario cases. With
// the criterion's EvaluateIntermediateNLResponses the intermediate
// responses are judged with the final one rather than given as context.
type Grounding struct {
	Env *Env
}

const groundingPrompt = `You check an AI agent's answer for claims that its context does not
support. Split the answer into sentences. Label each one:
- "supported": the context supports it;
- "unsupported": the context does not support it;
- "contradictory": the context contradicts it;
- "disputed": the context both supports and contradicts it;
- "not_applicable": it makes no factual claim (a greeting, a question, an
  offer of help).

Context (the user's message, the agent's tool calls and their results, and
earlier responses):
<context>
%s</context>

Answer:
<answer>
%s
</answer>

Answer with JSON only, in this form:
{"sentences": [{"sentence": "<text>", "label": "<label>", "rationale": "<one sentence>"}]}
`

// Score implements Scorer.
func (g *Grounding) Score(ctx context.Context, in *ScoreInput) (*Score, error) {
	judge, err := g.Env.judge(ctx, in.Criterion)
	if err != nil {
		return nil, err
	}
	var out Score
	for _, inv := range in.Actual {
		answer := textOf(inv.FinalResponse)
		judgeIntermediate := in.Criterion != nil && in.Criterion.EvaluateIntermediateNLResponses
		if judgeIntermediate && inv.IntermediateData != nil {
			var b strings.Builder
			for _, r := range inv.IntermediateData.IntermediateResponses {
				if t := textOf(&genai.Content{Parts: r.Parts}); t != "" {
					b.WriteString(t + "\n")
				}
			}
			answer = b.String() + answer
		}
		if strings.TrimSpace(answer) == "" {
			out.PerInvocation = append(out.PerInvocation, InvocationScore{})
			continue
		}
		prompt := fmt.Sprintf(groundingPrompt, groundingContext(inv, !judgeIntermediate), answer)
		var scores []InvocationScore
		for range samples(in.Criterion) {
			text, err := ask(ctx, judge, in.Criterion, prompt)
			if err != nil {
				return nil, fmt.Errorf("judge: %w", err)
			}
			var v struct {
				Sentences []struct {
					Label string `json:"label"`
				} `json:"sentences"`
			}
			if parseJSONAnswer(text, &v) != nil || len(v.Sentences) == 0 {
				continue
			}
			supported, counted := 0, 0
			for _, s := range v.Sentences {
				switch strings.ToLower(strings.TrimSpace(s.Label)) {
				case "supported":
					supported++
					counted++
				case "unsupported", "contradictory", "disputed":
					counted++
				}
			}
			s := 1.0
			if counted > 0 {
				s = float64(supported) / float64(counted)
			}
			scores = append(scores, InvocationScore{Score: ptr(s)})
		}
		out.PerInvocation = append(out.PerInvocation, InvocationScore{Score: mean(scores)})
	}
	out.Overall = mean(out.PerInvocation)
	return &out, nil
}

// groundingContext writes what an agent had when it answered; the
// intermediate responses too when responses is set (when they are not
// judged themselves).
func groundingContext(inv *Invocation, responses bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "user: %s\n", textOf(inv.UserContent))
	if d := inv.IntermediateData; d != nil {
		writeTools(&b, d, "tool call: ", "tool result of ")
		for _, r := range d.IntermediateResponses {
			if responses {
				fmt.Fprintf(&b, "%s: %s\n", r.Author, textOf(&genai.Content{Parts: r.Parts}))
			}
		}
	}
	return b.String()
}
