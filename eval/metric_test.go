package eval

import (
	"context"
	"math"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model/scripted"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func call(name string, args map[string]any) *genai.FunctionCall {
	return &genai.FunctionCall{Name: name, Args: args}
}

func TestMatchTools(t *testing.T) {
	a := call("a", map[string]any{"x": 1})
	a2 := call("a", map[string]any{"x": float64(1)}) // same value, decoded from JSON
	b := call("b", nil)
	c := call("c", map[string]any{})
	other := call("a", map[string]any{"x": 2})
	cases := []struct {
		actual, expected []*genai.FunctionCall
		exact, inOrder   bool
		anyOrder         bool
	}{
		{[]*genai.FunctionCall{a, b, c}, []*genai.FunctionCall{a2, b, c}, true, true, true},
		{[]*genai.FunctionCall{a, b, c}, []*genai.FunctionCall{a, c}, false, true, true},
		{[]*genai.FunctionCall{a, b, c}, []*genai.FunctionCall{c, a}, false, false, true},
		{[]*genai.FunctionCall{a, b}, []*genai.FunctionCall{a, b, c}, false, false, false},
		{[]*genai.FunctionCall{other, b}, []*genai.FunctionCall{a, b}, false, false, false},
		{[]*genai.FunctionCall{a, a}, []*genai.FunctionCall{a, a}, true, true, true},
		{[]*genai.FunctionCall{a}, []*genai.FunctionCall{a, a}, false, false, false},
		{nil, nil, true, true, true},
		{[]*genai.FunctionCall{a}, nil, false, true, true},
	}
	for i, tc := range cases {
		if got := matchTools(Exact, tc.actual, tc.expected); got != tc.exact {
			t.Errorf("%d: exact = %v", i, got)
		}
		if got := matchTools(InOrder, tc.actual, tc.expected); got != tc.inOrder {
			t.Errorf("%d: in order = %v", i, got)
		}
		if got := matchTools(AnyOrder, tc.actual, tc.expected); got != tc.anyOrder {
			t.Errorf("%d: any order = %v", i, got)
		}
	}
}

func inv(user, response string, calls ...*genai.FunctionCall) *Invocation {
	return &Invocation{
		UserContent:      genai.NewContentFromText(user, genai.RoleUser),
		FinalResponse:    genai.NewContentFromText(response, genai.RoleModel),
		IntermediateData: &IntermediateData{ToolUses: calls},
	}
}

// (CONFORMANCE Q2)
func TestTrajectoryAndResponseScores(t *testing.T) {
	ctx := context.Background()
	expected := []*Invocation{inv("q1", "The cat is on the mat", call("a", nil)), inv("q2", "hello world", call("a", nil), call("b", nil))}
	actual := []*Invocation{inv("q1", "The cat sat on the mat", call("a", nil)), inv("q2", "hello", call("b", nil), call("a", nil))}
	in := &ScoreInput{Actual: actual, Expected: expected}
	s, _ := Trajectory{Match: Exact}.Score(ctx, in)
	if *s.Overall != 0.5 || *s.PerInvocation[0].Score != 1 || *s.PerInvocation[1].Score != 0 {
		t.Errorf("exact trajectory: %v", *s.Overall)
	}
	s, _ = Trajectory{Match: AnyOrder}.Score(ctx, in)
	if *s.Overall != 1 {
		t.Errorf("any-order trajectory: %v", *s.Overall)
	}
	s, _ = ResponseMatch{}.Score(ctx, in)
	// (5/6 + F("hello", "hello world") = 2·1·0.5/1.5 = 2/3) / 2 = 0.75
	if !near(*s.Overall, 0.75) {
		t.Errorf("response match: %v", *s.Overall)
	}
	// A scenario case has nothing to compare with.
	s, _ = ResponseMatch{}.Score(ctx, &ScoreInput{Actual: actual})
	if s.Overall != nil || statusOf(s.Overall, 0.5) != NotEvaluated {
		t.Errorf("no expected invocations: %v", s.Overall)
	}
}

