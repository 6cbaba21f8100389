package conformance_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/conformance"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// serveTwoTools serves an app "pair" whose agent has the tools first and
// second. A plugin ahead of the conformance plugins holds the call of
// first back, so that second reaches them first.
func serveTwoTools(t *testing.T, llm model.LLM, root string) *conformance.Client {
	t.Helper()
	var tools []tool.Tool
	for _, name := range []string{"first", "second"} {
		tl, err := functiontool.New(functiontool.Config{Name: name, Description: "Answers with its name."},
			func(context.Context, tool.Context, struct{}) (map[string]any, error) {
				return map[string]any{"from": name}, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tl)
	}
	ag, err := llmagent.New(llmagent.Config{Name: "pair", Model: conformance.ReplayModel(llm), Instruction: "Use both tools.", Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	slow := &plugin.Plugin{Name: "slow_first", Callbacks: agent.Callbacks{ReadOnlyModelHooks: true, BeforeTool: []agent.BeforeToolCallback{
		func(_ context.Context, _ tool.Context, tl tool.Tool, _ map[string]any) (map[string]any, error) {
			if tl.Name() == "first" {
				time.Sleep(100 * time.Millisecond)
			}
			return nil, nil
		}}}}
	opts := &conformance.Options{Roots: []string{root}}
	r, err := runner.New(runner.Config{AppName: "pair", Agent: ag, Sessions: memsession.NewService(),
		Plugins: []*plugin.Plugin{slow, conformance.Replay(opts), conformance.Record(opts)}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := server.New(server.Config{Apps: []*runner.Runner{r}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return &conformance.Client{BaseURL: ts.URL, HTTP: ts.Client()}
}

// TestParallelToolCallsInCallOrder: the tool calls of one model response
// run concurrently, but are recorded and replayed in the order the model
// made them, as ADK starts them, whichever reaches the plugins first.
func TestParallelToolCallsInCallOrder(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(root, "tool", "pair_001")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := "description: two calls in one turn\nagent: pair\nuser_messages:\n  - text: Both, please.\n"
	if err := os.WriteFile(filepath.Join(dir, conformance.SpecFile), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	cases, err := conformance.Discover([]string{root})
	if err != nil || len(cases) != 1 {
		t.Fatalf("Discover = %v, %v", cases, err)
	}
	cs := cases[0]
	both := scripted.Turn{Calls: []*genai.FunctionCall{{Name: "first", Args: map[string]any{}}, {Name: "second", Args: map[string]any{}}}}
	live := scripted.NewSequence("scripted-1", both, scripted.Text("Done."))
	if err := serveTwoTools(t, live, root).Record(ctx, cs, conformance.StreamingNone); err != nil {
		t.Fatal(err)
	}
	recs, err := conformance.LoadRecordings(cs.Dir, conformance.StreamingNone)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range recs.Recordings {
		if r.Tool != nil {
			order = append(order, r.Tool.Call.Name)
		}
	}
	if len(order) != 2 || order[0] != "first" || order[1] != "second" {
		t.Fatalf("tool recordings in order %v, want [first second]", order)
	}
	if res := serveTwoTools(t, failing(), root).Run(ctx, cs, conformance.StreamingNone); !res.Passed() {
		t.Fatalf("replay failed: %v", res.Err)
	}
	// ADK records a call without arguments as "args: {}" (exit_loop in
	// ADK's loop case): that replays too.
	path := conformance.RecordingsPath(cs.Dir, conformance.StreamingNone)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	withArgs := regexp.MustCompile(`(?m)^(\s+)tool_call:\n`).ReplaceAll(b, []byte("${1}tool_call:\n${1}  args: {}\n"))
	if bytes.Count(withArgs, []byte("args: {}")) != 2 {
		t.Fatalf("the rewritten recordings do not hold two empty args:\n%s", withArgs)
	}
	if err := os.WriteFile(path, withArgs, 0o644); err != nil {
		t.Fatal(err)
	}
	if res := serveTwoTools(t, failing(), root).Run(ctx, cs, conformance.StreamingNone); !res.Passed() {
		t.Fatalf("replay of calls recorded with empty args failed: %v", res.Err)
	}
}
