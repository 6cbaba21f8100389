package model_test

import (
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
)

// TestA14AppendInstructions checks that instructions join the last text of
// the system instruction after a blank line, as ADK's do, without
// changing a part the request shares.
func TestA14AppendInstructions(t *testing.T) {
	var r model.Request
	r.AppendInstructions("one", "", "two")
	shared := r.Config.SystemInstruction.Parts[0]
	r.AppendInstructions("three")
	si := r.Config.SystemInstruction
	if len(si.Parts) != 1 || si.Parts[0].Text != "one\n\ntwo\n\nthree" || si.Role != genai.RoleUser {
		t.Fatalf("system instruction = %+v", si.Parts)
	}
	if shared.Text != "one\n\ntwo" {
		t.Errorf("the earlier part was modified: %q", shared.Text)
	}
	// After a part that is not plain text, the text is a part of its own.
	r.Config.SystemInstruction.Parts = append(r.Config.SystemInstruction.Parts, &genai.Part{InlineData: &genai.Blob{MIMEType: "text/plain", Data: []byte("x")}})
	r.AppendInstructions("four")
	if p := r.Config.SystemInstruction.Parts; len(p) != 3 || p[2].Text != "four" {
		t.Errorf("parts = %+v", p)
	}
}
