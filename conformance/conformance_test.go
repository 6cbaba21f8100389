package conformance_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

type lookupArgs struct {
	Q string `json:"q"`
}

// serve starts a server of one app, "helper", whose agent calls lookup
// once and then answers, with the conformance plugins on for root.
func serve(t *testing.T, llm model.LLM, root string) *conformance.Client {
	t.Helper()
	lookup, err := functiontool.New(functiontool.Config{Name: "lookup", Description: "Looks a word up."},
		func(_ context.Context, tc tool.Context, a lookupArgs) (map[string]any, error) {
			tc.State().Set("looked_up", a.Q)
			return map[string]any{"meaning": "a " + a.Q, "count": 800}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	ag, err := llmagent.New(llmagent.Config{Name: "helper", Model: conformance.ReplayModel(llm), Instruction: "Answer briefly.", Tools: []tool.Tool{lookup}})
	if err != nil {
		t.Fatal(err)
	}
	opts := &conformance.Options{Roots: []string{root}}
	r, err := runner.New(runner.Config{AppName: "helper", Agent: ag, Sessions: memsession.NewService(),
		Plugins: []*plugin.Plugin{conformance.Replay(opts), conformance.Record(opts)}})
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

func writeSpec(t *testing.T, dir string) *conformance.Case {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := "description: one lookup\nagent: helper\nuser_messages:\n  - text: What is a loom?\n"
	if err := os.WriteFile(filepath.Join(dir, conformance.SpecFile), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	cases, err := conformance.Discover([]string{filepath.Dir(dir)})
	if err != nil || len(cases) != 1 {
		t.Fatalf("Discover = %v, %v", cases, err)
	}
	return cases[0]
}

// failing is a model that must not be called: replay answers instead.
func failing() model.LLM {
	return scripted.New("scripted-1", func(context.Context, *model.Request) (scripted.Turn, error) {
		return scripted.Turn{}, errors.New("the model was called during replay")
	})
}

// TestRecordThenReplay records a case from a scripted model through the
// HTTP API, replays it with a model that fails when called, and checks
// that a recording that differs from the live request fails the turn
// with the differing field.
func TestRecordThenReplay(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	cs := writeSpec(t, filepath.Join(root, "core", "lookup_001"))

	live := scripted.NewSequence("scripted-1", scripted.Call("lookup", map[string]any{"q": "loom"}), scripted.Text("A loom weaves."))
	if err := serve(t, live, root).Record(ctx, cs, conformance.StreamingNone); err != nil {
		t.Fatal(err)
	}
	recs, err := conformance.LoadRecordings(cs.Dir, conformance.StreamingNone)
	if err != nil {
		t.Fatal(err)
	}
	var llm, tools int
	for _, r := range recs.Recordings {
		if r.LLM != nil {
			llm++
		}
		if r.Tool != nil {
			tools++
		}
	}
	if llm != 2 || tools != 1 {
		t.Fatalf("recorded %d model calls and %d tool calls, want 2 and 1", llm, tools)
	}
	b, err := os.ReadFile(conformance.RecordingsPath(cs.Dir, conformance.StreamingNone))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "llm_responses:") || strings.Contains(string(b), "llm_response:") {
		t.Errorf("recordings do not use the llm_responses schema:\n%s", b)
	}
	sess, err := os.ReadFile(conformance.SessionPath(cs.Dir, conformance.StreamingNone))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(sess), "_adk_") {
		t.Errorf("the recorded session keeps the protocol's state keys:\n%s", sess)
	}

	client := serve(t, failing(), root)
	if res := client.Run(ctx, cs, conformance.StreamingNone); !res.Passed() {
		t.Fatalf("replay of the recorded case failed: %v", res.Err)
	}

	// A recording whose request differs fails the turn, naming the field.
	tampered := strings.Replace(string(b), "What is a loom?", "What is a lathe?", 1)
	if err := os.WriteFile(conformance.RecordingsPath(cs.Dir, conformance.StreamingNone), []byte(tampered), 0o644); err != nil {
		t.Fatal(err)
	}
	res := client.Run(ctx, cs, conformance.StreamingNone)
	if res.Passed() {
		t.Fatal("replay against a different recording passed")
	}
	for _, want := range []string{"llm_request.contents[0].parts[0].text", `want "What is a lathe?"`, `got "What is a loom?"`} {
		if !strings.Contains(res.Err.Error(), want) {
			t.Errorf("error %q does not contain %q", res.Err, want)
		}
	}
}

// TestReplayOutsideRoots checks that a request naming a case directory
// outside the allowed ones fails instead of reading it.
func TestReplayOutsideRoots(t *testing.T) {
	ctx := context.Background()
	cs := writeSpec(t, filepath.Join(t.TempDir(), "core", "lookup_001"))
	if err := os.WriteFile(conformance.SessionPath(cs.Dir, conformance.StreamingNone), []byte("app_name: helper\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := serve(t, failing(), t.TempDir()).Run(ctx, cs, conformance.StreamingNone)
	if res.Passed() || !strings.Contains(res.Err.Error(), "outside the allowed directories") {
		t.Fatalf("Run = %v, want an error about the directory", res.Err)
	}
}

// TestRelativeCaseDirectory: a case named by a path relative to the
// working directory, as ADK's runner names it, is read from there when it
// lies in an allowed directory, even one named differently.
func TestRelativeCaseDirectory(t *testing.T) {
	ctx := context.Background()
	parent := t.TempDir()
	t.Chdir(parent)
	if err := os.MkdirAll(filepath.Join("suite", "tests", "core", "lookup_001"), 0o755); err != nil {
		t.Fatal(err)
	}
	cs := writeSpec(t, filepath.Join("suite", "tests", "core", "lookup_001"))
	cs.Dir = filepath.Join("suite", "tests", "core", "lookup_001") // as ADK's runner sends it
	live := scripted.NewSequence("scripted-1", scripted.Call("lookup", map[string]any{"q": "loom"}), scripted.Text("A loom weaves."))
	if err := serve(t, live, "suite").Record(ctx, cs, conformance.StreamingNone); err != nil {
		t.Fatal(err)
	}
	if _, err := conformance.LoadRecordings(cs.Dir, conformance.StreamingNone); err != nil {
		t.Fatalf("the recordings are not in the case directory: %v", err)
	}
	if res := serve(t, failing(), "./suite/").Run(ctx, cs, conformance.StreamingNone); !res.Passed() {
		t.Fatalf("replay of a relative case directory: %v", res.Err)
	}
}
