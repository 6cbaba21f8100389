package advisortool_test

import (
	"fmt"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/advisortool"
)

// An agent on a small model that may consult a larger one twice per turn
// and ten times per conversation.
func Example() {
	advisor, err := advisortool.New(advisortool.Config{
		Model:         scripted.NewSequence("big-model", scripted.Text("Take the train.")),
		MaxPerTurn:    2,
		MaxPerSession: 10,
	})
	if err != nil {
		panic(err)
	}
	agent, err := llmagent.New(llmagent.Config{
		Name:  "planner",
		Model: scripted.NewSequence("small-model", scripted.Text("ok")),
		Tools: []tool.Tool{advisor},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(agent.Name(), "may call", advisor.Name())
	// Output: planner may call consult_advisor
}
