package mcpserver_test

// The MCP server driven by the MCP inspector's command-line client, from
// the npm registry (installed by scripts/mcp-inspector.sh).

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomkit/loom/server/mcpserver"
)

// inspector returns a function running the inspector's CLI against url
// with args, and decoding the JSON it prints; it skips the test (fails it
// under CI) when the inspector is not installed.
func inspector(t *testing.T, url string) func(args ...string) map[string]any {
	t.Helper()
	bin := os.Getenv("LOOM_MCP_INSPECTOR")
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("LOOM_MCP_INSPECTOR is not set; run scripts/mcp-inspector.sh")
		}
		t.Skip("LOOM_MCP_INSPECTOR is not set; run scripts/mcp-inspector.sh to install the MCP inspector's CLI")
	}
	script, err := filepath.EvalSymlinks(bin)
	if err != nil {
		t.Fatal(err)
	}
	// The client is build/index.js beside the launcher; it finds its own
	// package.json relative to the working directory.
	dir := filepath.Dir(script)
	return func(args ...string) map[string]any {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "node", append([]string{filepath.Join(dir, "index.js"), url, "--transport", "http"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("inspector %v: %v\n%s%s", args, err, out, stderr)
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			t.Fatalf("inspector %v printed %s: %v", args, out, err)
		}
		return v
	}
}

// structured decodes the structured content of a tool result printed by
// the inspector.
func structured(t *testing.T, v map[string]any) mcpserver.Result {
	t.Helper()
	b, _ := json.Marshal(v["structuredContent"])
	var r mcpserver.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// The inspector lists the tool, calls the agent, which pauses (it takes
// no elicitation), and answers in a second call of the same session.
func TestInspectorCallPauseAnswer(t *testing.T) {
	_, url := serve(t, mcpserver.Config{Runner: newRunner(t), Authenticate: bearer})
	run := inspector(t, url)
	auth := []string{"--header", "Authorization: Bearer alice"}

	tools := run(append([]string{"--method", "tools/list"}, auth...)...)
	list, _ := tools["tools"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["name"] != "assistant" {
		t.Fatalf("tools/list = %v, want the assistant tool", tools)
	}
	first := structured(t, run(append([]string{"--method", "tools/call", "--tool-name", "assistant", "--tool-arg", "request=email bob@example.com: lunch"}, auth...)...))
	if first.Status != mcpserver.StatusPending || len(first.Pending) != 1 || first.Pending[0].Kind != mcpserver.KindConfirmation {
		t.Fatalf("first call: %+v, want pending on an approval", first)
	}
	answers, _ := json.Marshal(map[string]any{first.Pending[0].ID: "yes"})
	done := structured(t, run(append([]string{"--method", "tools/call", "--tool-name", "assistant", "--tool-arg", "session_id=" + first.SessionID, "answers=" + string(answers)}, auth...)...))
	if done.Status != mcpserver.StatusCompleted || !strings.Contains(done.Response, "Sent the email to bob@example.com") {
		t.Fatalf("answer: %+v, want the email sent", done)
	}
}
