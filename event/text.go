package event

import (
	"strings"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
)

// ContextPrefix starts the user-role content by which an agent is shown
// what other agents said and did, in ADK's words: it is context, not what
// the user typed.
const ContextPrefix = "For context:"

// TypedText returns the text of the latest user-role content of contents
// (a model request's) that the user typed: contents with no text, such as
// function responses, and other agents' turns relayed as context
// ([ContextPrefix]) are passed over.
func TypedText(contents []*genai.Content) string {
	for i := len(contents) - 1; i >= 0; i-- {
		c := contents[i]
		if c == nil || c.Role != genai.RoleUser {
			continue
		}
		if t := model.Text(c, ""); t != "" && !strings.HasPrefix(t, ContextPrefix) {
			return t
		}
	}
	return ""
}
