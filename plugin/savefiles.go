package plugin

import (
	"context"
	"fmt"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
)

// SaveFilesAsArtifacts returns a plugin that stores the files a user sends
// (inline data parts of the user message) as session artifacts and replaces
// each with a text part naming the artifact, so that models see a short
// reference instead of the bytes and tools can load the file by name. The
// artifact is named after the part's display name, or "upload_<n>" when it
// has none; each upload is a new version. Without an artifact service the
// message is left unchanged.
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
					continue
				}
				if out == nil {
					out = &genai.Content{Role: msg.Role, Parts: append([]*genai.Part(nil), msg.Parts...)}
				}
				name := p.InlineData.DisplayName
				if name == "" {
					name = fmt.Sprintf("upload_%d", i)
				}
				v, err := cc.SaveArtifact(ctx, name, p)
				if err != nil {
					return nil, fmt.Errorf("save uploaded file %q: %w", name, err)
				}
				out.Parts[i] = genai.NewPartFromText(fmt.Sprintf("[Uploaded file saved as artifact %q, version %d]", name, v))
			}
			return out, nil
		},
	}
}
