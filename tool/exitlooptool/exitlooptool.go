// Package exitlooptool provides the exit_loop tool, with which an LLM agent
// inside a loop agent (agent/workflowagent.Loop) ends the loop.
//
// The tool takes no arguments. Its response event escalates
// (event.Actions.Escalate) and skips summarization, so the LLM agent stops
// after it and the enclosing loop stops once the event has been committed.
package exitlooptool

import (
	"context"

	"google.golang.org/genai"

	"github.com/loomkit/loom/tool"
)

// Name is the function name of the tool.
const Name = "exit_loop"

const description = "Exits the loop.\n\n  Call this function only when you are instructed to do so.\n  "

// Tool is the exit_loop tool. It is stateless and safe for concurrent use.
// Create it with New.
type Tool struct{}

var _ tool.Function = (*Tool)(nil)

// New returns the exit_loop tool.
func New() *Tool { return &Tool{} }

// Name implements tool.Tool; it returns "exit_loop".
func (*Tool) Name() string { return Name }

// Description implements tool.Tool.
func (*Tool) Description() string { return description }

// Declaration implements tool.Function: a function without parameters, in
// ADK's words, whose result has no declared type.
func (*Tool) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{
		Name:        Name,
		Description: description,
		Response:    &genai.Schema{},
	}
}

// Run implements tool.Function: it marks the response event as escalating and
// final, and returns ADK's null result, {"result": null}.
func (*Tool) Run(_ context.Context, tc tool.Context, _ map[string]any) (map[string]any, error) {
	a := tc.Actions()
	a.Escalate = true
	a.SkipSummarization = true
	return map[string]any{"result": nil}, nil
}
