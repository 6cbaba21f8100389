package llmagent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/model"
)

// DefaultMaxFileBytes is the largest artifact sent to a model as content
// when Config.MaxFileBytes is zero.
const DefaultMaxFileBytes = 10 << 20

// resolveArtifacts replaces the file data parts of contents that refer to
// session artifacts (artifact.URI) with the artifacts' content: inline
// data, or text. An artifact over the size limit, or one that cannot be
// loaded, becomes a text part saying so. Contents it does not change are
// shared. The first skip contents are known to hold no reference and are
// not looked at.
func (a *Agent) resolveArtifacts(ctx context.Context, inv *agent.Invocation, req *model.Request, skip int) error {
	limit := a.cfg.MaxFileBytes
	if limit == 0 {
		limit = DefaultMaxFileBytes
	}
	var out []*genai.Content
	for i := skip; i < len(req.Contents); i++ {
		c := req.Contents[i]
		if c == nil || !hasArtifactRef(c) {
			if out != nil {
				out = append(out, c)
			}
			continue
		}
		if out == nil {
			out = append(make([]*genai.Content, 0, len(req.Contents)), req.Contents[:i]...)
		}
		cp := &genai.Content{Role: c.Role, Parts: make([]*genai.Part, 0, len(c.Parts))}
		for _, p := range c.Parts {
			name, version, ok := artifactRef(p)
			if !ok {
				cp.Parts = append(cp.Parts, p)
				continue
			}
			part, err := a.loadForModel(ctx, inv, name, version, limit)
			if err != nil {
				return err
			}
			cp.Parts = append(cp.Parts, part)
		}
		out = append(out, cp)
	}
	if out != nil {
		req.Contents = out
	}
	return nil
}

// loadForModel returns the part that shows an artifact to the model. Only
// failures of the artifact service itself are errors.
func (a *Agent) loadForModel(ctx context.Context, inv *agent.Invocation, name string, version int64, limit int64) (*genai.Part, error) {
	svc := inv.Artifacts()
	if svc == nil {
		return &genai.Part{Text: fmt.Sprintf("[File %q cannot be shown: no artifact service]", name)}, nil
	}
	s := inv.Session()
	p, err := svc.Load(ctx, artifact.Ref{AppName: s.AppName(), UserID: s.UserID(), SessionID: s.ID(), Name: name}, version)
	switch {
	case errors.Is(err, artifact.ErrNotFound) || errors.Is(err, artifact.ErrInvalid):
		return &genai.Part{Text: fmt.Sprintf("[File %q is not available]", name)}, nil
	case err != nil:
		return nil, fmt.Errorf("llmagent: %s: load file %q for the model: %w", a.Name(), name, err)
	}
	size := int64(len(p.Text))
	if p.InlineData != nil {
		size = int64(len(p.InlineData.Data))
	}
	if limit > 0 && size > limit {
		return &genai.Part{Text: fmt.Sprintf("[File %q is %d bytes, over the %d-byte limit for files shown to the model; it is not shown]", name, size, limit)}, nil
	}
	switch {
	case p.InlineData != nil:
		d := *p.InlineData
		if d.DisplayName == "" {
			d.DisplayName = name
		}
		return &genai.Part{InlineData: &d}, nil
	case p.FileData != nil:
		d := *p.FileData
		return &genai.Part{FileData: &d}, nil
	}
	return &genai.Part{Text: p.Text}, nil
}

func artifactRef(p *genai.Part) (string, int64, bool) {
	if p == nil || p.FileData == nil || !strings.HasPrefix(p.FileData.FileURI, artifact.URIScheme+":") {
		return "", 0, false
	}
	return artifact.ParseURI(p.FileData.FileURI)
}

func hasArtifactRef(c *genai.Content) bool {
	for _, p := range c.Parts {
		if _, _, ok := artifactRef(p); ok {
			return true
		}
	}
	return false
}
