package adkagents_test

import (
	"fmt"

	"github.com/loomkit/loom/agent/agentconfig"
	"github.com/loomkit/loom/conformance/adkagents"
)

// Register makes the names the suite's YAML files use loadable.
func ExampleRegister() {
	reg := adkagents.Register(agentconfig.NewRegistry())
	fmt.Println(reg != nil)
	// Output: true
}
