package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/internal/evaljson"
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

// genConfig reads a genai generation config given as JSON, in either key
// style; nil when there is none.
func genConfig(raw json.RawMessage) (*genai.GenerateContentConfig, error) {
	if len(raw) == 0 || evaljson.IsNull(raw) {
		return nil, nil
	}
	if norm, err := event.Normalize(raw); err == nil {
		raw = norm
	}
	var cfg genai.GenerateContentConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, evaljson.Simplify(err)
	}
	return &cfg, nil
}

// judgeConfig reads a criterion's judge_model_config; nil when it has none.
func judgeConfig(c *Criterion) (*genai.GenerateContentConfig, error) {
	if c == nil || c.JudgeOptions == nil {
		return nil, nil
	}
	cfg, err := genConfig(c.JudgeOptions.JudgeModelConfig)
	if err != nil {
		return nil, &FieldError{Path: "judge_model_options.judge_model_config", Err: err}
	}
	return cfg, nil
}

// ask sends prompt to the judge, with the criterion's judge model config,
// and returns its text answer.
func ask(ctx context.Context, judge model.LLM, c *Criterion, prompt string) (string, error) {
	cfg, err := judgeConfig(c)
	if err != nil {
		return "", err
	}
	return askWith(ctx, judge, cfg, prompt)
}

// askWith sends prompt to a model with a generation config and returns its
// text answer.
func askWith(ctx context.Context, judge model.LLM, cfg *genai.GenerateContentConfig, prompt string) (string, error) {
	req := &model.Request{
		Model:    judge.Name(),
		Contents: []*genai.Content{genai.NewContentFromText(prompt, genai.RoleUser)},
		Config:   cfg,
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
		b.WriteString(textOf(resp.Content))
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
		prompt := fmt.Sprintf(matchPrompt, textOf(in.Expected[i].UserContent), textOf(in.Actual[i].FinalResponse), textOf(in.Expected[i].FinalResponse))
		var votes []bool
		for range samples(in.Criterion) {
			text, err := ask(ctx, judge, in.Criterion, prompt)
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

// RubricSubject is what a rubric metric has its judge look at.
type RubricSubject int

// The subjects of rubric metrics.
const (
	// RubricFinalResponse judges each invocation's final response
	// (rubric_based_final_response_quality_v1). Rubrics of a case or
	// invocation apply when their type is empty or FINAL_RESPONSE_QUALITY.
	RubricFinalResponse RubricSubject = iota
	// RubricToolUse judges each invocation's tool calls and their results
	// (rubric_based_tool_use_quality_v1); rubric type TOOL_USE_QUALITY.
	RubricToolUse
	// RubricConversation judges the whole conversation at once, every turn
	// with its tool calls (rubric_based_multi_turn_trajectory_quality_v1);
	// rubric type TRAJECTORY_QUALITY. It scores the case, not invocations.
	RubricConversation
)

// rubricType is the rubric type of a subject, as ADK names it.
var rubricType = map[RubricSubject]string{
	RubricFinalResponse: "FINAL_RESPONSE_QUALITY",
	RubricToolUse:       "TOOL_USE_QUALITY",
	RubricConversation:  "TRAJECTORY_QUALITY",
}

// RubricQuality asks a judge model whether what an agent did meets the
// rubrics of the criterion, the case and the invocation: its final
// responses, its tool use or its whole conversation, as Subject says.
// Each rubric's verdict is the majority over NumSamples answers; a judged
// unit scores the share of rubrics met, and the overall score is the mean
// over the units. The details give each rubric's mean score.
type RubricQuality struct {
	Env     *Env
	Subject RubricSubject
}

const rubricPrompt = `You are an impartial grader. Check %s against each
property below. For each property, say "yes" if it holds and "no" if it
does not.

%s
Properties:
%s
Answer with JSON only, in this form:
{"rubrics": [{"rubric_id": "<id>", "rationale": "<one sentence>", "verdict": "yes" or "no"}]}
`

// rubricMaterial is what the judge is shown of one unit, and how the
// prompt names it.
func (q *RubricQuality) rubricMaterial(in *ScoreInput, inv *Invocation) (string, string) {
	switch q.Subject {
	case RubricToolUse:
		return "the agent's use of tools in answering the user", fmt.Sprintf("User prompt:\n<prompt>\n%s\n</prompt>\n\nTool calls and results, in order:\n<tools>\n%s</tools>\n", textOf(inv.UserContent), toolLog(inv))
	case RubricConversation:
		return "the agent's conduct over the whole conversation", fmt.Sprintf("%sConversation:\n<conversation>\n%s</conversation>\n", goalOf(in), transcript(in.Actual, true))
	}
	response := textOf(inv.FinalResponse)
	if in.Criterion != nil && in.Criterion.IncludeIntermediateResponsesInFinal && inv.IntermediateData != nil {
		var b strings.Builder
		for _, r := range inv.IntermediateData.IntermediateResponses {
			fmt.Fprintf(&b, "%s\n", textOf(&genai.Content{Parts: r.Parts}))
		}
		response = b.String() + response
	}
	return "the agent's final response to the user", fmt.Sprintf("User prompt:\n<prompt>\n%s\n</prompt>\n\nAgent response:\n<response>\n%s\n</response>\n", textOf(inv.UserContent), response)
}

// Score implements Scorer.
func (q *RubricQuality) Score(ctx context.Context, in *ScoreInput) (*Score, error) {
	judge, err := q.Env.judge(ctx, in.Criterion)
	if err != nil {
		return nil, err
	}
	units := in.Actual
	if q.Subject == RubricConversation {
		if len(in.Actual) == 0 {
			return &Score{}, nil
		}
		units = in.Actual[len(in.Actual)-1:]
	}
	var out Score
	var perUnit []InvocationScore
	sums := map[string]float64{}
	counts := map[string]int{}
	var order []string
	for _, inv := range units {
		rubrics := q.rubricsFor(in, inv)
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
		what, material := q.rubricMaterial(in, inv)
		prompt := fmt.Sprintf(rubricPrompt, what, material, list.String())
		votes := map[string][]bool{}
		rationale := map[string]string{}
		for range samples(in.Criterion) {
			text, err := ask(ctx, judge, in.Criterion, prompt)
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
		perUnit = append(perUnit, InvocationScore{Score: mean(scored), Details: details})
	}
	out.Overall = mean(perUnit)
	if q.Subject != RubricConversation {
		out.PerInvocation = perUnit
	}
	if len(order) > 0 {
		out.Details = &ResultDetails{}
		for _, id := range order {
			out.Details.RubricScores = append(out.Details.RubricScores, &RubricScore{RubricID: id, Score: ptr(sums[id] / float64(counts[id]))})
		}
	}
	return &out, nil
}

// rubricsFor gathers the rubrics that apply to a judged unit: the
// criterion's, and those of the case and the invocation (its own, and the
// expected invocation's at the same position) whose type is empty or the
// subject's.
func (q *RubricQuality) rubricsFor(in *ScoreInput, actual *Invocation) []*Rubric {
	var out []*Rubric
	if in.Criterion != nil {
		out = append(out, in.Criterion.Rubrics...)
	}
	want := rubricType[q.Subject]
	add := func(rs []*Rubric) {
		for _, r := range rs {
			if r != nil && (r.Type == "" || strings.EqualFold(r.Type, want)) {
				out = append(out, r)
			}
		}
	}
	if in.Case != nil {
		add(in.Case.Rubrics)
	}
	add(actual.Rubrics)
	for i, a := range in.Actual {
		if a == actual && i < len(in.Expected) {
			add(in.Expected[i].Rubrics)
		}
	}
	return out
}
