package conformance_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/agent/workflowagent"
	"github.com/loomkit/loom/conformance"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session/memsession"
)

// serveParallel serves "fan": a Parallel of the LLM agents left and right,
// then the LLM agent sum. With holdLeft, a plugin ahead of the
// conformance plugins holds left's model call back.
func serveParallel(t *testing.T, models map[string]model.LLM, root string, holdLeft bool) *conformance.Client {
	t.Helper()
	mk := func(name string) agent.Agent {
		ag, err := llmagent.New(llmagent.Config{Name: name, Model: conformance.ReplayModel(models[name]), Instruction: "Say your part."})
		if err != nil {
			t.Fatal(err)
		}
		return ag
	}
	par, err := workflowagent.NewParallel(workflowagent.Config{Name: "both", SubAgents: []agent.Agent{mk("left"), mk("right")}})
	if err != nil {
		t.Fatal(err)
	}
	seq, err := workflowagent.NewSequential(workflowagent.Config{Name: "fan", SubAgents: []agent.Agent{par, mk("sum")}})
	if err != nil {
		t.Fatal(err)
	}
	plugins := []*plugin.Plugin{}
	if holdLeft {
		plugins = append(plugins, &plugin.Plugin{Name: "hold_left", Callbacks: agent.Callbacks{ReadOnlyModelHooks: true, BeforeModel: []agent.BeforeModelCallback{
			func(_ context.Context, cc *agent.CallbackContext, _ *model.Request) (*model.Response, error) {
				if cc.AgentName() == "left" {
					time.Sleep(100 * time.Millisecond)
				}
				return nil, nil
			}}}})
	}
	opts := &conformance.Options{Roots: []string{root}}
	plugins = append(plugins, conformance.Replay(opts), conformance.Record(opts))
	r, err := runner.New(runner.Config{AppName: "fan", Agent: seq, Sessions: memsession.NewService(), Plugins: plugins})
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

// TestParallelBranchesReplayInRecordedOrder: the model answers of
// concurrent branches are committed in the order of the recordings, as
// ADK committed them, so the agent after the branches sees their text in
// that order whichever branch asks first.
func TestParallelBranchesReplayInRecordedOrder(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(root, "workflow", "fan_001")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := "description: two branches, then a summary\nagent: fan\nuser_messages:\n  - text: Go.\n"
	if err := os.WriteFile(filepath.Join(dir, conformance.SpecFile), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	cases, err := conformance.Discover([]string{root})
	if err != nil || len(cases) != 1 {
		t.Fatalf("Discover = %v, %v", cases, err)
	}
	live := map[string]model.LLM{
		"left": scripted.NewSequence("scripted-1", scripted.Text("left part")),
		// right answers once left has: the recorded order is left, right.
		"right": scripted.New("scripted-1", func(context.Context, *model.Request) (scripted.Turn, error) {
			time.Sleep(100 * time.Millisecond)
			return scripted.Text("right part"), nil
		}),
		"sum": scripted.NewSequence("scripted-1", scripted.Text("both parts")),
	}
	if err := serveParallel(t, live, root, false).Record(ctx, cases[0], conformance.StreamingNone); err != nil {
		t.Fatal(err)
	}
	none := map[string]model.LLM{"left": failing(), "right": failing(), "sum": failing()}
	if res := serveParallel(t, none, root, true).Run(ctx, cases[0], conformance.StreamingNone); !res.Passed() {
		t.Fatalf("replay with left held back failed: %v", res.Err)
	}
}
