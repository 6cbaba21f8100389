// Package loadmemorytool provides the load_memory tool, with which an LLM
// agent searches the user's long-term memory (the memory service of the
// runner) for what past conversations said.
package loadmemorytool

import (
	"context"
	"fmt"
	"time"

	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// Name is the tool's function name.
const Name = "load_memory"

// Args are the tool's arguments.
type Args struct {
	Query string `json:"query" jsonschema:"words to look for in past conversations"`
}

// Memory is one remembered piece of a past conversation.
type Memory struct {
	Author    string `json:"author"`
	Timestamp string `json:"timestamp,omitempty"`
	Text      string `json:"text"`
}

// Result is what the model receives.
type Result struct {
	Memories []Memory `json:"memories"`
}

// New returns the load_memory tool. It fails at run time with a clear error
// when the runner has no memory service.
func New() (tool.Function, error) {
	return functiontool.New(functiontool.Config{
		Name: Name,
		Description: "Searches the user's memory of past conversations. Call it when the answer may depend on " +
			"something the user said or did in an earlier conversation.",
	}, load)
}

func load(ctx context.Context, tc tool.Context, args Args) (Result, error) {
	entries, err := tc.SearchMemory(ctx, args.Query)
	if err != nil {
		return Result{}, fmt.Errorf("load_memory: %w", err)
	}
	res := Result{Memories: make([]Memory, 0, len(entries))}
	for _, e := range entries {
		m := Memory{Author: e.Author, Text: e.Text()}
		if !e.Timestamp.IsZero() {
			m.Timestamp = e.Timestamp.UTC().Format(time.RFC3339)
		}
		res.Memories = append(res.Memories, m)
	}
	return res, nil
}
