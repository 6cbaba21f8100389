// Package loadartifactstool provides the load_artifacts tool, with which an
// LLM agent lists the session's artifacts and reads them: text artifacts
// (and inline data of a text/* type) come back as text; for other data the
// model gets the MIME type and size.
package loadartifactstool

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/loomkit/loom/artifact"
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
func New() (tool.Tool, error) {
	return functiontool.New(functiontool.Config{
		Name: Name,
		Description: "Lists the files (artifacts) saved in this conversation, or reads the named ones. " +
			"Call it with no names to see what is available.",
	}, load)
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
				l.Note = "binary content is not shown"
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
