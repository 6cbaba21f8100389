package agentconfig_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/loomkit/loom/agent/agentconfig"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
)

// everything returns the path of the MCP test server installed by
// scripts/mcp-server.sh, or skips the test (fails it under CI).
func everything(t *testing.T) string {
	t.Helper()
	p := os.Getenv("LOOM_MCP_EVERYTHING")
	if p == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("LOOM_MCP_EVERYTHING is not set; run scripts/mcp-server.sh")
		}
		t.Skip("LOOM_MCP_EVERYTHING is not set; run scripts/mcp-server.sh to install the MCP test server")
	}
	return p
}

// TestMCPToolset loads an agent whose tools are an MCP server's, written
// as in ADK (McpToolset with stdio_server_params, a tool filter and a name
// prefix), and runs a turn that calls one of them.
func TestMCPToolset(t *testing.T) {
	server := everything(t)
	dir := t.TempDir()
	write(t, dir, "root_agent.yaml", fmt.Sprintf(`name: mcp_agent
model: gemini-2.5-flash
instruction: Use the server's tools.
tools:
  - name: MCPToolset
    args:
      stdio_server_params:
        command: %q
        args: ["stdio"]
      tool_filter: [echo, get-sum]
      tool_name_prefix: everything
`, server))
	m := newModels(func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if fr := scripted.LastFunctionResponse(req); len(fr) > 0 {
			return scripted.Text(fmt.Sprint(fr[0].Response)), nil
		}
		return scripted.Call("everything_echo", map[string]any{"message": "hi there"}), nil
	})
	app, err := agentconfig.Load(filepath.Join(dir, "root_agent.yaml"), &agentconfig.Options{Model: m.open})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	if _, ok := app.Root.(*llmagent.Agent); !ok {
		t.Fatalf("root is %T", app.Root)
	}
	got := texts(run(t, app.Root, "echo something"))
	if len(got) != 1 || !strings.Contains(got[0], "Echo: hi there") {
		t.Fatalf("texts = %q", got)
	}
	req := m.byName["gemini-2.5-flash"].Requests()[0]
	var declared []string
	for _, tl := range req.Config.Tools {
		for _, fd := range tl.FunctionDeclarations {
			declared = append(declared, fd.Name)
		}
	}
	slices.Sort(declared)
	if want := []string{"everything_echo", "everything_get-sum"}; !slices.Equal(declared, want) {
		t.Errorf("declared tools = %v, want %v", declared, want)
	}
}

// TestMCPToolsetStreamableHTTP loads an MCP toolset reached over
// streamable HTTP (streamable_http_connection_params, with headers) and
// runs a turn calling one of its tools.
func TestMCPToolsetStreamableHTTP(t *testing.T) {
	server := everything(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	srv := exec.Command(server, "streamableHttp")
	srv.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	stderr, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	sc := bufio.NewScanner(stderr)
	for listening := false; !listening; {
		if !sc.Scan() {
			t.Fatal("the MCP server exited before listening")
		}
		listening = strings.Contains(sc.Text(), "listening on port")
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()

	dir := t.TempDir()
	write(t, dir, "root_agent.yaml", fmt.Sprintf(`name: mcp_agent
model: gemini-2.5-flash
instruction: Use the server's tools.
tools:
  - name: McpToolset
    args:
      streamable_http_connection_params:
        url: http://127.0.0.1:%d/mcp
        headers: {X-Loom-Test: "1"}
        sse_read_timeout: 30
      tool_filter: [get-sum]
`, port))
	m := newModels(func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if fr := scripted.LastFunctionResponse(req); len(fr) > 0 {
			return scripted.Text(fmt.Sprint(fr[0].Response["result"])), nil
		}
		return scripted.Call("get-sum", map[string]any{"a": 2, "b": 40}), nil
	})
	app, err := agentconfig.Load(dir, &agentconfig.Options{Model: m.open})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	got := texts(run(t, app.Root, "add"))
	if len(got) != 1 || !strings.Contains(got[0], "42") {
		t.Fatalf("texts = %q", got)
	}
}
