package mcptool_test

import (
	"context"
	"fmt"
	"github.com/loomkit/loom/tool"
	"log"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomkit/loom/tool/mcptool"
)

// This example serves an MCP server in-process and uses its tools. A real
// deployment sets Command (stdio) or URL (streamable HTTP) instead of
// Transport, and passes the toolset to an LLM agent through
// llmagent.Config.Toolsets.
func Example() {
	server := mcp.NewServer(&mcp.Implementation{Name: "words", Version: "v1"}, nil)
	type args struct {
		Text string `json:"text" jsonschema:"the text to shout"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "shout", Description: "Upper-cases a text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.ToUpper(in.Text)}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "whisper", Description: "Lower-cases a text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.ToLower(in.Text)}}}, nil, nil
		})

	ts, err := mcptool.New(mcptool.Config{
		Name: "words",
		// Every (re)connection gets a fresh in-memory pipe to the server.
		Transport: func(ctx context.Context) (mcp.Transport, error) {
			client, srv := mcp.NewInMemoryTransports()
			if _, err := server.Connect(ctx, srv, nil); err != nil {
				return nil, err
			}
			return client, nil
		},
		ToolNames: []string{"shout"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer ts.Close()

	ctx := context.Background()
	tools, err := ts.Tools(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range tools {
		fmt.Printf("%s: %s\n", t.Name(), t.Description())
	}
	res, err := tools[0].(tool.Function).Run(ctx, nil, map[string]any{"text": "hello"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res)
	// Output:
	// shout: Upper-cases a text.
	// map[result:HELLO]
}
