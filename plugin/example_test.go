package plugin_test

import (
	"fmt"

	"github.com/loomkit/loom/plugin"
)

// Give the plugin to a runner that has a memory service: the events of
// each invocation are remembered when it ends.
func ExampleAddSessionToMemory() {
	p := plugin.AddSessionToMemory()
	fmt.Println(p.Name, p.AfterAgents != nil)
	// Output:
	// add_session_to_memory true
}
