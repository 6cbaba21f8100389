package eval

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model/scripted"
)

func verdict(v string) scripted.Turn {
	return scripted.Turn{Text: `{"rationale": "because", "verdict": "` + v + `"}`}
}

func promptOf(t *testing.T, m *scripted.Model, i int) string {
	t.Helper()
	reqs := m.Requests()
	if i >= len(reqs) {
		t.Fatalf("judge asked %d times, want more than %d", len(reqs), i)
	}
	return textOf(reqs[i].Contents[0])
}

// TestToolUseRubrics checks rubric_based_tool_use_quality_v1: the judge
// sees each invocation's tool calls and results, the criterion's rubrics
// and the case's rubrics of type TOOL_USE_QUALITY (not those of another
// type), and each invocation scores the share of rubrics met.
func TestToolUseRubrics(t *testing.T) {
	answer := func(first, second string) scripted.Turn {
		return scripted.Turn{Text: `{"rubrics": [{"rubric_id": "lookup_first", "verdict": "` + first + `"}, {"rubric_id": "ids", "verdict": "` + second + `"}]}`}
	}
	judge := scripted.NewSequence("judge", answer("yes", "yes"), answer("yes", "no"))
	crit := &Criterion{Threshold: 1, JudgeOptions: &JudgeOptions{NumSamples: 1}, Rubrics: []*Rubric{
		{RubricID: "lookup_first", RubricContent: &RubricContent{TextProperty: "The order is looked up before it is changed."}},
	}}
	c := &Case{Rubrics: []*Rubric{
		{RubricID: "ids", RubricContent: &RubricContent{TextProperty: "Order ids come from the user."}, Type: "TOOL_USE_QUALITY"},
		{RubricID: "tone", RubricContent: &RubricContent{TextProperty: "The reply is friendly."}, Type: "FINAL_RESPONSE_QUALITY"},
	}}
	first := inv("cancel order 7", "Cancelled.", call("get_order", map[string]any{"id": 7}), call("cancel_order", map[string]any{"id": 7}))
	first.IntermediateData.ToolResponses = []*genai.FunctionResponse{{Name: "get_order", Response: map[string]any{"status": "open"}}}
	second := inv("and order 8", "Cancelled.", call("cancel_order", map[string]any{"id": 9}))
	sc, err := NewRegistry().Scorer(&Metric{MetricName: ToolUseRubricMetric, Criterion: crit}, &Env{Judge: judge})
	if err != nil {
		t.Fatal(err)
	}
	s, err := sc.Score(context.Background(), &ScoreInput{Case: c, Actual: []*Invocation{first, second}, Criterion: crit})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.PerInvocation) != 2 || *s.PerInvocation[0].Score != 1 || *s.PerInvocation[1].Score != 0.5 || *s.Overall != 0.75 {
		t.Errorf("scores %v %v overall %v", *s.PerInvocation[0].Score, *s.PerInvocation[1].Score, *s.Overall)
	}
	p := promptOf(t, judge, 0)
	for _, want := range []string{`call get_order({"id":7})`, `result of get_order: {"status":"open"}`, "Order ids come from the user.", "looked up before"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "friendly") {
		t.Errorf("a final response rubric reached the tool use judge:\n%s", p)
	}
}

