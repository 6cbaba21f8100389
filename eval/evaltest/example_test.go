package evaltest_test

import (
	"context"
	"fmt"

	"github.com/loomkit/loom/eval"
	"github.com/loomkit/loom/eval/evaltest"
	"github.com/loomkit/loom/examples/assistant"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// What a failing case reports: its scores, then the expected (-) and
// actual (+) tool calls and responses of each invocation.
func ExampleExplain() {
	ag, _ := assistant.New(assistant.Offline())
	r, _ := runner.New(runner.Config{AppName: "assistant", Agent: ag, Sessions: session.NewService(memsession.New(), nil)})
	set, _ := eval.ParseSet([]byte(`{"eval_set_id": "sums", "eval_cases": [{"eval_id": "sum", "conversation": [{
	  "user_content": {"parts": [{"text": "add 2 and 3"}]},
	  "final_response": {"parts": [{"text": "The sum is 6."}]},
	  "intermediate_data": {"tool_uses": [{"name": "add", "args": {"a": 2, "b": 4}}]}}]}]}`))
	rep, _ := eval.Run(context.Background(), set, eval.Options{Runner: r})
	fmt.Println(evaltest.Explain("sums.evalset.json", rep.Cases[0]))
	// Output:
	// sums.evalset.json: eval case sum FAILED
	//   response_match_score: 0.750 (threshold 0.800) FAILED
	//   tool_trajectory_avg_score: 0.000 (threshold 1.000) FAILED
	//   run 1 (- expected, + actual):
	//   invocation 1
	//      user: add 2 and 3
	//    - tools: add{"a":2,"b":4}
	//    + tools: add{"a":2,"b":3}
	//    - response: The sum is 6.
	//    + response: The sum is 5.
}
