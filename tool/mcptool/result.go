package mcptool

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genai"

	"github.com/loomkit/loom/tool"
)

// ToolError is the error of a call whose result the server flagged with
// isError: the tool ran and reported a failure.
type ToolError struct {
	// Tool is the MCP name of the tool.
	Tool string
	// Text is the text content of the result.
	Text string
}

// Error implements error: the tool's name and the text of its result.
func (e *ToolError) Error() string {
	if e.Text == "" {
		return fmt.Sprintf("tool %s failed", e.Tool)
	}
	return fmt.Sprintf("tool %s failed: %s", e.Tool, e.Text)
}

// mcpTool is one MCP tool as a tool.Tool.
type mcpTool struct {
	ts   *Toolset
	name string // MCP name
	decl *genai.FunctionDeclaration
}

var _ tool.Function = (*mcpTool)(nil)

func newTool(ts *Toolset, t *mcp.Tool) *mcpTool {
	return &mcpTool{ts: ts, name: t.Name, decl: &genai.FunctionDeclaration{
		Name:        ts.cfg.NamePrefix + t.Name,
		Description: t.Description,
		Parameters:  geminiSchema(t.InputSchema),
	}}
}

func (t *mcpTool) Name() string                            { return t.decl.Name }
func (t *mcpTool) Description() string                     { return t.decl.Description }
func (t *mcpTool) Declaration() *genai.FunctionDeclaration { return t.decl }

// Run calls the MCP tool with the model's arguments.
func (t *mcpTool) Run(ctx context.Context, _ tool.Context, args map[string]any) (map[string]any, error) {
	if args == nil {
		args = map[string]any{} // a nil map would be sent as null
	}
	var (
		res *mcp.CallToolResult
		rec *sendRecord
	)
	ctx, done := t.ts.callContext(ctx)
	defer done()
	retry := func(err error) bool { return unsent(rec, err) }
	err := t.ts.do(ctx, retry, func(c *conn) error {
		callCtx, r := withSendRecord(ctx)
		rec = r
		var err error
		res, err = c.cs.CallTool(callCtx, &mcp.CallToolParams{Name: t.name, Arguments: args})
		return err
	})
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, ErrClosed) {
			err = fmt.Errorf("%w: %w", cause, err)
		} else if errors.Is(cause, context.DeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: %w", cause, err)
		}
		return nil, fmt.Errorf("mcptool: %s: call %s: %w", t.ts.cfg.Name, t.name, err)
	}
	if res.IsError {
		return nil, &ToolError{Tool: t.name, Text: joinText(res.Content)}
	}
	return resultMap(res), nil
}

// resultMap converts a successful call result into a function response.
func resultMap(res *mcp.CallToolResult) map[string]any {
	out := map[string]any{}
	if res.StructuredContent != nil {
		if m, ok := res.StructuredContent.(map[string]any); ok {
			out = maps.Clone(m)
		} else {
			out["result"] = res.StructuredContent
		}
	} else if text := joinText(res.Content); text != "" || !hasMedia(res.Content) {
		out["result"] = text
	}
	var images, audio, resources []any
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.ImageContent:
			images = append(images, media(c.MIMEType, c.Data))
		case *mcp.AudioContent:
			audio = append(audio, media(c.MIMEType, c.Data))
		case *mcp.ResourceLink:
			resources = append(resources, compact(map[string]any{
				"uri": c.URI, "name": c.Name, "mimeType": c.MIMEType, "description": c.Description,
			}))
		case *mcp.EmbeddedResource:
			if r := c.Resource; r != nil {
				m := map[string]any{"uri": r.URI, "mimeType": r.MIMEType, "text": r.Text}
				if len(r.Blob) > 0 {
					m["data"] = base64.StdEncoding.EncodeToString(r.Blob)
				}
				resources = append(resources, compact(m))
			}
		}
	}
	// Structured content is the tool's own object: media never replace its
	// keys.
	put := func(key string, list []any) {
		if _, taken := out[key]; len(list) > 0 && !taken {
			out[key] = list
		}
	}
	put("images", images)
	put("audio", audio)
	put("resources", resources)
	return out
}

// joinText joins the text blocks of a result with newlines.
func joinText(content []mcp.Content) string {
	var texts []string
	for _, c := range content {
		if t, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, t.Text)
		}
	}
	return strings.Join(texts, "\n")
}

func hasMedia(content []mcp.Content) bool {
	for _, c := range content {
		if _, ok := c.(*mcp.TextContent); !ok {
			return true
		}
	}
	return false
}

func media(mimeType string, data []byte) map[string]any {
	return map[string]any{"mimeType": mimeType, "data": base64.StdEncoding.EncodeToString(data)}
}

// compact removes empty string values.
func compact(m map[string]any) map[string]any {
	maps.DeleteFunc(m, func(_ string, v any) bool { return v == "" })
	return m
}
