package preloadmemorytool_test

import (
	"fmt"
	"github.com/loomkit/loom/tool"

	"github.com/loomkit/loom/tool/preloadmemorytool"
)

// The tool is not declared to the model: it works on the request before
// every model call. Give it to an LLM agent whose runner has a memory
// service.
func ExampleNew() {
	t := preloadmemorytool.New()
	_, callable := any(t).(tool.Function)
	fmt.Println(t.Name(), callable)
	// Output:
	// preload_memory false
}
