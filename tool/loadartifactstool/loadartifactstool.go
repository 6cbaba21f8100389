// Package loadartifactstool provides the load_artifacts tool, with which an
// LLM agent lists the session's artifacts and reads them: text artifacts
// (and inline data of a text/* type) come back as text; for other data the
// function response gives the MIME type and size, and the file itself
// (an image, a PDF) follows the response in the next model request as a
// real part, within the agent's size limit for files.
package loadartifactstool

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genai"

	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// Name is the tool's function name.
const Name = "load_artifacts"

// Args are the tool's arguments.
type Args struct {
	ArtifactNames []string `json:"artifact_names,omitempty" jsonschema:"the names of the artifacts to read; leave empty to list the available artifacts"`
}

// Loaded is one artifact as the model receives it.
type Loaded struct {
	Name     string `json:"name"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Size     int    `json:"size,omitempty"`
	Note     string `json:"note,omitempty"`
}

// Result is what the model receives.
type Result struct {
	Available []string `json:"available,omitempty"`
	Artifacts []Loaded `json:"artifacts,omitempty"`
	Missing   []string `json:"missing,omitempty"`
}

// New returns the load_artifacts tool. It fails at run time with a clear
// error when the runner has no artifact service.
func New() (tool.Function, error) {
	t, err := functiontool.New(functiontool.Config{
		Name: Name,
		Description: "Lists the files (artifacts) saved in this conversation, or reads the named ones. " +
			"Call it with no names to see what is available.",
	}, load)
	if err != nil {
		return nil, err
	}
	return withFiles{t}, nil
}

// withFiles adds the binary artifacts a load_artifacts call just loaded to
// the next request, after the function response.
type withFiles struct{ tool.Function }

// binaryNote is the note of an artifact whose content follows the
// response.
const binaryNote = "the file's content follows as a separate part"

// ProcessRequest implements tool.RequestProcessor: when the request ends
// with load_artifacts responses, a user content with a reference to each
// binary artifact they loaded follows (the agent resolves the references
// into the files' content).
func (withFiles) ProcessRequest(_ context.Context, _ tool.Context, req *model.Request) error {
	if len(req.Contents) == 0 {
		return nil
	}
	last := req.Contents[len(req.Contents)-1]
	if last == nil {
		return nil
	}
	var parts []*genai.Part
	for _, p := range last.Parts {
		if p == nil || p.FunctionResponse == nil || p.FunctionResponse.Name != Name {
			continue
		}
		list, _ := p.FunctionResponse.Response["artifacts"].([]any)
		for _, item := range list {
			a, _ := item.(map[string]any)
			name, _ := a["name"].(string)
			if note, _ := a["note"].(string); name == "" || note != binaryNote {
				continue
			}
			mime, _ := a["mimeType"].(string)
			parts = append(parts, &genai.Part{Text: fmt.Sprintf("Content of file %q:", name)},
				&genai.Part{FileData: &genai.FileData{FileURI: artifact.URI(name, artifact.Latest), MIMEType: mime, DisplayName: name}})
		}
	}
	if len(parts) > 0 {
		req.Contents = append(req.Contents[:len(req.Contents):len(req.Contents)], &genai.Content{Role: genai.RoleUser, Parts: parts})
	}
	return nil
}

func load(ctx context.Context, tc tool.Context, args Args) (Result, error) {
	names, err := tc.ListArtifacts(ctx)
	if err != nil {
		return Result{}, fmt.Errorf("load_artifacts: %w", err)
	}
	if len(args.ArtifactNames) == 0 {
		return Result{Available: names}, nil
	}
	var res Result
	for _, name := range args.ArtifactNames {
		p, err := tc.LoadArtifact(ctx, name, artifact.Latest)
		switch {
		case err != nil && isNotFound(err):
			res.Missing = append(res.Missing, name)
			continue
		case err != nil:
			return Result{}, fmt.Errorf("load_artifacts: %w", err)
		}
		l := Loaded{Name: name, Text: p.Text}
		if d := p.InlineData; d != nil {
			l.MIMEType, l.Size = d.MIMEType, len(d.Data)
			if strings.HasPrefix(d.MIMEType, "text/") || d.MIMEType == "application/json" {
				l.Text = string(d.Data)
			} else {
				l.Note = binaryNote
			}
		}
		res.Artifacts = append(res.Artifacts, l)
	}
	if len(res.Missing) > 0 {
		res.Available = names
	}
	return res, nil
}

func isNotFound(err error) bool {
	return errors.Is(err, artifact.ErrNotFound) || errors.Is(err, artifact.ErrInvalid)
}