func TestJudgedMatchMajority(t *testing.T) {
	valid := scripted.Turn{Text: `{"reasoning": "same facts", "is_the_agent_response_valid": "valid"}`}
	invalid := scripted.Turn{Text: "```json\n{\"reasoning\": \"wrong city\", \"is_the_agent_response_valid\": \"invalid\"}\n```"}
	garbage := scripted.Turn{Text: "I think it is fine."}
	judge := scripted.NewSequence("judge",
		valid, invalid, valid, // invocation 1: 2 of 3 valid -> 1
		invalid, garbage, valid, // invocation 2: 1 of 2 readable valid, a tie -> 0
	)
	expected := []*Invocation{inv("weather in Paris?", "Sunny, 20°C."), inv("and Lisbon?", "Cloudy, 18°C.")}
	actual := []*Invocation{inv("weather in Paris?", "It is sunny and 20 degrees."), inv("and Lisbon?", "Rainy.")}
	reg := NewRegistry()
	sc, err := reg.Scorer(&Metric{MetricName: JudgedMatchMetric, Criterion: &Criterion{Threshold: 0.5, JudgeOptions: &JudgeOptions{NumSamples: 3}}}, &Env{Judge: judge})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sc.Score(context.Background(), &ScoreInput{Actual: actual, Expected: expected, Criterion: &Criterion{Threshold: 0.5, JudgeOptions: &JudgeOptions{NumSamples: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if *s.PerInvocation[0].Score != 1 || *s.PerInvocation[1].Score != 0 || *s.Overall != 0.5 {
		t.Errorf("scores %v %v overall %v", *s.PerInvocation[0].Score, *s.PerInvocation[1].Score, *s.Overall)
	}
	reqs := judge.Requests()
	if len(reqs) != 6 {
		t.Fatalf("judge asked %d times, want 6", len(reqs))
	}
	prompt := textOf(reqs[0].Contents[0])
	for _, want := range []string{"weather in Paris?", "It is sunny and 20 degrees.", "Sunny, 20°C."} {
		if !strings.Contains(prompt, want) {
			t.Errorf("judge prompt lacks %q:\n%s", want, prompt)
		}
	}
	// A named judge that cannot be opened is an error, not a silent pass.
	_, err = sc.Score(context.Background(), &ScoreInput{Actual: actual, Expected: expected, Criterion: &Criterion{JudgeOptions: &JudgeOptions{JudgeModel: "other"}}})
	if err == nil || !strings.Contains(err.Error(), "other") {
		t.Errorf("unknown judge: %v", err)
	}
}

func TestRubricQuality(t *testing.T) {
	answer := func(polite, short string) scripted.Turn {
		return scripted.Turn{Text: `{"rubrics": [{"rubric_id": "polite", "rationale": "says please", "verdict": "` + polite + `"}, {"rubric_id": "short", "verdict": "` + short + `"}]}`}
	}
	judge := scripted.NewSequence("judge", answer("yes", "no"), answer("yes", "yes"), answer("no", "no"))
	crit := &Criterion{Threshold: 0.5, JudgeOptions: &JudgeOptions{NumSamples: 3}, Rubrics: []*Rubric{
		{RubricID: "polite", RubricContent: &RubricContent{TextProperty: "The response is polite."}},
	}}
	c := &Case{Rubrics: []*Rubric{{RubricID: "short", RubricContent: &RubricContent{TextProperty: "The response is one sentence."}}}}
	s, err := (&RubricQuality{Env: &Env{Judge: judge}}).Score(context.Background(), &ScoreInput{Case: c, Actual: []*Invocation{inv("hi", "Hello, please ask away.")}, Criterion: crit})
	if err != nil {
		t.Fatal(err)
	}
	// polite: yes, yes, no -> 1; short: no, yes, no -> 0; mean 0.5.
	if *s.Overall != 0.5 {
		t.Errorf("overall %v", *s.Overall)
	}
	rs := s.PerInvocation[0].Details.RubricScores
	if len(rs) != 2 || rs[0].RubricID != "polite" || *rs[0].Score != 1 || rs[0].Rationale != "says please" || *rs[1].Score != 0 {
		t.Errorf("rubric scores %+v %+v", rs[0], rs[1])
	}
	prompt := textOf(judge.Requests()[0].Contents[0])
	if !strings.Contains(prompt, "The response is polite.") || !strings.Contains(prompt, "The response is one sentence.") {
		t.Errorf("prompt lacks the rubrics:\n%s", prompt)
	}
}

type lengthScorer struct{}

func (lengthScorer) Score(_ context.Context, in *ScoreInput) (*Score, error) {
	var out Score
	for _, a := range in.Actual {
		out.PerInvocation = append(out.PerInvocation, InvocationScore{Score: ptr(float64(len(textOf(a.FinalResponse))))})
	}
	out.Overall = mean(out.PerInvocation)
	return &out, nil
}

func TestCustomMetric(t *testing.T) {
	reg := NewRegistry()
	reg.Register("response_length", func(*Criterion, *Env) (Scorer, error) { return lengthScorer{}, nil })
	sc, err := reg.Scorer(&Metric{MetricName: "response_length"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := sc.Score(context.Background(), &ScoreInput{Actual: []*Invocation{inv("q", "four")}})
	if *s.Overall != 4 {
		t.Errorf("custom score %v", *s.Overall)
	}
	if _, err := reg.Scorer(&Metric{MetricName: "nope"}, nil); err == nil || !strings.Contains(err.Error(), "response_length") {
		t.Errorf("unknown metric error: %v", err)
	}
}

func TestGrounding(t *testing.T) {
	labels := func(ls ...string) scripted.Turn {
		var parts []string
		for _, l := range ls {
			parts = append(parts, `{"sentence": "s", "label": "`+l+`"}`)
		}
		return scripted.Turn{Text: `{"sentences": [` + strings.Join(parts, ",") + `]}`}
	}
	judge := scripted.NewSequence("judge",
		// invocation 1: 2/3 then 1/3 supported -> mean 0.5
		labels("supported", "supported", "unsupported", "not_applicable"),
		labels("supported", "contradictory", "disputed"),
		// invocation 2: only a greeting -> 1; an unreadable sample is skipped
		labels("not_applicable"),
		scripted.Turn{Text: "no idea"},
	)
	a := inv("weather in Paris?", "It is 20°C and sunny in Paris. Enjoy!", call("get_weather", map[string]any{"city": "Paris"}))
	a.IntermediateData.ToolResponses = []*genai.FunctionResponse{{Name: "get_weather", Response: map[string]any{"temperature_c": 20}}}
	b := inv("hi", "Hello!")
	crit := &Criterion{Threshold: 0.7, JudgeOptions: &JudgeOptions{NumSamples: 2}}
	sc, err := NewRegistry().Scorer(&Metric{MetricName: HallucinationMetric, Criterion: crit}, &Env{Judge: judge})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sc.Score(context.Background(), &ScoreInput{Actual: []*Invocation{a, b}, Criterion: crit})
	if err != nil {
		t.Fatal(err)
	}
	if *s.PerInvocation[0].Score != 0.5 || *s.PerInvocation[1].Score != 1 || *s.Overall != 0.75 {
		t.Errorf("scores %v %v overall %v", *s.PerInvocation[0].Score, *s.PerInvocation[1].Score, *s.Overall)
	}
	prompt := textOf(judge.Requests()[0].Contents[0])
	for _, want := range []string{`tool call: get_weather({"city":"Paris"})`, `tool result of get_weather: {"temperature_c":20}`, "It is 20°C and sunny in Paris. Enjoy!"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt)
		}
	}
}

// TestJudgeSamplesBounded: a metric asking the judge more than
// MaxJudgeSamples times per invocation is refused before anything runs.
func TestJudgeSamplesBounded(t *testing.T) {
	reg := NewRegistry()
	judge := scripted.NewSequence("judge")
	m := &Metric{MetricName: JudgedMatchMetric, Criterion: &Criterion{Threshold: 0.5, JudgeOptions: &JudgeOptions{NumSamples: 1_000_000_000}}}
	if _, err := reg.Scorer(m, &Env{Judge: judge}); err == nil || !strings.Contains(err.Error(), "over the limit") {
		t.Fatalf("err = %v, want the sample limit", err)
	}
	m.Criterion.JudgeOptions.NumSamples = MaxJudgeSamples
	if _, err := reg.Scorer(m, &Env{Judge: judge}); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
}
