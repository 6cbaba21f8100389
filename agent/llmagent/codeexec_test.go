package llmagent_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/codeexec"
	"github.com/loomkit/loom/model/scripted"
)

// fakeExecutor records the code it runs and answers with results in turn.
type fakeExecutor struct {
	mu      sync.Mutex
	codes   []string
	results []codeexec.Result
}

func (f *fakeExecutor) Execute(_ context.Context, in codeexec.Input) (codeexec.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.codes = append(f.codes, in.Code)
	r := f.results[0]
	if len(f.results) > 1 {
		f.results = f.results[1:]
	}
	return r, nil
}

// TestCodeExecution checks the local execution loop: the code block of a
// response is committed as executableCode and run, its output committed as
// codeExecutionResult, its files saved as artifacts, and the next request
// shows code and output as text blocks.
//
// (CONFORMANCE C1)
func TestCodeExecution(t *testing.T) {
	m := scripted.NewSequence("m",
		scripted.Turn{Text: "Let me compute.\n```tool_code\nprint(6*7)\n```\nThe answer is 41."},
		scripted.Turn{Text: "It is 42."},
	)
	ex := &fakeExecutor{results: []codeexec.Result{{Stdout: "42\n", Files: []codeexec.File{{Name: "out/plot.png", MIMEType: "image/png", Data: []byte("png")}}}}}
	arts := artifact.NewService(newMemArtifacts())
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "calc", Model: m, CodeExecutor: ex}), arts, nil)
	evs := f.run(t, "what is 6*7?", nil)
	if len(evs) != 3 {
		t.Fatalf("%d events", len(evs))
	}
	code := evs[0].Content.Parts
	if len(code) != 2 || code[0].Text != "Let me compute.\n" || code[1].ExecutableCode == nil || code[1].ExecutableCode.Code != "print(6*7)\n" {
		t.Fatalf("code event parts = %+v", code)
	}
	if len(ex.codes) != 1 || ex.codes[0] != "print(6*7)\n" {
		t.Errorf("executed %q", ex.codes)
	}
	res := evs[1].Content.Parts[0].CodeExecutionResult
	if res == nil || res.Outcome != genai.OutcomeOK || !strings.HasPrefix(res.Output, "42\n") || !strings.Contains(res.Output, "Saved files: out_plot.png") {
		t.Fatalf("result = %+v", res)
	}
	if _, ok := evs[1].Actions.ArtifactDelta["out_plot.png"]; !ok {
		t.Errorf("artifact delta = %v", evs[1].Actions.ArtifactDelta)
	}
	if evs[1].IsFinalResponse() || !evs[2].IsFinalResponse() || evs[2].Text() != "It is 42." {
		t.Errorf("final response rule: result final=%v, last %q", evs[1].IsFinalResponse(), evs[2].Text())
	}
	req := m.Requests()[1]
	var texts []string
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if p.ExecutableCode != nil || p.CodeExecutionResult != nil {
				t.Error("code parts sent to a model without built-in execution")
			}
			texts = append(texts, p.Text)
		}
	}
	all := strings.Join(texts, "|")
	if !strings.Contains(all, "```tool_code\nprint(6*7)\n```") || !strings.Contains(all, "```tool_output\n42\n") {
		t.Errorf("history = %q", all)
	}
	if sys := strings.Join(systemTexts(m.Requests()[0]), ""); !strings.Contains(sys, "```tool_code") {
		t.Errorf("no code instruction: %q", sys)
	}
}

// TestCodeExecutionRetriesBounded checks that failed executions are fed
// back and retried at most CodeErrorRetries times; then the response is
// kept as text.
//
// (CONFORMANCE C1)
func TestCodeExecutionRetriesBounded(t *testing.T) {
	turn := scripted.Turn{Text: "```python\nboom()\n```"}
	m := scripted.NewSequence("m", turn, turn, turn, turn)
	ex := &fakeExecutor{results: []codeexec.Result{{Stderr: "NameError: boom", Failed: true}}}
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, CodeExecutor: ex, CodeErrorRetries: 2}), nil, nil)
	evs := f.run(t, "go", nil)
	if len(ex.codes) != 3 {
		t.Fatalf("executions = %d, want 3 (one try and two retries)", len(ex.codes))
	}
	if len(m.Requests()) != 4 {
		t.Fatalf("model calls = %d", len(m.Requests()))
	}
	if !strings.Contains(m.Requests()[1].Contents[2].Parts[0].Text, "NameError: boom") {
		t.Errorf("error not fed back: %+v", m.Requests()[1].Contents)
	}
	last := evs[len(evs)-1]
	if !last.IsFinalResponse() || last.Text() != "```python\nboom()\n```" {
		t.Errorf("last event = %+v", last.Content)
	}
}

