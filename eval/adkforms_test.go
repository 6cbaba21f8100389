package eval

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEvalSetInTestFile checks that a *.test.json file holding an eval set
// object (as ADK's own fixtures and many samples do) is read as that set,
// in either key style, and not refused as an old-form list of turns.
func TestEvalSetInTestFile(t *testing.T) {
	s, err := ReadSetFile("testdata/adk/light_control.test.json")
	if err != nil {
		t.Fatal(err)
	}
	if s.EvalSetID != "0f2c6a7e-5b1d-4c8e-9a3f-1d2e3c4b5a69" || s.Name != "light control" || len(s.EvalCases) != 1 {
		t.Fatalf("set %+v", s)
	}
	c := s.EvalCases[0]
	if c.EvalID != "kitchen_off" || c.SessionInput.UserID != "test_user" {
		t.Errorf("case %+v", c)
	}
	calls := c.Conversation[0].IntermediateData.ToolCalls()
	if len(calls) != 1 || calls[0].Name != "set_light" || calls[0].Args["on"] != false {
		t.Errorf("tool uses %+v", calls)
	}

	s, err = ReadSetFile("testdata/adk/camel_case.test.json")
	if err != nil {
		t.Fatal(err)
	}
	if s.EvalSetID != "camel" || s.EvalCases[0].EvalID != "greet" || s.EvalCases[0].SessionInput != nil ||
		textOf(s.EvalCases[0].Conversation[0].FinalResponse) != "Hi there." {
		t.Errorf("camelCase set %+v", s.EvalCases[0])
	}

	// A set object that is not a valid set says what is wrong with it as a
	// set, not as a list of turns.
	path := filepath.Join(t.TempDir(), "broken.test.json")
	os.WriteFile(path, []byte(`{"eval_set_id":"x","eval_cases":[{"conversation":[]}]}`), 0o644)
	if _, err := ReadSetFile(path); err == nil || !strings.Contains(err.Error(), "eval_cases[0].eval_id: missing") || strings.Contains(err.Error(), "list of turns") {
		t.Errorf("broken set object: %v", err)
	}
}

// TestLegacyCaseList checks ADK's older eval set form, a list of
// {name, data, initial_session}, in any file name: each entry becomes a
// case, its data the conversation, its initial session the session input.
func TestLegacyCaseList(t *testing.T) {
	s, err := ReadSetFile("testdata/adk/shopping.evalset.json")
	if err != nil {
		t.Fatal(err)
	}
	if s.EvalSetID != "shopping" || len(s.EvalCases) != 2 {
		t.Fatalf("set %+v", s)
	}
	c := s.EvalCases[0]
	if c.EvalID != "find_mugs" || len(c.Conversation) != 2 {
		t.Fatalf("case %+v", c)
	}
	first := c.Conversation[0]
	if textOf(first.UserContent) != "Show me blue mugs." || textOf(first.FinalResponse) != "Here are three blue mugs." {
		t.Errorf("first turn %+v", first)
	}
	if calls := first.IntermediateData.ToolCalls(); len(calls) != 1 || calls[0].Name != "search_products" || calls[0].Args["query"] != "blue mug" {
		t.Errorf("tool uses %+v", calls)
	}
	if r := first.IntermediateData.IntermediateResponses; len(r) != 1 || r[0].Author != "searcher" {
		t.Errorf("intermediate responses %+v", r)
	}
	// A turn without a reference expects an empty response, as in ADK.
	if textOf(c.Conversation[1].FinalResponse) != "" || len(c.Conversation[1].IntermediateData.ToolCalls()) != 0 {
		t.Errorf("second turn %+v", c.Conversation[1])
	}
	if c.SessionInput == nil || c.SessionInput.UserID != "alice" || c.SessionInput.AppName != "shop" || c.SessionInput.State["currency"] != "EUR" {
		t.Errorf("session input %+v", c.SessionInput)
	}
	if s.EvalCases[1].EvalID != "no_session" || s.EvalCases[1].SessionInput != nil {
		t.Errorf("empty initial session gives %+v", s.EvalCases[1].SessionInput)
	}

	dir := t.TempDir()
	for name, tc := range map[string]struct{ body, want string }{
		"no_name":    {`[{"data":[{"query":"hi"}]}]`, "[0].name: missing"},
		"no_data":    {`[{"name":"a"}]`, "[0].data: missing"},
		"no_query":   {`[{"name":"a","data":[{"reference":"x"}]}]`, "[0].data[0].query: missing"},
		"bad_tool":   {`[{"name":"a","data":[{"query":"q","expected_tool_use":[{"tool_input":{}}]}]}]`, "[0].data[0].expected_tool_use[0].tool_name: missing"},
		"dup":        {`[{"name":"a","data":[]},{"name":"a","data":[]}]`, "duplicate eval case id"},
		"turn_query": {`[{"query":"hi"},{"reference":"no query"}]`, "[1].query: missing"},
	} {
		path := filepath.Join(dir, name+SetFileSuffix)
		os.WriteFile(path, []byte(tc.body), 0o644)
		if _, err := ReadSetFile(path); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
	}
}

