package cli_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/examples/assistant"
)

// TestServeMCP: "loom api --mcp" serves every app as an MCP server at
// /mcp/APP, whose one tool runs the agent; without the flag nothing is
// there.
func TestServeMCP(t *testing.T) {
	for _, withFlag := range []bool{true, false} {
		ctx, cancel := context.WithCancel(context.Background())
		urls := make(chan string, 1)
		done := make(chan int, 1)
		args := []string{"api", "--port", "0", "--sessions", "memory://", "--artifacts", "memory://"}
		if withFlag {
			args = append(args, "--mcp")
		}
		var stderr bytes.Buffer
		go func() {
			done <- cli.Run(ctx, args, cli.Env{Stdout: io.Discard, Stderr: &stderr, Getenv: noEnv, Listening: func(u string) { urls <- u }},
				cli.App{Name: "assistant", New: assistant.New, Offline: assistant.Offline})
		}()
		url := <-urls + cli.MCPPath("assistant")
		if !withFlag {
			resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Errorf("without --mcp: %s answers %d, want 404", url, resp.StatusCode)
			}
			cancel()
			<-done
			continue
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "assistant", Arguments: map[string]any{"request": "add 2 and 3"}})
		if err != nil {
			t.Fatal(err)
		}
		if txt := res.Content[0].(*mcp.TextContent).Text; res.IsError || !strings.Contains(txt, "5") {
			t.Errorf("answer %q (error %v), want the sum", txt, res.IsError)
		}
		if !strings.Contains(stderr.String(), "MCP server assistant at "+url) {
			t.Errorf("stderr %q does not announce the MCP server", stderr.String())
		}
		cs.Close()
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("exit code %d", code)
		}
	}
}
