// Package preloadmemorytool provides the preload_memory tool: before every
// model call of the agent that has it, it searches the user's long-term
// memory (the runner's memory service) with the text of the current user
// message and adds what it finds to the system instruction. The model never
// calls it; unlike load_memory, recall does not depend on the model asking.
package preloadmemorytool

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/tool"
)

// Name is the tool's name.
const Name = "preload_memory"

// Tool is the preload_memory tool. The zero value is ready to use.
type Tool struct {
	// Limit is the maximum number of memories added; zero means the memory
	// service's default.
	Limit int
}

var _ tool.RequestProcessor = (*Tool)(nil)

// New returns the preload_memory tool.
func New() *Tool { return &Tool{} }

// Name implements tool.Tool.
func (*Tool) Name() string { return Name }

// Description implements tool.Tool.
func (*Tool) Description() string {
	return "Adds memories of past conversations that match the user's message to the instruction."
}

// ProcessRequest implements tool.RequestProcessor. A missing memory
// service is an error.
func (t *Tool) ProcessRequest(ctx context.Context, tc tool.Context, req *model.Request) error {
	query := model.Text(tc.UserContent(), " ")
	if strings.TrimSpace(query) == "" {
		return nil
	}
	entries, err := tc.SearchMemory(ctx, query)
	if err != nil {
		return fmt.Errorf("preload_memory: %w", err)
	}
	if t.Limit > 0 && len(entries) > t.Limit {
		entries = entries[:t.Limit]
	}
	var b strings.Builder
	for _, e := range entries {
		s := e.Text()
		if s == "" {
			continue
		}
		if !e.Timestamp.IsZero() {
			fmt.Fprintf(&b, "[%s] ", e.Timestamp.UTC().Format(time.RFC3339))
		}
		fmt.Fprintf(&b, "%s: %s\n", e.Author, s)
	}
	if b.Len() == 0 {
		return nil
	}
	instr := "Here is what you remember from earlier conversations with this user. Use it when it helps; " +
		"it may be out of date.\n<memories>\n" + b.String() + "</memories>"
	if req.Config == nil {
		req.Config = &genai.GenerateContentConfig{}
	}
	if si := req.Config.SystemInstruction; si != nil {
		parts := append([]*genai.Part(nil), si.Parts...)
		req.Config.SystemInstruction = &genai.Content{Role: si.Role, Parts: append(parts, &genai.Part{Text: instr})}
	} else {
		req.Config.SystemInstruction = genai.NewContentFromText(instr, genai.RoleUser)
	}
	return nil
}
