package functiontool

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/genai"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/tool"
)

// ErrInvalidMedia is wrapped by the error of a [Media] result that cannot
// be sent: a part without inline or file data, one without a MIME type, or
// an artifact that is missing or not media.
var ErrInvalidMedia = errors.New("invalid media")

// Media is a tool result that gives the model images, audio or files
// besides a JSON object. A function returns it (or *Media) as its Result;
// the LLM agent puts the media into the function response's Parts, and the
// model adapters pass them on as their provider allows (see the README's
// "Tools that return media").
type Media struct {
	// Response is the JSON part of the function response, encoded like any
	// other result; nil gives an empty object.
	Response any
	// Parts are the media: parts with InlineData or FileData, each with a
	// MIME type.
	Parts []*genai.Part
	// Artifacts names artifacts of the session whose latest versions are
	// attached after Parts, one saved earlier in this call included.
	Artifacts []string
}

var _ tool.MediaTool = (*Tool[struct{}, Media])(nil)

// RunMedia implements tool.MediaTool: Run, with the media of a [Media]
// result as function response parts.
func (t *Tool[Args, Result]) RunMedia(ctx context.Context, tc tool.Context, args map[string]any) (map[string]any, []*genai.FunctionResponsePart, error) {
	in, err := t.decode(args)
	if err != nil {
		return nil, nil, err
	}
	out, err := t.call(ctx, tc, in)
	if err != nil {
		return nil, nil, err
	}
	var v any = out
	var parts []*genai.FunctionResponsePart
	m, isMedia := mediaOf(v)
	if isMedia {
		if parts, err = m.responseParts(ctx, tc); err != nil {
			return nil, nil, fmt.Errorf("tool %q: %w", t.cfg.Name, err)
		}
		v = m.Response
		if v == nil {
			v = map[string]any{}
		}
	}
	res, err := encodeResult(v)
	if err != nil {
		return nil, nil, fmt.Errorf("tool %q: encode result: %w", t.cfg.Name, err)
	}
	return res, parts, nil
}

// mediaOf reports whether a result is a Media (a nil *Media is not).
func mediaOf(v any) (*Media, bool) {
	switch m := v.(type) {
	case Media:
		return &m, true
	case *Media:
		return m, m != nil
	}
	return nil, false
}

// responseParts converts the media to function response parts, loading the
// named artifacts.
func (m *Media) responseParts(ctx context.Context, tc tool.Context) ([]*genai.FunctionResponsePart, error) {
	out := make([]*genai.FunctionResponsePart, 0, len(m.Parts)+len(m.Artifacts))
	for i, p := range m.Parts {
		fp, err := responsePart(p)
		if err != nil {
			return nil, fmt.Errorf("%w: part %d: %v", ErrInvalidMedia, i, err)
		}
		out = append(out, fp)
	}
	for _, name := range m.Artifacts {
		if tc == nil {
			return nil, fmt.Errorf("%w: artifact %q: no tool context", ErrInvalidMedia, name)
		}
		p, err := tc.LoadArtifact(ctx, name, artifact.Latest)
		if err != nil {
			return nil, fmt.Errorf("%w: artifact %q: %w", ErrInvalidMedia, name, err)
		}
		fp, err := responsePart(p)
		if err != nil {
			return nil, fmt.Errorf("%w: artifact %q: %v", ErrInvalidMedia, name, err)
		}
		if fp.InlineData != nil && fp.InlineData.DisplayName == "" {
			fp.InlineData.DisplayName = name
		}
		out = append(out, fp)
	}
	return out, nil
}

// responsePart converts a media part; the bytes are shared, not copied.
func responsePart(p *genai.Part) (*genai.FunctionResponsePart, error) {
	switch {
	case p == nil:
		return nil, errors.New("nil part")
	case p.InlineData != nil && p.FileData == nil:
		if p.InlineData.MIMEType == "" {
			return nil, errors.New("inline data without a MIME type")
		}
		b := p.InlineData
		return &genai.FunctionResponsePart{InlineData: &genai.FunctionResponseBlob{
			MIMEType: b.MIMEType, Data: b.Data, DisplayName: b.DisplayName}}, nil
	case p.FileData != nil && p.InlineData == nil:
		if p.FileData.MIMEType == "" || p.FileData.FileURI == "" {
			return nil, errors.New("file data without a URI or a MIME type")
		}
		f := p.FileData
		return &genai.FunctionResponsePart{FileData: &genai.FunctionResponseFileData{
			FileURI: f.FileURI, MIMEType: f.MIMEType, DisplayName: f.DisplayName}}, nil
	}
	return nil, errors.New("a media part needs inline data or file data (text belongs in Response)")
}
