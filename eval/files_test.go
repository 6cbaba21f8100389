package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"github.com/loomkit/loom/internal/evaljson"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file:\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

// (CONFORMANCE Q1)
func TestSetFileRoundTrip(t *testing.T) {
	s, err := ReadSetFile("testdata/adk.evalset.json")
	if err != nil {
		t.Fatal(err)
	}
	if s.EvalSetID != "home_automation_set" || len(s.EvalCases) != 3 {
		t.Fatalf("set %q with %d cases", s.EvalSetID, len(s.EvalCases))
	}
	c := s.EvalCases[0]
	calls := c.Conversation[0].IntermediateData.ToolCalls()
	if len(calls) != 1 || calls[0].Name != "set_device_info" || calls[0].Args["device_id"] != "device_2" {
		t.Errorf("tool uses: %+v", calls)
	}
	if ir := c.Conversation[0].IntermediateData.IntermediateResponses; len(ir) != 1 || ir[0].Author != "router" || ir[0].Parts[0].Text != "Routing to the device agent." {
		t.Errorf("intermediate responses: %+v", ir)
	}
	if got := textOf(c.Conversation[0].FinalResponse); got != "I have set the device_2 status to off." {
		t.Errorf("final response %q", got)
	}
	if c.SessionInput.UserID != "test_user" || c.SessionInput.State["user:home"] != "flat 3" {
		t.Errorf("session input %+v", c.SessionInput)
	}
	// The camelCase case, with its calls inside invocation events written
	// in snake_case.
	cc := s.EvalCases[2]
	if cc.EvalID != "camel_case_written" || textOf(cc.Conversation[0].FinalResponse) != "Nothing is on." {
		t.Errorf("camelCase case: %+v", cc)
	}
	if calls := cc.Conversation[0].IntermediateData.ToolCalls(); len(calls) != 1 || calls[0].Name != "list_devices" || calls[0].Args["status"] != "ON" {
		t.Errorf("calls from invocation events: %+v", calls)
	}
	if sc := s.EvalCases[1].ConversationScenario; sc == nil || sc.StartingPrompt != "I want to plan a trip." {
		t.Errorf("scenario %+v", sc)
	}

	out, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	out = indent(out)
	golden(t, "adk.evalset.json", out)
	// Unknown fields survive, at every level, as written.
	for _, keep := range []string{`"team_note": "not an ADK field: kept as is"`, `"schema_hint": {`, `"user_persona": "NOVICE"`, `"snake_key_kept": {`, `"inner_key": 1`} {
		if !strings.Contains(string(out), keep) {
			t.Errorf("written set lost %s", keep)
		}
	}
	// Writing what was read is stable.
	again, err := ParseSet(out)
	if err != nil {
		t.Fatal(err)
	}
	out2, _ := again.MarshalJSON()
	if !bytes.Equal(indent(out2), out) {
		t.Errorf("second round trip differs:\n%s", indent(out2))
	}
	// The camelCase form reads back to the same set.
	camel, err := evaljson.Encode(s, true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(camel), `"evalSetId":"home_automation_set"`) || !strings.Contains(string(camel), `"userContent"`) {
		t.Errorf("camelCase form: %s", camel)
	}
	fromCamel, err := ParseSet(camel)
	if err != nil {
		t.Fatal(err)
	}
	out3, _ := fromCamel.MarshalJSON()
	if !bytes.Equal(indent(out3), out) {
		t.Errorf("camelCase round trip differs:\n%s", indent(out3))
	}
}