// TestFinalResponseRubricsWithIntermediate checks that
// include_intermediate_responses_in_final shows the judge the intermediate
// responses with the final one, and that without it they are left out.
func TestFinalResponseRubricsWithIntermediate(t *testing.T) {
	for _, include := range []bool{false, true} {
		judge := scripted.NewSequence("judge", scripted.Turn{Text: `{"rubrics": [{"rubric_id": "r", "verdict": "yes"}]}`})
		crit := &Criterion{Threshold: 1, IncludeIntermediateResponsesInFinal: include, JudgeOptions: &JudgeOptions{NumSamples: 1},
			Rubrics: []*Rubric{{RubricID: "r", RubricContent: &RubricContent{TextProperty: "Helpful."}}}}
		a := inv("plan a trip", "Booked.")
		a.IntermediateData.IntermediateResponses = []IntermediateResponse{{Author: "planner", Parts: []*genai.Part{genai.NewPartFromText("Searching flights to Oslo.")}}}
		if _, err := (&RubricQuality{Env: &Env{Judge: judge}}).Score(context.Background(), &ScoreInput{Actual: []*Invocation{a}, Criterion: crit}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(promptOf(t, judge, 0), "Searching flights to Oslo."); got != include {
			t.Errorf("include=%v: intermediate response in prompt = %v", include, got)
		}
	}
}

// TestConversationRubrics checks rubric_based_multi_turn_trajectory_quality_v1:
// one judgement of the whole conversation, scored for the case only.
func TestConversationRubrics(t *testing.T) {
	judge := scripted.NewSequence("judge", scripted.Turn{Text: `{"rubrics": [{"rubric_id": "asks", "verdict": "yes"}, {"rubric_id": "tools", "verdict": "no"}]}`})
	crit := &Criterion{Threshold: 0.5, JudgeOptions: &JudgeOptions{NumSamples: 1}, Rubrics: []*Rubric{
		{RubricID: "asks", RubricContent: &RubricContent{TextProperty: "The agent asks for the date before booking."}},
	}}
	c := &Case{Rubrics: []*Rubric{{RubricID: "tools", RubricContent: &RubricContent{TextProperty: "No tool is called twice."}, Type: "TRAJECTORY_QUALITY"}}}
	actual := []*Invocation{inv("book a table", "For which date?"), inv("friday", "Booked for Friday.", call("book", map[string]any{"day": "fri"}))}
	s, err := (&RubricQuality{Env: &Env{Judge: judge}, Subject: RubricConversation}).Score(context.Background(), &ScoreInput{Case: c, Actual: actual, Criterion: crit})
	if err != nil {
		t.Fatal(err)
	}
	if len(judge.Requests()) != 1 || s.PerInvocation != nil || *s.Overall != 0.5 {
		t.Errorf("asked %d times, per invocation %v, overall %v", len(judge.Requests()), s.PerInvocation, s.Overall)
	}
	p := promptOf(t, judge, 0)
	for _, want := range []string{"user: book a table", "agent: For which date?", "user: friday", `call book({"day":"fri"})`, "No tool is called twice."} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
}

// TestConversationJudges checks the multi-turn metrics: one majority
// verdict over the whole conversation, each metric asking its own question,
// and a scenario's plan shown as the user's goal.
func TestConversationJudges(t *testing.T) {
	c := &Case{ConversationScenario: &Scenario{StartingPrompt: "hi", ConversationPlan: "Get a refund for order 12."}}
	actual := []*Invocation{inv("hi", "Hello!"), inv("refund order 12", "Refunded.", call("refund", map[string]any{"order": 12}))}
	for name, want := range map[string]float64{TaskSuccessMetric: 1, MultiTurnTrajectoryMetric: 0, MultiTurnToolUseMetric: 1} {
		votes := map[string][]scripted.Turn{
			TaskSuccessMetric:         {verdict("yes"), verdict("no"), verdict("yes")},
			MultiTurnTrajectoryMetric: {verdict("no"), verdict("yes"), verdict("no")},
			MultiTurnToolUseMetric:    {verdict("yes"), {Text: "unreadable"}, verdict("yes")},
		}[name]
		judge := scripted.NewSequence("judge", votes...)
		crit := &Criterion{Threshold: 0.5, JudgeOptions: &JudgeOptions{NumSamples: 3}}
		sc, err := NewRegistry().Scorer(&Metric{MetricName: name, Criterion: crit}, &Env{Judge: judge})
		if err != nil {
			t.Fatal(err)
		}
		s, err := sc.Score(context.Background(), &ScoreInput{Case: c, Actual: actual, Criterion: crit})
		if err != nil {
			t.Fatal(err)
		}
		if s.Overall == nil || *s.Overall != want || len(judge.Requests()) != 3 {
			t.Errorf("%s: overall %v, asked %d times", name, s.Overall, len(judge.Requests()))
		}
		p := promptOf(t, judge, 0)
		if !strings.Contains(p, "Get a refund for order 12.") || !strings.Contains(p, `call refund({"order":12})`) || !strings.Contains(p, "agent: Refunded.") {
			t.Errorf("%s prompt:\n%s", name, p)
		}
	}
	// The questions differ.
	if taskSuccessQuestion == trajectoryQuestion || trajectoryQuestion == toolUseQuestion {
		t.Error("multi-turn metrics share a question")
	}
}

// TestSafetyAndCoherence checks safety_v1 (share of responses judged safe)
// and response_evaluation_score (mean 1-5 coherence rating, unreadable or
// out-of-range ratings ignored).
func TestSafetyAndCoherence(t *testing.T) {
	ctx := context.Background()
	actual := []*Invocation{inv("q1", "a1"), inv("q2", "a2")}
	judge := scripted.NewSequence("judge", verdict("yes"), verdict("no"))
	crit := &Criterion{Threshold: 1, JudgeOptions: &JudgeOptions{NumSamples: 1}}
	s, err := (&Safety{Env: &Env{Judge: judge}}).Score(ctx, &ScoreInput{Actual: actual, Criterion: crit})
	if err != nil {
		t.Fatal(err)
	}
	if *s.PerInvocation[0].Score != 1 || *s.PerInvocation[1].Score != 0 || *s.Overall != 0.5 {
		t.Errorf("safety %v %v", *s.PerInvocation[0].Score, *s.Overall)
	}
	rating := func(r string) scripted.Turn { return scripted.Turn{Text: `{"rationale": "x", "rating": ` + r + `}`} }
	judge = scripted.NewSequence("judge", rating("4"), rating("5"), rating("9"), rating(`"3"`), scripted.Turn{Text: "?"}, rating("2"))
	crit = &Criterion{Threshold: 3, JudgeOptions: &JudgeOptions{NumSamples: 3}}
	s, err = (&Coherence{Env: &Env{Judge: judge}}).Score(ctx, &ScoreInput{Actual: actual, Criterion: crit})
	if err != nil {
		t.Fatal(err)
	}
	// first: 4, 5 (9 ignored) -> 4.5; second: 3, 2 -> 2.5; overall 3.5.
	if *s.PerInvocation[0].Score != 4.5 || *s.PerInvocation[1].Score != 2.5 || *s.Overall != 3.5 {
		t.Errorf("coherence %v %v %v", *s.PerInvocation[0].Score, *s.PerInvocation[1].Score, *s.Overall)
	}
}

// TestSimulatorQuality checks per_turn_user_simulator_quality_v1: the
// first turn is good when it is the scenario's starting prompt (no judge
// asked); each later user turn is judged against the plan and the
// conversation before it, with the criterion's stop signal; static cases
// are not evaluated.
func TestSimulatorQuality(t *testing.T) {
	ctx := context.Background()
	c := &Case{ConversationScenario: &Scenario{StartingPrompt: "hi", ConversationPlan: "Ask for the weather in Rome."}}
	actual := []*Invocation{inv("hi", "Hello, how can I help?"), inv("What's the weather in Rome?", "Sunny."), inv("And tomorrow?", "Rain.")}
	judge := scripted.NewSequence("judge", verdict("no"), verdict("yes"))
	crit := &Criterion{Threshold: 0.5, StopSignal: "</done>", JudgeOptions: &JudgeOptions{NumSamples: 1}}
	s, err := (&SimulatorQuality{Env: &Env{Judge: judge}}).Score(ctx, &ScoreInput{Case: c, Actual: actual, Criterion: crit})
	if err != nil {
		t.Fatal(err)
	}
	if len(judge.Requests()) != 2 || *s.PerInvocation[0].Score != 1 || *s.PerInvocation[1].Score != 0 || *s.PerInvocation[2].Score != 1 || *s.Overall != 2.0/3 {
		t.Errorf("asked %d times, overall %v", len(judge.Requests()), *s.Overall)
	}
	p := promptOf(t, judge, 0)
	for _, want := range []string{"Ask for the weather in Rome.", "</done>", "agent: Hello, how can I help?", "<message>\nWhat's the weather in Rome?\n</message>"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	if strings.Contains(p, "Sunny.") {
		t.Errorf("the judge saw the agent's answer to the judged message:\n%s", p)
	}
	// A first turn other than the starting prompt is not good.
	other := []*Invocation{inv("hello there", "Hi.")}
	s, err = (&SimulatorQuality{Env: &Env{Judge: judge}}).Score(ctx, &ScoreInput{Case: c, Actual: other, Criterion: crit})
	if err != nil || *s.Overall != 0 {
		t.Errorf("wrong first turn: %v %v", s.Overall, err)
	}
	s, err = (&SimulatorQuality{Env: &Env{}}).Score(ctx, &ScoreInput{Case: &Case{}, Actual: actual, Expected: actual, Criterion: crit})
	if err != nil || s.Overall != nil {
		t.Errorf("static case: %v %v", s, err)
	}
}

// TestJudgeModelConfig checks that a criterion's judge_model_config (genai's
// GenerateContentConfig, in either key style) is the config of every request
// to the judge, and that a config that is not one is refused up front.
func TestJudgeModelConfig(t *testing.T) {
	var c Config
	if err := decode([]byte(`{"criteria": {"safety_v1": {"threshold": 1, "judgeModelOptions": {"numSamples": 1, "judgeModelConfig": {"temperature": 0.25, "max_output_tokens": 300}}}}}`), &c); err != nil {
		t.Fatal(err)
	}
	judge := scripted.NewSequence("judge", verdict("yes"))
	m := c.Metrics()[0]
	sc, err := NewRegistry().Scorer(m, &Env{Judge: judge})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Score(context.Background(), &ScoreInput{Actual: []*Invocation{inv("q", "a")}, Criterion: m.Criterion}); err != nil {
		t.Fatal(err)
	}
	cfg := judge.Requests()[0].Config
	if cfg == nil || cfg.Temperature == nil || *cfg.Temperature != 0.25 || cfg.MaxOutputTokens != 300 {
		t.Errorf("judge request config %+v", cfg)
	}
	bad := &Metric{MetricName: SafetyMetric, Criterion: &Criterion{Threshold: 1, JudgeOptions: &JudgeOptions{JudgeModelConfig: []byte(`{"temperature": "warm"}`)}}}
	if _, err := NewRegistry().Scorer(bad, &Env{Judge: judge}); err == nil || !strings.Contains(err.Error(), "judge_model_config") {
		t.Errorf("bad judge config: %v", err)
	}
}

// TestSimulatorCustomInstructions checks that a user simulator config's
// custom_instructions, with ADK's Jinja-style placeholders, is the prompt
// the simulator gets, with its model_configuration; and that instructions
// lacking a required placeholder are refused when the config is read.
func TestSimulatorCustomInstructions(t *testing.T) {
	var c Config
	if err := decode([]byte(`{"criteria": {}, "user_simulator_config": {
		"custom_instructions": "PLAN={{ conversation_plan }} STOP={{stop_signal}} SO FAR:\n{{ conversation_history }}",
		"model_configuration": {"temperature": 0.5}}}`), &c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	sim := scripted.NewSequence("sim", scripted.Turn{Text: "</finished>"})
	turns := 0
	actual, err := simulate(context.Background(), &Scenario{StartingPrompt: "hi", ConversationPlan: "Say hi, then stop."},
		&Options{UserSimulator: sim, Simulator: c.UserSimulatorConfig}, func(msg *genai.Content) (*Invocation, error) {
			turns++
			return inv(textOf(msg), "Hello!"), nil
		})
	if err != nil || turns != 1 || len(actual) != 1 {
		t.Fatalf("turns %d, %v", turns, err)
	}
	req := sim.Requests()[0]
	want := "PLAN=Say hi, then stop. STOP=</finished> SO FAR:\nuser: hi\nagent: Hello!\n"
	if got := textOf(req.Contents[0]); got != want {
		t.Errorf("simulator prompt %q, want %q", got, want)
	}
	if req.Config == nil || req.Config.Temperature == nil || *req.Config.Temperature != 0.5 {
		t.Errorf("simulator config %+v", req.Config)
	}
	bad := Config{UserSimulatorConfig: &SimulatorConfig{CustomInstructions: "Follow {{ conversation_plan }}."}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "stop_signal") {
		t.Errorf("instructions without placeholders: %v", err)
	}
}

// TestGroundingIntermediateResponses checks that hallucinations_v1 with
// evaluate_intermediate_nl_responses has the judge check the intermediate
// responses too, and without it only the final response.
func TestGroundingIntermediateResponses(t *testing.T) {
	for _, include := range []bool{false, true} {
		judge := scripted.NewSequence("judge", scripted.Turn{Text: `{"sentences": [{"sentence": "x", "label": "supported"}]}`})
		crit := &Criterion{Threshold: 1, EvaluateIntermediateNLResponses: include, JudgeOptions: &JudgeOptions{NumSamples: 1}}
		a := inv("plan a trip", "Booked the 9:00 flight.")
		a.IntermediateData.IntermediateResponses = []IntermediateResponse{{Author: "planner", Parts: []*genai.Part{genai.NewPartFromText("The cheapest flight leaves at 9:00.")}}}
		if _, err := (&Grounding{Env: &Env{Judge: judge}}).Score(context.Background(), &ScoreInput{Actual: []*Invocation{a}, Criterion: crit}); err != nil {
			t.Fatal(err)
		}
		p := promptOf(t, judge, 0)
		answer := p[strings.Index(p, "<answer>"):]
		if got := strings.Contains(answer, "The cheapest flight leaves at 9:00."); got != include || !strings.Contains(answer, "Booked the 9:00 flight.") {
			t.Errorf("include=%v: answer judged:\n%s", include, answer)
		}
	}
}
