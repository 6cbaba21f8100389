package advisortool_test

import (
	"fmt"
	"log"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/advisortool"
)

// An agent on a small model that may consult a larger one twice per turn
// and ten times per conversation.
func Example() {
	big := scripted.NewSequence("big-model", scripted.Text("Take the train."))
	small := scripted.NewSequence("small-model", scripted.Text("ok"))

	advisor, err := advisortool.New(advisortool.Config{
		Model:         big,
		MaxPerTurn:    2,
		MaxPerSession: 10,
	})
	if err != nil {
		log.Fatal(err)
	}
	a, err := llmagent.New(llmagent.Config{Name: "planner", Model: small, Tools: []tool.Tool{advisor}})
	if err != nil {
		log.Fatal(err)
	}

	fmt.Println(a.Name(), "may call", advisor.Name())
	// Output: planner may call consult_advisor
}
