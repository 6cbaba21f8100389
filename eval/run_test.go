package eval_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/eval"
	"github.com/loomkit/loom/examples/assistant"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

func newRunner(t *testing.T, ag agent.Agent) *runner.Runner {
	t.Helper()
	r, err := runner.New(runner.Config{AppName: "app", Agent: ag, Sessions: session.NewService(memsession.New(), nil)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func text(s string, role genai.Role) *genai.Content { return genai.NewContentFromText(s, role) }

func weatherCase(id, city, answer string) *eval.Case {
	return &eval.Case{EvalID: id, Conversation: []*eval.Invocation{{
		UserContent:      text("What's the weather in "+city+"?", genai.RoleUser),
		FinalResponse:    text(answer, genai.RoleModel),
		IntermediateData: &eval.IntermediateData{ToolUses: []*genai.FunctionCall{{Name: "get_weather", Args: map[string]any{"city": city}}}},
	}}}
}

func forecast(city string) string {
	w := assistant.Forecast(city)
	return fmt.Sprintf("It is %d°C and %s in %s.", w.TemperatureC, w.Conditions, city)
}

// TestRunParallel runs many cases, several times each, in parallel through
// the real runner (run it under -race).
//
// (CONFORMANCE Q3)
func TestRunParallel(t *testing.T) {
	ag, err := assistant.New(assistant.Offline())
	if err != nil {
		t.Fatal(err)
	}
	r := newRunner(t, ag)
	set := &eval.Set{EvalSetID: "weather"}
	cities := []string{"Paris", "Lisbon", "Tokyo", "Oslo", "Cairo", "Lima"}
	for _, c := range cities {
		set.EvalCases = append(set.EvalCases, weatherCase(strings.ToLower(c), c, forecast(c)))
	}
	// One case expects the wrong city: its trajectory fails.
	set.EvalCases = append(set.EvalCases, weatherCase("wrong", "Rome", forecast("Rome")))
	set.EvalCases[len(set.EvalCases)-1].Conversation[0].UserContent = text("What's the weather in Madrid?", genai.RoleUser)

	var calls atomic.Int32
	rep, err := eval.Run(context.Background(), set, eval.Options{
		Runner: r, Parallelism: 3, NumRuns: 2,
		Progress: func(done, total int) {
			calls.Add(1)
			if total != 14 {
				t.Errorf("total %d", total)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 14 || len(rep.Result.EvalCaseResults) != 14 {
		t.Fatalf("%d progress calls, %d results", calls.Load(), len(rep.Result.EvalCaseResults))
	}
	for _, c := range rep.Cases[:len(cities)] {
		if c.Status != eval.Passed || len(c.Runs) != 2 {
			t.Errorf("case %s: %v (%v)", c.EvalID, c.Status, c.Errs)
		}
		for _, m := range c.Metrics {
			if *m.Score != 1 {
				t.Errorf("case %s metric %s = %v", c.EvalID, m.Name, *m.Score)
			}
		}
	}
	wrong := rep.Cases[len(cities)]
	traj := wrong.Metrics[1]
	if wrong.Status != eval.Failed || traj.Name != eval.TrajectoryMetric || *traj.Score != 0 || traj.Status != eval.Failed {
		t.Errorf("wrong case: %v %s %v", wrong.Status, traj.Name, *traj.Score)
	}
	if rep.Passed() {
		t.Error("report passed with a failing case")
	}
	// Every run had its own session.
	seen := map[string]bool{}
	for _, cr := range rep.Result.EvalCaseResults {
		if !strings.HasPrefix(cr.SessionID, eval.SessionPrefix) || seen[cr.SessionID] {
			t.Errorf("session id %q", cr.SessionID)
		}
		seen[cr.SessionID] = true
	}
}

// TestRunStateAndTurns checks the initial state, multi-turn order and mean
// scores over runs.
func TestRunStateAndTurns(t *testing.T) {
	greet, err := functiontool.New(functiontool.Config{Name: "whoami", Description: "who is the user"},
		func(_ context.Context, tc tool.Context, _ struct{}) (map[string]any, error) {
			name, _ := tc.State().Get("user_name")
			return map[string]any{"name": name}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	llm := scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if res := scripted.LastFunctionResponse(req); len(res) > 0 {
			return scripted.Text(fmt.Sprintf("You are %v.", res[0].Response["name"])), nil
		}
		last := req.Contents[len(req.Contents)-1]
		if strings.Contains(model.Text(last, "\n"), "who") {
			return scripted.Call("whoami", map[string]any{}), nil
		}
		// Every other run answers differently, to give a mean of 0.5.
		if n.Add(1)%2 == 0 {
			return scripted.Text("Bye now."), nil
		}
		return scripted.Text("Something else entirely."), nil
	})
	ag, err := llmagent.New(llmagent.Config{Name: "root", Model: llm, Tools: []tool.Tool{greet}})
	if err != nil {
		t.Fatal(err)
	}
	c := &eval.Case{EvalID: "c", SessionInput: &eval.SessionInput{UserID: "ana", State: map[string]any{"user_name": "Ana"}},
		Conversation: []*eval.Invocation{
			{UserContent: text("who am I?", genai.RoleUser), FinalResponse: text("You are Ana.", genai.RoleModel),
				IntermediateData: &eval.IntermediateData{ToolUses: []*genai.FunctionCall{{Name: "whoami"}}}},
			{UserContent: text("bye", genai.RoleUser), FinalResponse: text("Bye now.", genai.RoleModel)},
		}}
	rep, err := eval.Run(context.Background(), &eval.Set{EvalSetID: "s", EvalCases: []*eval.Case{c}}, eval.Options{
		Runner: newRunner(t, ag), NumRuns: 2, Parallelism: 1,
		Metrics: []*eval.Metric{{MetricName: eval.ResponseMatchMetric, Criterion: &eval.Criterion{Threshold: 0.7}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	run := rep.Result.EvalCaseResults[0]
	if run.UserID != "ana" || len(run.EvalMetricResultPerInvocation) != 2 {
		t.Fatalf("run %+v", run)
	}
	first := run.EvalMetricResultPerInvocation[0].ActualInvocation
	if model.Text(first.FinalResponse, "\n") != "You are Ana." || first.IntermediateData.ToolCalls()[0].Name != "whoami" {
		t.Errorf("first turn: %q", model.Text(first.FinalResponse, "\n"))
	}
	// Run 1: turn 2 scores 0 (mean 0.5); run 2: 1 (mean 1). Mean 0.75.
	m := rep.Cases[0].Metrics[0]
	if *m.Score != 0.75 || m.Status != eval.Passed {
		t.Errorf("mean score %v %v", *m.Score, m.Status)
	}
}

// TestRunScenario has a simulated user talk to the agent until it says the
// stop signal.
func TestRunScenario(t *testing.T) {
	ag, err := assistant.New(assistant.Offline())
	if err != nil {
		t.Fatal(err)
	}
	sim := scripted.NewSequence("user", scripted.Turn{Text: "And the weather in Oslo?"}, scripted.Turn{Text: eval.StopSignal})
	c := &eval.Case{EvalID: "trip", ConversationScenario: &eval.Scenario{StartingPrompt: "What's the weather in Paris?", ConversationPlan: "Ask about Paris, then Oslo."}}
	rep, err := eval.Run(context.Background(), &eval.Set{EvalSetID: "s", EvalCases: []*eval.Case{c}}, eval.Options{Runner: newRunner(t, ag), UserSimulator: sim})
	if err != nil {
		t.Fatal(err)
	}
	per := rep.Result.EvalCaseResults[0].EvalMetricResultPerInvocation
	if len(per) != 2 || model.Text(per[1].ActualInvocation.FinalResponse, "\n") != forecast("Oslo") {
		t.Fatalf("scenario turns: %d", len(per))
	}
	// Nothing to compare with: the default metrics are not evaluated.
	if rep.Cases[0].Status != eval.NotEvaluated {
		t.Errorf("status %v", rep.Cases[0].Status)
	}
	prompt := model.Text(sim.Requests()[1].Contents[0], "\n")
	if !strings.Contains(prompt, "Ask about Paris, then Oslo.") || !strings.Contains(prompt, forecast("Oslo")) {
		t.Errorf("simulator prompt:\n%s", prompt)
	}
}

// (CONFORMANCE Q3)
func TestRunRecordsAgentFailure(t *testing.T) {
	llm := scripted.NewSequence("m") // exhausted at once
	ag, err := llmagent.New(llmagent.Config{Name: "root", Model: llm})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := eval.Run(context.Background(), &eval.Set{EvalSetID: "s", EvalCases: []*eval.Case{weatherCase("a", "Paris", "x")}}, eval.Options{Runner: newRunner(t, ag)})
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Cases[0]; c.Status != eval.Failed || len(c.Errs) != 1 || !strings.Contains(c.Errs[0].Error(), "exhausted") {
		t.Errorf("case %v %v", c.Status, c.Errs)
	}
}

// TestRunRefusesNilMetric checks that a nil metric among Options.Metrics
// is a configuration error of Run, found before any case runs.
func TestRunRefusesNilMetric(t *testing.T) {
	llm := scripted.NewSequence("m")
	ag, err := llmagent.New(llmagent.Config{Name: "root", Model: llm})
	if err != nil {
		t.Fatal(err)
	}
	metrics := []*eval.Metric{{MetricName: eval.ResponseMatchMetric}, nil}
	rep, err := eval.Run(context.Background(), &eval.Set{EvalSetID: "s", EvalCases: []*eval.Case{weatherCase("a", "Paris", "x")}}, eval.Options{Runner: newRunner(t, ag), Metrics: metrics})
	if err == nil || !strings.Contains(err.Error(), "Metrics[1] is nil") {
		t.Errorf("Run with a nil metric: %v, %v", rep, err)
	}
}

// TestRunScenarioSimulatorByName opens the simulator the config names.
func TestRunScenarioSimulatorByName(t *testing.T) {
	ag, err := assistant.New(assistant.Offline())
	if err != nil {
		t.Fatal(err)
	}
	sim := scripted.NewSequence("sim-model", scripted.Turn{Text: eval.StopSignal})
	var asked []string
	c := &eval.Case{EvalID: "one", ConversationScenario: &eval.Scenario{StartingPrompt: "add 1 and 2", ConversationPlan: "Ask one sum."}}
	rep, err := eval.Run(context.Background(), &eval.Set{EvalSetID: "s", EvalCases: []*eval.Case{c}}, eval.Options{
		Runner: newRunner(t, ag), Simulator: &eval.SimulatorConfig{Model: "sim-model", MaxAllowedInvocations: 3},
		Models: func(_ context.Context, name string) (model.LLM, error) {
			asked = append(asked, name)
			return sim, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	run := rep.Result.EvalCaseResults[0]
	if len(asked) != 1 || asked[0] != "sim-model" || len(run.EvalMetricResultPerInvocation) != 1 {
		t.Fatalf("asked %v, %d turns", asked, len(run.EvalMetricResultPerInvocation))
	}
	if got := model.Text(run.EvalMetricResultPerInvocation[0].ActualInvocation.FinalResponse, "\n"); got != "The sum is 3." {
		t.Errorf("answer %q", got)
	}
	if !strings.Contains(string(run.SessionDetails), `"text":"add 1 and 2"`) {
		t.Errorf("session details: %s", run.SessionDetails)
	}
}

// TestResultIDBounded checks that a result id stays within what stores
// keep, as valid UTF-8, whatever the lengths of the app name and set id,
// that long ids of different sets differ, and that short ones are ADK's.
func TestResultIDBounded(t *testing.T) {
	at := time.Unix(1700000000, 123456000)
	if got := eval.ResultID("app", "smoke", at); got != "app_smoke_1700000000.123456" {
		t.Errorf("short id %q", got)
	}
	app := strings.Repeat("é", 64) // 128 bytes
	a := eval.ResultID(app, strings.Repeat("s", 199)+"a", at)
	b := eval.ResultID(app, strings.Repeat("s", 199)+"b", at)
	for _, id := range []string{a, b} {
		if len(id) > 180 || !utf8.ValidString(id) || !strings.HasSuffix(id, "_1700000000.123456") {
			t.Errorf("long id %q: %d bytes, valid UTF-8 %v", id, len(id), utf8.ValidString(id))
		}
	}
	if a == b {
		t.Errorf("the results of two sets share the id %q", a)
	}
	st := eval.NewDirStore(t.TempDir())
	if err := st.SaveResult(t.Context(), "app", &eval.SetResult{EvalSetResultID: a, EvalSetID: "s"}); err != nil {
		t.Errorf("a store cannot keep the longest id: %v", err)
	}
}

// TestRunDeletesSessions checks Options.DeleteSessions: each case's
// session is gone once its run is scored, the result still holds the
// session's details, and without the option the sessions stay.
//
// (CONFORMANCE Q3)
func TestRunDeletesSessions(t *testing.T) {
	ag, err := assistant.New(assistant.Offline())
	if err != nil {
		t.Fatal(err)
	}
	set := &eval.Set{EvalSetID: "s", EvalCases: []*eval.Case{weatherCase("a", "Paris", "x"), weatherCase("b", "Oslo", "y")}}
	for _, del := range []bool{true, false} {
		r := newRunner(t, ag)
		rep, err := eval.Run(t.Context(), set, eval.Options{Runner: r, DeleteSessions: del})
		if err != nil {
			t.Fatal(err)
		}
		for _, cr := range rep.Result.EvalCaseResults {
			if !strings.Contains(string(cr.SessionDetails), "Paris") && !strings.Contains(string(cr.SessionDetails), "Oslo") {
				t.Errorf("delete %v: case %s has no session details: %.200s", del, cr.EvalID, cr.SessionDetails)
			}
		}
		res, err := r.Sessions().List(t.Context(), "app", eval.DefaultUserID, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 0, false: 2}[del]; len(res.Sessions) != want {
			t.Errorf("DeleteSessions %v: %d sessions left, want %d", del, len(res.Sessions), want)
		}
	}
}
