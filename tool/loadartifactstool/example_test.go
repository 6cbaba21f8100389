package loadartifactstool_test

import (
	"fmt"

	"github.com/loomkit/loom/tool/loadartifactstool"
)

// Give the tool to an LLM agent whose runner has an artifact service; the
// model calls it with no names to list the session's artifacts, then with
// the names it wants to read.
func ExampleNew() {
	la, _ := loadartifactstool.New()
	fmt.Println(la.Name())
	// Output:
	// load_artifacts
}
