package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
)

// defaultSamples is how many times a judge is asked per invocation when
// the criterion does not say, as in ADK.
const defaultSamples = 5

// MaxJudgeSamples bounds JudgeOptions.NumSamples: a metric asking a judge
// more times per invocation is refused, so that a request cannot make a
// run call the judge without end.
const MaxJudgeSamples = 25

func samples(c *Criterion) int {
	if c != nil && c.JudgeOptions != nil && c.JudgeOptions.NumSamples > 0 {
		return c.JudgeOptions.NumSamples
	}
	return defaultSamples
}

// ask sends prompt to the judge and returns its text answer.
func ask(ctx context.Context, judge model.LLM, prompt string) (string, error) {
	req := &model.Request{
		Model:    judge.Name(),
		Contents: []*genai.Content{genai.NewContentFromText(prompt, genai.RoleUser)},
	}
	var b strings.Builder
	for resp, err := range judge.Generate(ctx, req, false) {
		if err != nil {
			return "", err
		}
		if resp.ErrorCode != "" || resp.ErrorMessage != "" {
			return "", fmt.Errorf("judge error %s: %s", resp.ErrorCode, resp.ErrorMessage)
		}
		if resp.Partial {
			continue
		}
		b.WriteString(Text(resp.Content))
	}
	return b.String(), nil
}

var fenced = regexp.MustCompile("(?s)```(?:json)?\\s*\\n(.*?)\\n\\s*```")

// parseJSONAnswer reads a judge's JSON answer, bare or in a fenced block.
func parseJSONAnswer(text string, v any) error {
	text = strings.TrimSpace(text)
	if m := fenced.FindStringSubmatch(text); m != nil {
		text = m[1]
	} else if i, j := strings.Index(text, "{"), strings.LastIndex(text, "}"); i >= 0 && j > i {
		text = text[i : j+1]
	}
	return json.Unmarshal([]byte(text), v)
}

// majority combines verdicts: true when more than half of the parsed ones
// are true; nil when none parsed.
func majority(votes []bool) *float64 {
	if len(votes) == 0 {
		return nil
	}
	yes := 0
	for _, v := range votes {
		if v {
			yes++
		}
	}
	if 2*yes > len(votes) {
		return ptr(1)
	}
	return ptr(0)
}

// JudgedMatch asks a judge model whether each final response is a valid
// answer given the expected one (ADK's final_response_match_v2). The judge
// is asked NumSamples times per invocation; the majority verdict scores 1
// (valid) or 0, a tie counting as invalid. The overall score is the share
// of valid invocations.
type JudgedMatch struct {
	Env *Env
}

const matchPrompt = `You are an impartial grader. Decide whether the agent's response to
the user's prompt is a valid answer, taking the reference response as the
ground truth. The agent's response is valid if it gives the same essential
information as the reference, even if phrased differently or with extra
helpful detail; it is invalid if it contradicts the reference, misses its
key facts, or does not answer.

User prompt:
<prompt>
%s
</prompt>

Agent response:
<response>
%s
</response>

Reference response:
<reference>
%s
</reference>

Answer with JSON only, in this form:
{"reasoning": "<one or two sentences>", "is_the_agent_response_valid": "valid" or "invalid"}
`

// Score implements Scorer.
func (j *JudgedMatch) Score(ctx context.Context, in *ScoreInput) (*Score, error) {
	if in.Expected == nil {
		return &Score{}, nil
	}
	judge, err := j.Env.judge(ctx, in.Criterion)
	if err != nil {
		return nil, err
	}
	var out Score
	for i := 0; i < len(in.Actual) && i < len(in.Expected); i++ {
		prompt := fmt.Sprintf(matchPrompt, Text(in.Expected[i].UserContent), Text(in.Actual[i].FinalResponse), Text(in.Expected[i].FinalResponse))
		var votes []bool
		for range samples(in.Criterion) {
			text, err := ask(ctx, judge, prompt)
			if err != nil {
				return nil, fmt.Errorf("judge: %w", err)
			}
			var v struct {
				Valid string `json:"is_the_agent_response_valid"`
			}
			if parseJSONAnswer(text, &v) != nil || v.Valid == "" {
				continue // an unreadable verdict does not vote
			}
			votes = append(votes, strings.EqualFold(strings.TrimSpace(v.Valid), "valid"))
		}
		out.PerInvocation = append(out.PerInvocation, InvocationScore{Score: majority(votes)})
	}
	out.Overall = mean(out.PerInvocation)
	return &out, nil
}