// TestConfigAllForms reads an eval_config.json with every form ADK accepts:
// criteria as numbers and as objects (either key style) with match types,
// judge options and their model config, rubrics, and options of specific
// metrics; custom metrics; a user simulator config with its type.
func TestConfigAllForms(t *testing.T) {
	c, err := ReadConfig("testdata/adk/eval_config.json")
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]*Metric{}
	for _, m := range c.Metrics() {
		by[m.MetricName] = m
	}
	if len(by) != 9 {
		t.Fatalf("%d metrics: %v", len(by), by)
	}
	if m := by[TrajectoryMetric]; m.threshold() != 0.9 || *m.Criterion.MatchType != AnyOrder {
		t.Errorf("trajectory %+v", m.Criterion)
	}
	if m := by[JudgedMatchMetric]; m.Criterion.JudgeOptions.JudgeModel != "judge-b" || m.Criterion.JudgeOptions.NumSamples != 2 {
		t.Errorf("judge options %+v", m.Criterion.JudgeOptions)
	}
	if m := by[RubricMetric]; !m.Criterion.IncludeIntermediateResponsesInFinal || len(m.Criterion.Rubrics) != 1 || m.Criterion.Rubrics[0].RubricContent.TextProperty == "" {
		t.Errorf("rubric criterion %+v", m.Criterion)
	}
	if m := by[ToolUseRubricMetric]; len(m.Criterion.Rubrics) != 1 || m.Criterion.Rubrics[0].RubricID != "lookup_first" {
		t.Errorf("tool use criterion %+v", m.Criterion)
	}
	if m := by[HallucinationMetric]; !m.Criterion.EvaluateIntermediateNLResponses {
		t.Errorf("hallucinations criterion %+v", m.Criterion)
	}
	if m := by[SimulatorQualityMetric]; m.Criterion.StopSignal != "</done>" {
		t.Errorf("simulator criterion %+v", m.Criterion)
	}
	if m := by["order_total_ok"]; m.CustomFunctionPath != "shop.metrics.order_total_ok" {
		t.Errorf("custom metric %+v", m)
	}
	if c.UserSimulatorConfig.Model != "sim-model" || c.UserSimulatorConfig.MaxAllowedInvocations != 4 || c.UserSimulatorConfig.Type != "llm_backed" {
		t.Errorf("simulator config %+v", c.UserSimulatorConfig)
	}
	out, err := c.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"judge_model_config":{"temperature": 0.1}`, `"code_config":{"name":"shop.metrics.order_total_ok"}`, `"model_configuration"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("written config lacks %s: %s", want, out)
		}
	}

	dir := t.TempDir()
	// ADK defaults missing criteria to none.
	path := filepath.Join(dir, "no_criteria.json")
	os.WriteFile(path, []byte(`{"user_simulator_config":{"model":"m"}}`), 0o644)
	if c, err := ReadConfig(path); err != nil || len(c.Metrics()) != 0 {
		t.Errorf("no criteria: %v %v", c, err)
	}
	for name, tc := range map[string]struct{ body, want string }{
		"sim_audio":   {`{"criteria":{},"user_simulator_config":{"type":"llm_audio"}}`, `user_simulator_config.type: "llm_audio"`},
		"custom_code": {`{"criteria":{"x":1},"custom_metrics":{"x":{}}}`, "custom_metrics.x.code_config: missing"},
		"criteria":    {`{"criteria":[]}`, "criteria: expected an object"},
	} {
		path := filepath.Join(dir, name+".json")
		os.WriteFile(path, []byte(tc.body), 0o644)
		if _, err := ReadConfig(path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", name, err, tc.want)
		}
	}
}

