package plugin

import (
	"context"
	"fmt"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/artifact"
)

// SaveFilesAsArtifacts returns a plugin that stores the files a user sends
// (inline data parts of the user message) as session artifacts and replaces
// each with a text part naming the artifact followed by a file data part
// referring to it (artifact.URI), so the session stores a short reference
// instead of the bytes and tools can load the file by name. An LLM agent
// puts the file's content back in place of the reference when it calls its
// model, so the model still sees what the user sent (within the agent's
// MaxFileBytes). The artifact is named after the part's display name, or
// "upload_<n>" when it has none; each upload is a new version. Without an
// artifact service the message is left unchanged.
func SaveFilesAsArtifacts() *Plugin {
	return &Plugin{
		Name: "save_files_as_artifacts",
		OnUserMessage: func(ctx context.Context, cc *agent.CallbackContext, msg *genai.Content) (*genai.Content, error) {
			if cc.Invocation().Artifacts() == nil {
				return nil, nil
			}
			var out *genai.Content
			for i, p := range msg.Parts {
				if p == nil || p.InlineData == nil || len(p.InlineData.Data) == 0 {
					if out != nil {
						out.Parts = append(out.Parts, p)
					}
					continue
				}
				if out == nil {
					out = &genai.Content{Role: msg.Role, Parts: make([]*genai.Part, 0, len(msg.Parts)+1)}
					out.Parts = append(out.Parts, msg.Parts[:i]...)
				}
				name := p.InlineData.DisplayName
				if name == "" {
					name = fmt.Sprintf("upload_%d", i)
				}
				v, err := cc.SaveArtifact(ctx, name, p)
				if err != nil {
					return nil, fmt.Errorf("save uploaded file %q: %w", name, err)
				}
				out.Parts = append(out.Parts,
					genai.NewPartFromText(fmt.Sprintf("[Uploaded file saved as artifact %q, version %d]", name, v)),
					&genai.Part{FileData: &genai.FileData{FileURI: artifact.URI(name, v), MIMEType: p.InlineData.MIMEType, DisplayName: name}})
			}
			return out, nil
		},
	}
}
