package agentconfig_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/loomkit/loom/agent/agentconfig"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
)

// FuzzLoad checks that no root_agent.yaml crashes the loader: every input
// loads or fails with an error.
func FuzzLoad(f *testing.F) {
	for _, dir := range []string{"single", "multi", "sequential", "parallel", "loop", "tools"} {
		if data, err := os.ReadFile(filepath.Join("testdata", dir, "root_agent.yaml")); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("name: a\ninstruction: x\ntools:\n  - name: McpToolset\n    args: {stdio_server_params: {command: x}}\n"))
	f.Add([]byte("agent_class: LoopAgent\nname: l\nmax_iterations: 1e400\n"))
	f.Add([]byte("name: a\ninstruction: x\ngenerate_content_config: {thinking_config: {thinking_budget: 3}}\n"))
	f.Add([]byte("agent_class: Workflow\nname: w\nnodes: [{join: j}, {tool: {name: exit_loop}, retry_config: {max_attempts: 2}}]\nedges: [[START, exit_loop, {a: j, default: j}], {from: j, to: exit_loop, max: 1}]\n"))
	opts := &agentconfig.Options{Model: func(name string) (model.LLM, error) {
		return scripted.New(name, func(context.Context, *model.Request) (scripted.Turn, error) { return scripted.Text("ok"), nil }), nil
	}}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "root_agent.yaml"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		app, err := agentconfig.Load(dir, opts)
		if err == nil {
			if app.Root == nil {
				t.Fatal("loaded without a root agent")
			}
			app.Close()
		}
	})
}
