package eval_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"google.golang.org/genai"

	"github.com/loomkit/loom/eval"
	"github.com/loomkit/loom/examples/assistant"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// Run an eval set against an agent and read each case's scores.
func ExampleRun() {
	ag, _ := assistant.New(assistant.Offline())
	r, _ := runner.New(runner.Config{AppName: "assistant", Agent: ag, Sessions: session.NewService(memsession.New(), nil)})
	set, err := eval.ParseSet([]byte(`{
	  "eval_set_id": "arithmetic",
	  "eval_cases": [{
	    "eval_id": "two_plus_three",
	    "conversation": [{
	      "user_content": {"parts": [{"text": "add 2 and 3"}], "role": "user"},
	      "final_response": {"parts": [{"text": "The sum is 5."}], "role": "model"},
	      "intermediate_data": {"tool_uses": [{"name": "add", "args": {"a": 2, "b": 3}}]}
	    }]
	  }]
	}`))
	if err != nil {
		panic(err)
	}
	rep, err := eval.Run(context.Background(), set, eval.Options{Runner: r})
	if err != nil {
		panic(err)
	}
	for _, c := range rep.Cases {
		for _, m := range c.Metrics {
			fmt.Printf("%s %s %.2f %s\n", c.EvalID, m.Name, *m.Score, m.Status)
		}
	}
	// Output:
	// two_plus_three response_match_score 1.00 PASSED
	// two_plus_three tool_trajectory_avg_score 1.00 PASSED
}

// Response match is ROUGE-1 as ADK scores responses: lowercased,
// punctuation dropped, words stemmed ("expected" and "expects" both become
// "expect"), the F-measure of the words shared.
func ExampleResponseMatch() {
	score, _ := eval.ResponseMatch{}.Score(context.Background(), &eval.ScoreInput{
		Actual:   []*eval.Invocation{{FinalResponse: genai.NewContentFromText("Rain is expected today", genai.RoleModel)}},
		Expected: []*eval.Invocation{{FinalResponse: genai.NewContentFromText("The forecast expects rain today", genai.RoleModel)}},
	})
	fmt.Printf("F %.3f\n", *score.Overall)
	// Output: F 0.667
}

// Fields Loom does not know are kept when a set is written back.
func ExampleParseSet() {
	set, _ := eval.ParseSet([]byte(`{"eval_set_id": "s", "owner": "qa", "eval_cases": [
	  {"eval_id": "hi", "conversation": [{"user_content": {"parts": [{"text": "hi"}]}}]}]}`))
	out, _ := set.MarshalJSON()
	fmt.Println(string(out))
	// Output: {"eval_set_id":"s","eval_cases":[{"eval_id":"hi","conversation":[{"user_content":{"parts":[{"text":"hi"}]}}]}],"owner":"qa"}
}

type shortAnswers struct{}

// Score gives 1 to final responses of at most ten words.
func (shortAnswers) Score(_ context.Context, in *eval.ScoreInput) (*eval.Score, error) {
	out := &eval.Score{}
	sum := 0.0
	for _, inv := range in.Actual {
		s := 0.0
		if n := len(strings.Fields(model.Text(inv.FinalResponse, " "))); n <= 10 {
			s = 1
		}
		sum += s
		out.PerInvocation = append(out.PerInvocation, eval.InvocationScore{Score: &s})
	}
	if len(in.Actual) > 0 {
		mean := sum / float64(len(in.Actual))
		out.Overall = &mean
	}
	return out, nil
}

// A metric of your own: register a factory under a name and use the name
// in test_config.json or Options.Metrics.
func ExampleRegistry_Register() {
	reg := eval.NewRegistry()
	reg.Register("short_answers", func(*eval.Criterion, *eval.Env) (eval.Scorer, error) { return shortAnswers{}, nil })
	sc, _ := reg.Scorer(&eval.Metric{MetricName: "short_answers"}, nil)
	score, _ := sc.Score(context.Background(), &eval.ScoreInput{Actual: []*eval.Invocation{
		{UserContent: genai.NewContentFromText("hi", genai.RoleUser), FinalResponse: genai.NewContentFromText("Hello there!", genai.RoleModel)},
	}})
	fmt.Println(*score.Overall)
	// Output: 1
}

// ADK's older eval set form, a list of cases, read like any other.
func ExampleReadSetFile() {
	set, err := eval.ReadSetFile("testdata/adk/shopping.evalset.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range set.EvalCases {
		fmt.Println(c.EvalID, len(c.Conversation), model.Text(c.Conversation[0].UserContent, "\n"))
	}
	// Output:
	// find_mugs 2 Show me blue mugs.
	// no_session 1 Who are you?
}

// An eval config's custom metric runs with the Go scorer registered under
// its name.
func ExampleReadConfig() {
	cfg, err := eval.ReadConfig("testdata/adk/eval_config.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	reg := eval.NewRegistry()
	for _, m := range cfg.Metrics() {
		if m.CustomFunctionPath != "" {
			_, err := reg.Scorer(m, nil)
			fmt.Println(err != nil)
			reg.Register(m.MetricName, func(*eval.Criterion, *eval.Env) (eval.Scorer, error) { return shortAnswers{}, nil })
			_, err = reg.Scorer(m, nil)
			fmt.Println(m.MetricName, m.CustomFunctionPath, err)
		}
	}
	// Output:
	// true
	// order_total_ok shop.metrics.order_total_ok <nil>
}

// Sets in one place, results in another: here two directories.
func ExampleWithResults() {
	dir, _ := os.MkdirTemp("", "evals")
	defer os.RemoveAll(dir)
	sets, results := eval.NewDirStore(dir+"/sets"), eval.NewDirStore(dir+"/results")
	store := eval.WithResults(sets, results)
	ctx := context.Background()
	_ = store.SaveResult(ctx, "assistant", &eval.SetResult{EvalSetResultID: "example_result", EvalSetID: "smoke"})
	_, err := sets.GetResult(ctx, "assistant", "example_result")
	fmt.Println(errors.Is(err, eval.ErrNotFound))
	r, err := results.GetResult(ctx, "assistant", "example_result")
	fmt.Println(r.EvalSetID, err)
	// Output:
	// true
	// smoke <nil>
}
