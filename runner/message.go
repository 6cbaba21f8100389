package runner

import (
	"fmt"

	"google.golang.org/genai"
)

// checkMessage rejects a new message the runner cannot store as the user's
// turn: one with no parts, a part that is missing or carries nothing, or a
// role other than the user's. It fails with an error wrapping ErrInvalid.
func checkMessage(msg *genai.Content) error {
	if msg == nil || len(msg.Parts) == 0 {
		return fmt.Errorf("%w: the new message is empty", ErrInvalid)
	}
	if msg.Role != "" && msg.Role != genai.RoleUser {
		return fmt.Errorf("%w: the new message has role %q; only %q may send one", ErrInvalid, msg.Role, genai.RoleUser)
	}
	for i, p := range msg.Parts {
		if p == nil || emptyPart(p) {
			return fmt.Errorf("%w: part %d of the new message is empty", ErrInvalid, i)
		}
	}
	return nil
}

// emptyPart reports whether a part carries no content of any kind.
func emptyPart(p *genai.Part) bool {
	return p.Text == "" && p.InlineData == nil && p.FileData == nil &&
		p.FunctionCall == nil && p.FunctionResponse == nil &&
		p.ExecutableCode == nil && p.CodeExecutionResult == nil &&
		p.ToolCall == nil && p.ToolResponse == nil && p.VideoMetadata == nil &&
		p.AudioTranscription == nil
}
