package cli_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/eval"
	"github.com/loomkit/loom/eval/sqleval"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/session/sqlsession"
)

const failingEvalSet = `{
  "eval_set_id": "wrong_city",
  "eval_cases": [{
    "eval_id": "paris",
    "conversation": [{
      "user_content": {"parts": [{"text": "What's the weather in Paris?"}], "role": "user"},
      "final_response": {"parts": [{"text": "It is sunny in Lyon."}], "role": "model"},
      "intermediate_data": {"tool_uses": [{"name": "get_weather", "args": {"city": "Lyon"}}]}
    }]
  }]
}`

// TestEvalCommand checks loom eval's exit status: 0 when every case passes,
// 1 when one misses a threshold or a file is bad, 2 for a bad command line;
// and that results are saved as ADK eval-result files.
func TestEvalCommand(t *testing.T) {
	dir := t.TempDir()
	evals := filepath.Join(dir, "evals")
	set := "../examples/assistant/assistant.evalset.json"

	code, out, errOut := run(t, "", "eval", "--evals", evals, "assistant", set)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"CASE", "weather_then_sum  response_match_score       1.000  0.800", "tool_trajectory_avg_score  1.000  1.000      PASSED", "1 of 1 cases passed", "weather_then_sum took ", " s, 4 model calls, "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	ids, err := eval.NewDirStore(evals).ListResults(t.Context(), "assistant")
	if err != nil || len(ids) != 1 || !strings.HasPrefix(ids[0], "assistant_assistant_offline_") {
		t.Fatalf("saved results %v %v", ids, err)
	}
	res, err := eval.ReadResultFile(filepath.Join(evals, "assistant", "eval_history", ids[0]+eval.ResultFileSuffix))
	if err != nil || res.EvalCaseResults[0].FinalEvalStatus != eval.Passed {
		t.Fatalf("result %+v %v", res, err)
	}

	bad := filepath.Join(dir, "wrong_city.evalset.json")
	os.WriteFile(bad, []byte(failingEvalSet), 0o644)
	code, out, _ = run(t, "", "eval", "--evals", evals, "--print-details", "assistant", bad)
	if code != 1 {
		t.Fatalf("failing set: exit %d\n%s", code, out)
	}
	for _, want := range []string{"FAILED", "0 of 1 cases passed", `- tools: get_weather{"city":"Lyon"}`, `+ tools: get_weather{"city":"Paris"}`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// A config raising no bar passes the same set.
	cfg := filepath.Join(dir, "lenient.json")
	os.WriteFile(cfg, []byte(`{"criteria": {"response_match_score": 0.1}}`), 0o644)
	if code, out, errOut := run(t, "", "eval", "--evals", evals, "--config", cfg, "assistant", bad); code != 0 {
		t.Errorf("lenient config: exit %d\n%s\n%s", code, out, errOut)
	}

	broken := filepath.Join(dir, "broken.evalset.json")
	os.WriteFile(broken, []byte(`{"eval_set_id": "b", "eval_cases": [{"eval_id": "x", "conversation": [{}]}]}`), 0o644)
	code, _, errOut = run(t, "", "eval", "assistant", broken)
	if code != 1 || !strings.Contains(errOut, "broken.evalset.json") || !strings.Contains(errOut, `eval case "x"`) || !strings.Contains(errOut, "user_content: missing") {
		t.Errorf("broken file: exit %d: %s", code, errOut)
	}
	if code, _, _ := run(t, "", "eval", "assistant"); code != 2 {
		t.Errorf("no eval set: exit %d", code)
	}
	if code, _, _ := run(t, "", "eval", "nope", set); code != 2 {
		t.Errorf("unknown app: exit %d", code)
	}
}

// TestEvalResultsInSessionDatabase checks that with sessions in a database
// other than the default, loom eval keeps its results there.
func TestEvalResultsInSessionDatabase(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite://" + filepath.Join(dir, "other.db")
	code, out, errOut := run(t, "", "eval", "--sessions", db, "--evals", filepath.Join(dir, "evals"), "assistant", "../examples/assistant/assistant.evalset.json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "saved in the session database sqlite://") {
		t.Errorf("stderr: %s", errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "evals", "assistant", "eval_history")); !os.IsNotExist(err) {
		t.Errorf("results written to files: %v", err)
	}
	results, err := sqleval.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer results.Close()
	ids, err := results.ListResults(t.Context(), "assistant")
	if err != nil || len(ids) != 1 {
		t.Errorf("results in the database: %v %v", ids, err)
	}
	// The run's sessions are gone once scored: no user's list holds them,
	// and the result keeps their details (CONFORMANCE Q6).
	sessions, err := sqlsession.NewService(t.Context(), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sessions.Close()
	if res, err := sessions.List(t.Context(), "assistant", "", nil); err != nil || len(res.Sessions) != 0 {
		t.Errorf("sessions left in the database: %v %v", res, err)
	}
	if len(ids) == 1 {
		res, err := results.GetResult(t.Context(), "assistant", ids[0])
		if err != nil || len(res.EvalCaseResults) != 1 || !strings.Contains(string(res.EvalCaseResults[0].SessionDetails), "Paris") {
			t.Errorf("result %v: session details missing", err)
		}
	}
}

// adkLegacySet is ADK's older eval set form, a list of cases, for the
// assistant's offline model.
const adkLegacySet = `[
  {
    "name": "paris_weather",
    "data": [
      {
        "query": "What's the weather in Paris?",
        "expected_tool_use": [{"tool_name": "get_weather", "tool_input": {"city": "Paris"}}],
        "expected_intermediate_agent_responses": [],
        "reference": "It is 8°C and rainy in Paris."
      }
    ],
    "initial_session": {"state": {}, "app_name": "assistant", "user_id": "test_user"}
  }
]`

// TestEvalADKFileForms checks that loom eval runs the eval files ADK's adk
// eval runs: an eval set object in a *.test.json file, and the older list
// of cases; and that a config's custom metric runs with the Go scorer a
// program registers under its name, and without one fails saying so.
func TestEvalADKFileForms(t *testing.T) {
	dir := t.TempDir()
	evals := filepath.Join(dir, "evals")
	set, err := os.ReadFile("../examples/assistant/assistant.evalset.json")
	if err != nil {
		t.Fatal(err)
	}
	inTest := filepath.Join(dir, "fixture", "assistant.test.json")
	os.MkdirAll(filepath.Dir(inTest), 0o755)
	os.WriteFile(inTest, set, 0o644)
	if code, out, errOut := run(t, "", "eval", "--evals", evals, "assistant", inTest); code != 0 || !strings.Contains(out, "1 of 1 cases passed") {
		t.Errorf("set object in a .test.json file: exit %d\n%s\n%s", code, out, errOut)
	}
	legacy := filepath.Join(dir, "legacy.evalset.json")
	os.WriteFile(legacy, []byte(adkLegacySet), 0o644)
	code, out, errOut := run(t, "", "eval", "--evals", evals, "assistant", legacy)
	if code != 0 || !strings.Contains(out, "paris_weather") || !strings.Contains(out, "1 of 1 cases passed") {
		t.Errorf("list of cases: exit %d\n%s\n%s", code, out, errOut)
	}

	cfg := filepath.Join(dir, "eval_config.json")
	os.WriteFile(cfg, []byte(`{"criteria": {"tool_trajectory_avg_score": 1.0, "mentions_city": {"threshold": 1}},
		"custom_metrics": {"mentions_city": {"code_config": {"name": "assistant.metrics.mentions_city"}}}}`), 0o644)
	code, _, errOut = run(t, "", "eval", "--evals", evals, "--config", cfg, "assistant", legacy)
	if code != 1 || !strings.Contains(errOut, "assistant.metrics.mentions_city") || !strings.Contains(errOut, "Register") {
		t.Errorf("unregistered custom metric: exit %d: %s", code, errOut)
	}
	reg := eval.NewRegistry()
	reg.Register("mentions_city", func(*eval.Criterion, *eval.Env) (eval.Scorer, error) { return mentionsParis{}, nil })
	var o, e strings.Builder
	p := cli.Program{Apps: []cli.App{assistantApp}, EvalMetrics: reg}
	code = p.Run(context.Background(), []string{"eval", "--evals", evals, "--config", cfg, "assistant", legacy}, cli.Env{Stdin: strings.NewReader(""), Stdout: &o, Stderr: &e, Getenv: noEnv})
	if code != 0 || !strings.Contains(o.String(), "mentions_city") || !strings.Contains(o.String(), "1 of 1 cases passed") {
		t.Errorf("registered custom metric: exit %d\n%s\n%s", code, o.String(), e.String())
	}
}

// mentionsParis scores 1 for each final response naming Paris.
type mentionsParis struct{}

func (mentionsParis) Score(_ context.Context, in *eval.ScoreInput) (*eval.Score, error) {
	var out eval.Score
	total := 0.0
	for _, a := range in.Actual {
		s := 0.0
		if strings.Contains(model.Text(a.FinalResponse, "\n"), "Paris") {
			s = 1
		}
		total += s
		out.PerInvocation = append(out.PerInvocation, eval.InvocationScore{Score: &s})
	}
	overall := total / float64(len(in.Actual))
	out.Overall = &overall
	return &out, nil
}
