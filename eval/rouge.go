package eval

import (
	"context"

	"github.com/loomkit/loom/eval/internal/rouge"
)

// ResponseMatch scores the final response against the expected one by
// ROUGE-1 F-measure, computed as ADK computes it (the rouge_score
// package with its stemmer): per invocation, then the mean.
type ResponseMatch struct{}

// Score implements Scorer.
func (ResponseMatch) Score(_ context.Context, in *ScoreInput) (*Score, error) {
	if in.Expected == nil {
		return &Score{}, nil
	}
	var out Score
	for i := 0; i < len(in.Actual) && i < len(in.Expected); i++ {
		f := rouge.One(textOf(in.Actual[i].FinalResponse), textOf(in.Expected[i].FinalResponse)).F
		out.PerInvocation = append(out.PerInvocation, InvocationScore{Score: ptr(f)})
	}
	out.Overall = mean(out.PerInvocation)
	return &out, nil
}