// TestCustomMetricByConfigName checks that a custom metric an eval config
// names is computed by the Go scorer registered under that name, and that
// without one the error says the metric is Python code and how to supply it.
func TestCustomMetricByConfigName(t *testing.T) {
	c, err := ReadConfig("testdata/adk/eval_config.json")
	if err != nil {
		t.Fatal(err)
	}
	var custom *Metric
	for _, m := range c.Metrics() {
		if m.MetricName == "order_total_ok" {
			custom = m
		}
	}
	reg := NewRegistry()
	if _, err := reg.Scorer(custom, nil); err == nil || !strings.Contains(err.Error(), "shop.metrics.order_total_ok") || !strings.Contains(err.Error(), "Register") {
		t.Errorf("unregistered custom metric: %v", err)
	}
	reg.Register("order_total_ok", func(*Criterion, *Env) (Scorer, error) { return lengthScorer{}, nil })
	sc, err := reg.Scorer(custom, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sc.Score(context.Background(), &ScoreInput{Actual: []*Invocation{inv("q", "12.50")}})
	if err != nil || *s.Overall != 5 {
		t.Errorf("custom score %v %v", s, err)
	}
}

// TestEveryADKMetricKnown checks that every metric ADK's registry and its
// list of prebuilt metrics name has a scorer.
//
// (CONFORMANCE Q2)
func TestEveryADKMetricKnown(t *testing.T) {
	reg := NewRegistry()
	for _, name := range []string{
		"tool_trajectory_avg_score", "response_evaluation_score", "response_match_score",
		"safety_v1", "final_response_match_v2", "rubric_based_final_response_quality_v1",
		"hallucinations_v1", "rubric_based_tool_use_quality_v1", "per_turn_user_simulator_quality_v1",
		"multi_turn_task_success_v1", "multi_turn_trajectory_quality_v1", "multi_turn_tool_use_quality_v1",
		"rubric_based_multi_turn_trajectory_quality_v1",
	} {
		crit := &Criterion{Threshold: 0.5, Rubrics: []*Rubric{{RubricID: "r", RubricContent: &RubricContent{TextProperty: "p"}}}}
		if _, err := reg.Scorer(&Metric{MetricName: name, Criterion: crit}, &Env{}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestConfigWithoutConfigKeys: a JSON object holding none of an eval
// config's keys (a metric list in a form ADK does not read, or another
// program's settings) is refused, naming what it holds, rather than run
// with no metric; an empty object is a config without criteria, as in ADK.
func TestConfigWithoutConfigKeys(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"metrics.json":  `{"metrics": [{"name": "response_match_score", "pass_threshold": 0.8}]}`,
		"settings.json": `{"openai_model": "x", "schema": {}}`,
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadConfig(path)
		if err == nil || !strings.Contains(err.Error(), "not an eval config") {
			t.Errorf("%s: err = %v, want a refusal", name, err)
		}
	}
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := ReadConfig(empty); err != nil || len(c.Metrics()) != 0 {
		t.Errorf("an empty config: %v, %v; want no metrics and no error", c, err)
	}
}