// (CONFORMANCE Q1)
func TestResultFileRoundTrip(t *testing.T) {
	r, err := ReadResultFile("testdata/adk.evalset_result.json")
	if err != nil {
		t.Fatal(err)
	}
	cr := r.EvalCaseResults[0]
	if cr.FinalEvalStatus != Passed || cr.EvalID != "turn_off_bedroom" || cr.SessionID != "___eval___session___0f1e2d3c" {
		t.Errorf("case result %+v", cr)
	}
	m := cr.OverallEvalMetricResults[1]
	if m.MetricName != ResponseMatchMetric || *m.Score != 0.875 || *m.Threshold != 0.7 || m.EvalStatus != Passed {
		t.Errorf("metric result %+v", m)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "r"+ResultFileSuffix)
	if err := WriteResultFile(path, r); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	// ADK's local result files hold the JSON as a JSON string.
	var inner string
	if err := json.Unmarshal(raw, &inner); err != nil {
		t.Fatalf("result file is not a JSON string: %v", err)
	}
	golden(t, "adk.evalset_result.json", indent([]byte(inner)))
	back, err := ReadResultFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := r.MarshalJSON()
	b, _ := back.MarshalJSON()
	if !bytes.Equal(a, b) {
		t.Errorf("round trip differs:\n%s\n%s", a, b)
	}
	for _, keep := range []string{`"session_details":null`, `"eval_metric_results":null`, `"judge_model_options":null`} {
		if !strings.Contains(inner, keep) {
			t.Errorf("written result lost %s", keep)
		}
	}
	// A plain JSON object is read too.
	if _, err := ParseResult([]byte(inner)); err != nil {
		t.Errorf("plain object: %v", err)
	}
}

func TestConfig(t *testing.T) {
	c, err := ReadConfig("testdata/test_config.json")
	if err != nil {
		t.Fatal(err)
	}
	ms := c.Metrics()
	if len(ms) != 4 {
		t.Fatalf("%d metrics", len(ms))
	}
	byName := map[string]*Metric{}
	for _, m := range ms {
		byName[m.MetricName] = m
	}
	if m := byName[JudgedMatchMetric]; m.threshold() != 0.6 || m.Criterion.JudgeOptions.NumSamples != 3 || m.Criterion.JudgeOptions.JudgeModel != "gemini-2.5-flash" {
		t.Errorf("judge metric %+v", m.Criterion)
	}
	if m := byName["trajectory_in_order"]; *m.Criterion.MatchType != InOrder {
		t.Errorf("match type %v", m.Criterion.MatchType)
	}
	if c.UserSimulatorConfig.MaxAllowedInvocations != 5 {
		t.Errorf("simulator config %+v", c.UserSimulatorConfig)
	}
	out, err := c.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	// Bare thresholds stay bare.
	if !strings.Contains(string(out), `"response_match_score":0.7`) || !strings.Contains(string(out), `"match_type":"IN_ORDER"`) {
		t.Errorf("config written as %s", out)
	}
}

// (CONFORMANCE Q1)
func TestOldTestFile(t *testing.T) {
	s, err := ReadSetFile("testdata/old/weather.test.json")
	if err != nil {
		t.Fatal(err)
	}
	if s.EvalSetID != "weather" || len(s.EvalCases) != 1 {
		t.Fatalf("%+v", s)
	}
	c := s.EvalCases[0]
	if len(c.Conversation) != 2 || textOf(c.Conversation[1].UserContent) != "And in Lisbon?" || textOf(c.Conversation[1].FinalResponse) != "It is cloudy in Lisbon." {
		t.Errorf("conversation %+v", c.Conversation)
	}
	if calls := c.Conversation[0].IntermediateData.ToolCalls(); len(calls) != 1 || calls[0].Name != "get_weather" || calls[0].Args["city"] != "Paris" {
		t.Errorf("calls %+v", calls)
	}
	if c.SessionInput == nil || c.SessionInput.State["unit"] != "celsius" {
		t.Errorf("initial state %+v", c.SessionInput)
	}
	path := filepath.Join(t.TempDir(), "weather.test.json")
	if err := WriteTestFile(path, s); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSetFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if textOf(back.EvalCases[0].Conversation[0].FinalResponse) != "It is sunny in Paris." || back.EvalCases[0].Conversation[1].IntermediateData.ToolCalls()[0].Args["city"] != "Lisbon" {
		t.Errorf("old form round trip: %+v", back.EvalCases[0].Conversation)
	}
}

