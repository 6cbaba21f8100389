package plugin_test

import (
	"fmt"

	"github.com/loomkit/loom/plugin"
)

// Give the plugin to a runner that has a memory service: every session is
// remembered after each invocation.
func ExampleAddSessionToMemory() {
	p := plugin.AddSessionToMemory()
	fmt.Println(p.Name, p.AfterAgents != nil)
	// Output:
	// add_session_to_memory true
}