// TestBuiltInCodeExecutor checks that the built-in executor adds the
// provider's code execution tool and runs nothing locally, keeping the
// model's code parts.
//
// (CONFORMANCE C1)
func TestBuiltInCodeExecutor(t *testing.T) {
	m := scripted.NewSequence("m", scripted.Turn{Text: "```python\nprint(1)\n```"})
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, CodeExecutor: codeexec.BuiltIn{}}), nil, nil)
	evs := f.run(t, "go", nil)
	tools := m.Requests()[0].Config.Tools
	if len(tools) != 1 || tools[0].CodeExecution == nil {
		t.Fatalf("tools = %+v", tools)
	}
	if len(evs) != 1 || evs[0].Content.Parts[0].ExecutableCode != nil {
		t.Errorf("events = %d", len(evs))
	}
}

// TestLocalCodeExecutorEndToEnd runs real Python through the agent.
//
// (CONFORMANCE C1)
func TestLocalCodeExecutorEndToEnd(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("python3 is required in CI")
		}
		t.Skip("python3 not installed")
	}
	m := scripted.NewSequence("m",
		scripted.Turn{Text: "```tool_code\nopen('sum.txt', 'w').write(str(sum(range(10))))\nprint(sum(range(10)))\n```"},
		scripted.Turn{Text: "45"},
	)
	arts := artifact.NewService(newMemArtifacts())
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, CodeExecutor: &codeexec.Local{AllowNetwork: true}}), arts, nil)
	evs := f.run(t, "sum of 0..9?", nil)
	res := evs[1].Content.Parts[0].CodeExecutionResult
	if res == nil || res.Outcome != genai.OutcomeOK || !strings.HasPrefix(res.Output, "45\n") {
		t.Fatalf("result = %+v", res)
	}
	p, err := arts.Load(context.Background(), artifact.Ref{AppName: app, UserID: user, SessionID: sid, Name: "sum.txt"}, artifact.Latest)
	if err != nil || p.InlineData == nil || string(p.InlineData.Data) != "45" {
		t.Fatalf("artifact = %+v, %v", p, err)
	}
}

// TestCodeExecutionOutputsStayInSession checks that an output file whose
// name would make it one of the user's shared ("user:") artifacts is not
// saved: code cannot overwrite what every session of the user shares.
//
// (CONFORMANCE C1)
func TestCodeExecutionOutputsStayInSession(t *testing.T) {
	m := scripted.NewSequence("m", scripted.Turn{Text: "```tool_code\nwrite()\n```"}, scripted.Turn{Text: "done"})
	ex := &fakeExecutor{results: []codeexec.Result{{Files: []codeexec.File{
		{Name: "user:x", MIMEType: "text/plain", Data: []byte("forged")},
		{Name: "ok.txt", MIMEType: "text/plain", Data: []byte("fine")},
	}}}}
	arts := artifact.NewService(newMemArtifacts())
	ctx := context.Background()
	shared := artifact.Ref{AppName: app, UserID: user, Name: "user:x"}
	if _, err := arts.Save(ctx, shared, genai.NewPartFromText("the user's own")); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, CodeExecutor: ex}), arts, nil)
	evs := f.run(t, "go", nil)
	res := evs[1].Content.Parts[0].CodeExecutionResult
	if res == nil || !strings.Contains(res.Output, "Saved files: ok.txt") || !strings.Contains(res.Output, "Files not saved: user:x") {
		t.Fatalf("result = %+v", res)
	}
	if _, ok := evs[1].Actions.ArtifactDelta["user:x"]; ok {
		t.Errorf("artifact delta = %v", evs[1].Actions.ArtifactDelta)
	}
	p, err := arts.Load(ctx, shared, artifact.Latest)
	if err != nil || p.Text != "the user's own" {
		t.Fatalf("user artifact = %+v, %v", p, err)
	}
}