// (CONFORMANCE Q1)
func TestBadFilesNameFileCaseAndField(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, body string
		want       []string
	}{
		{"missing_content", `{"eval_set_id":"s","eval_cases":[{"eval_id":"a","conversation":[]},{"eval_id":"b","conversation":[{"final_response":{"parts":[]}}]}]}`,
			[]string{"missing_content.evalset.json", `eval_cases[1] (eval case "b").conversation[0].user_content: missing`}},
		{"wrong_type", `{"eval_set_id":"s","eval_cases":[{"eval_id":"a","conversation":[{"user_content":{"parts":[{"text":"hi"}]},"creation_timestamp":"yesterday"}]}]}`,
			[]string{"wrong_type.evalset.json", `eval_cases[0] (eval case "a").conversation[0].creation_timestamp: expected a number`}},
		{"no_id", `{"eval_cases":[]}`, []string{"no_id.evalset.json", "eval_set_id: missing"}},
		{"both", `{"eval_set_id":"s","eval_cases":[{"eval_id":"x","conversation":[],"conversation_scenario":{"starting_prompt":"a","conversation_plan":"b"}}]}`,
			[]string{`eval case "x"`, "exactly one of conversation and conversation_scenario"}},
		{"dup", `{"eval_set_id":"s","eval_cases":[{"eval_id":"x","conversation":[]},{"eval_id":"x","conversation":[]}]}`,
			[]string{`eval_cases[1] (eval case "x").eval_id: duplicate`}},
		{"not_json", `{"eval_set_id":`, []string{"not_json.evalset.json"}},
		{"cases_not_list", `{"eval_set_id":"s","eval_cases":{}}`, []string{"eval_cases: expected a list"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.name+SetFileSuffix)
			os.WriteFile(path, []byte(tc.body), 0o644)
			_, err := ReadSetFile(path)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	path := filepath.Join(dir, "bad_config.json")
	os.WriteFile(path, []byte(`{"criteria":{"tool_trajectory_avg_score":{"threshold":1,"match_type":"SIDEWAYS"}}}`), 0o644)
	if _, err := ReadConfig(path); err == nil || !strings.Contains(err.Error(), "criteria.tool_trajectory_avg_score.match_type") || !strings.Contains(err.Error(), "bad_config.json") {
		t.Errorf("config error: %v", err)
	}
}

// TestDirStoreInvalidIDs checks that every DirStore method refuses an id it
// cannot use as a file name with an error wrapping ErrInvalidID, which
// callers can tell from a failure of the store itself.
func TestDirStoreInvalidIDs(t *testing.T) {
	d := NewDirStore(t.TempDir())
	ctx := t.Context()
	noop := func(*Set) error { return nil }
	long := strings.Repeat("x", 201)
	for name, call := range map[string]func() error{
		"GetSet bad-id!":     func() error { _, err := d.GetSet(ctx, "app", "bad-id!"); return err },
		"GetSet long":        func() error { _, err := d.GetSet(ctx, "app", long); return err },
		"CreateSet bad-id!":  func() error { return d.CreateSet(ctx, "app", &Set{EvalSetID: "bad-id!"}) },
		"UpdateSet bad-id!":  func() error { return d.UpdateSet(ctx, "app", "bad-id!", noop) },
		"GetSet app ..":      func() error { _, err := d.GetSet(ctx, "..", "s"); return err },
		"ListSets app a/b":   func() error { _, err := d.ListSets(ctx, "a/b"); return err },
		"ListResults app ..": func() error { _, err := d.ListResults(ctx, ".."); return err },
		`GetResult a\b`:      func() error { _, err := d.GetResult(ctx, "app", `a\b`); return err },
		"GetResult ..":       func() error { _, err := d.GetResult(ctx, "app", ".."); return err },
		"SaveResult empty":   func() error { return d.SaveResult(ctx, "app", &SetResult{}) },
	} {
		if err := call(); !errors.Is(err, ErrInvalidID) {
			t.Errorf("%s: %v, want an error wrapping ErrInvalidID", name, err)
		}
	}
	if err := CheckSetID("bad-id!"); !errors.Is(err, ErrInvalidID) || err.Error() != `invalid eval set id "bad-id!": use letters, digits and underscores` {
		t.Errorf("CheckSetID: %v", err)
	}
}
