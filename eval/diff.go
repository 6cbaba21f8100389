package eval

import (
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/genai"
)

// Diff describes an expected and an actual invocation side by side: the
// user's message, then the tool calls and final response of each, each
// line marked "-" (expected) and "+" (actual), or " " where both agree.
// Either invocation may be nil.
func Diff(expected, actual *Invocation) string {
	var b strings.Builder
	user := expected
	if user == nil {
		user = actual
	}
	if user != nil {
		fmt.Fprintf(&b, "   user: %s\n", oneLine(textOf(user.UserContent)))
	}
	var expCalls, actCalls []*genai.FunctionCall
	var expText, actText string
	if expected != nil {
		expCalls, expText = expected.IntermediateData.ToolCalls(), textOf(expected.FinalResponse)
	}
	if actual != nil {
		actCalls, actText = actual.IntermediateData.ToolCalls(), textOf(actual.FinalResponse)
	}
	e, a := callLines(expCalls), callLines(actCalls)
	if strings.Join(e, "\n") == strings.Join(a, "\n") {
		for _, l := range e {
			fmt.Fprintf(&b, "   tool: %s\n", l)
		}
	} else {
		if expected != nil {
			fmt.Fprintf(&b, " - tools: %s\n", orNone(e))
		}
		fmt.Fprintf(&b, " + tools: %s\n", orNone(a))
	}
	if expected != nil && oneLine(expText) != oneLine(actText) {
		fmt.Fprintf(&b, " - response: %s\n", oneLine(expText))
		fmt.Fprintf(&b, " + response: %s\n", oneLine(actText))
	} else {
		fmt.Fprintf(&b, "   response: %s\n", oneLine(actText))
	}
	return b.String()
}

func callLines(calls []*genai.FunctionCall) []string {
	var out []string
	for _, c := range calls {
		args, _ := json.Marshal(c.Args)
		if c.Args == nil {
			args = []byte("{}")
		}
		out = append(out, c.Name+string(args))
	}
	return out
}

func orNone(lines []string) string {
	if len(lines) == 0 {
		return "(none)"
	}
	return strings.Join(lines, ", ")
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