// RubricQuality asks a judge model whether each final response meets the
// rubrics of the criterion, the case and the invocation (ADK's
// rubric_based_final_response_quality_v1). Each rubric's verdict is the
// majority over NumSamples answers; an invocation scores the share of
// rubrics met, and the overall score is the mean over invocations. The
// details give each rubric's mean score.
type RubricQuality struct {
	Env *Env
}

const rubricPrompt = `You are an impartial grader. Check the agent's final response to the
user against each property below. For each property, say "yes" if the
response has it and "no" if it does not.

User prompt:
<prompt>
%s
</prompt>

Agent response:
<response>
%s
</response>

Properties:
%s
Answer with JSON only, in this form:
{"rubrics": [{"rubric_id": "<id>", "rationale": "<one sentence>", "verdict": "yes" or "no"}]}
`

// Score implements Scorer.
func (q *RubricQuality) Score(ctx context.Context, in *ScoreInput) (*Score, error) {
	judge, err := q.Env.judge(ctx, in.Criterion)
	if err != nil {
		return nil, err
	}
	var out Score
	sums := map[string]float64{}
	counts := map[string]int{}
	var order []string
	for _, inv := range in.Actual {
		rubrics := rubricsFor(in, inv)
		if len(rubrics) == 0 {
			return nil, fmt.Errorf("no rubrics: give them in the criterion, the case or the invocation")
		}
		var list strings.Builder
		for _, r := range rubrics {
			text := ""
			if r.RubricContent != nil {
				text = r.RubricContent.TextProperty
			}
			fmt.Fprintf(&list, "- rubric_id %q: %s\n", r.RubricID, text)
		}
		prompt := fmt.Sprintf(rubricPrompt, Text(inv.UserContent), Text(inv.FinalResponse), list.String())
		votes := map[string][]bool{}
		rationale := map[string]string{}
		for range samples(in.Criterion) {
			text, err := ask(ctx, judge, prompt)
			if err != nil {
				return nil, fmt.Errorf("judge: %w", err)
			}
			var v struct {
				Rubrics []struct {
					ID        string `json:"rubric_id"`
					Rationale string `json:"rationale"`
					Verdict   string `json:"verdict"`
				} `json:"rubrics"`
			}
			if parseJSONAnswer(text, &v) != nil {
				continue
			}
			for _, r := range v.Rubrics {
				verdict := strings.ToLower(strings.TrimSpace(r.Verdict))
				if verdict != "yes" && verdict != "no" {
					continue
				}
				votes[r.ID] = append(votes[r.ID], verdict == "yes")
				if rationale[r.ID] == "" {
					rationale[r.ID] = r.Rationale
				}
			}
		}
		details := &ResultDetails{}
		var scored []InvocationScore
		for _, r := range rubrics {
			s := majority(votes[r.RubricID])
			details.RubricScores = append(details.RubricScores, &RubricScore{RubricID: r.RubricID, Rationale: rationale[r.RubricID], Score: s})
			scored = append(scored, InvocationScore{Score: s})
			if s != nil {
				if counts[r.RubricID] == 0 && sums[r.RubricID] == 0 {
					order = append(order, r.RubricID)
				}
				sums[r.RubricID] += *s
				counts[r.RubricID]++
			}
		}
		out.PerInvocation = append(out.PerInvocation, InvocationScore{Score: mean(scored), Details: details})
	}
	out.Overall = mean(out.PerInvocation)
	if len(order) > 0 {
		out.Details = &ResultDetails{}
		for _, id := range order {
			out.Details.RubricScores = append(out.Details.RubricScores, &RubricScore{RubricID: id, Score: ptr(sums[id] / float64(counts[id]))})
		}
	}
	return &out, nil
}

// rubricsFor gathers the rubrics that apply to an invocation: the
// criterion's, the case's and the invocation's own (from the expected
// invocation at the same position when there is one).
func rubricsFor(in *ScoreInput, actual *Invocation) []*Rubric {
	var out []*Rubric
	if in.Criterion != nil {
		out = append(out, in.Criterion.Rubrics...)
	}
	if in.Case != nil {
		out = append(out, in.Case.Rubrics...)
	}
	out = append(out, actual.Rubrics...)
	for i, a := range in.Actual {
		if a == actual && i < len(in.Expected) {
			out = append(out, in.Expected[i].Rubrics...)
		}
	}
	return out
}
