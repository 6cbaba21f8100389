// Package exampletool provides ADK's ExampleTool: few-shot examples of
// user queries and model answers, added to the system instruction of
// every request of the agent that has the tool. The model never calls it.
//
// The text is ADK's, so requests match what ADK sends for the same
// examples:
//
//	<EXAMPLES>
//	Begin few-shot
//	The following are examples of user queries and model responses using the available tools.
//
//	EXAMPLE 1:
//	Begin example
//	[user]
//	What is 2+2?
//	[model]
//	4
//	End example
//
//	End few-shot
//	<EXAMPLES>
//
// A function call in an answer is written as name(arg='text', n=1) in a
// fenced block, and a function response as the dict of its id, name and
// response, both as Python writes them (event.PythonRepr).
package exampletool

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/tool"
)

// Name is the tool's name, as ADK names it.
const Name = "example_tool"

// Example is one few-shot example: a user query and the contents that
// answered it.
type Example struct {
	// Input is the user's query; the text of its parts is used.
	Input *genai.Content `json:"input"`
	// Output is the answer: model contents (text, function calls) and the
	// user contents between them (function responses).
	Output []*genai.Content `json:"output"`
}

// Tool adds its examples to requests. It is immutable and safe for
// concurrent use.
type Tool struct{ examples []Example }

var _ tool.RequestProcessor = (*Tool)(nil)

// New returns a tool holding examples.
func New(examples []Example) *Tool { return &Tool{examples: slices.Clone(examples)} }

// Name implements tool.Tool.
func (*Tool) Name() string { return Name }

// Description implements tool.Tool.
func (*Tool) Description() string { return "example tool" }

// ProcessRequest implements tool.RequestProcessor: when the invocation's
// user message starts with text, as ADK requires, it appends the examples
// to the system instruction.
func (t *Tool) ProcessRequest(_ context.Context, tc tool.Context, req *model.Request) error {
	uc := tc.UserContent()
	if uc == nil || len(uc.Parts) == 0 || uc.Parts[0] == nil || uc.Parts[0].Text == "" {
		return nil
	}
	req.AppendInstructions(Text(t.examples, req.Model))
	return nil
}

// Text returns the instruction text of examples for a model: ADK writes
// function calls in a plain fenced block for Gemini 2 models (and when the
// model is unknown), in tool_code and tool_outputs blocks otherwise.
func Text(examples []Example, modelName string) string {
	var b strings.Builder
	b.WriteString("<EXAMPLES>\nBegin few-shot\nThe following are examples of user queries and model responses using the available tools.\n\n")
	gemini2 := modelName == "" || strings.Contains(modelName, "gemini-2")
	callOpen, respOpen := "```tool_code\n", "```tool_outputs\n"
	if gemini2 {
		callOpen, respOpen = "```\n", "```\n"
	}
	for i, ex := range examples {
		b.WriteString("EXAMPLE " + strconv.Itoa(i+1) + ":\nBegin example\n[user]\n")
		if ex.Input != nil && len(ex.Input.Parts) > 0 {
			var texts []string
			for _, p := range ex.Input.Parts {
				if p != nil && p.Text != "" {
					texts = append(texts, p.Text)
				}
			}
			b.WriteString(strings.Join(texts, "\n") + "\n")
		}
		prev := ""
		for _, c := range ex.Output {
			if c == nil {
				continue
			}
			role := "[user]\n"
			if c.Role == genai.RoleModel {
				role = "[model]\n"
			}
			if role != prev {
				b.WriteString(role)
			}
			prev = role
			for _, p := range c.Parts {
				switch {
				case p == nil:
				case p.FunctionCall != nil:
					b.WriteString(callOpen + callText(p.FunctionCall) + "\n```\n")
				case p.FunctionResponse != nil:
					fr := p.FunctionResponse
					var id any
					if fr.ID != "" {
						id = fr.ID
					}
					b.WriteString(respOpen + event.PythonRepr(map[string]any{"id": id, "name": fr.Name, "response": fr.Response}) + "\n```\n")
				case p.Text != "":
					b.WriteString(p.Text + "\n")
				}
			}
		}
		b.WriteString("End example\n\n")
	}
	b.WriteString("End few-shot\n<EXAMPLES>")
	return b.String()
}

// callText writes a call as name(key='text', key=value), keys sorted.
func callText(fc *genai.FunctionCall) string {
	keys := make([]string, 0, len(fc.Args))
	for k := range fc.Args {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	args := make([]string, len(keys))
	for i, k := range keys {
		if s, ok := fc.Args[k].(string); ok {
			args[i] = k + "='" + s + "'"
		} else {
			args[i] = k + "=" + event.PythonRepr(fc.Args[k])
		}
	}
	return fc.Name + "(" + strings.Join(args, ", ") + ")"
}
