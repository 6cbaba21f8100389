package builtintool_test

import (
	"fmt"
	"github.com/loomkit/loom/tool"

	"github.com/loomkit/loom/tool/builtintool"
)

// Give the tools to an LLM agent like any other; they add themselves to
// each request instead of being declared as functions.
func ExampleGoogleSearch() {
	for _, t := range []*builtintool.Tool{builtintool.GoogleSearch(), builtintool.URLContext()} {
		gt := t.GenaiTool()
		_, callable := any(t).(tool.Function)
		fmt.Println(t.Name(), callable, gt.GoogleSearch != nil, gt.URLContext != nil, gt.CodeExecution != nil)
	}
	// Output:
	// google_search false true false false
	// url_context false false true false
}
