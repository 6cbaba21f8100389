package skills_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/codeexec"
	"github.com/loomkit/loom/examples/skills"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// The unit-convert script runs in codeexec.Local's confined Python, with
// its arguments.
func TestScriptRunsInLocalExecutor(t *testing.T) {
	exec := &codeexec.Local{}
	if _, err := exec.Execute(context.Background(), codeexec.Input{Code: "print(1)"}); err != nil {
		if errors.Is(err, codeexec.ErrUnconfined) {
			t.Skip(err)
		}
		t.Skipf("no local Python: %v", err)
	}
	root, err := skills.NewWithExecutor(scripted.NewSequence("m",
		scripted.Call("execute_skill_script", map[string]any{"skill_name": "unit-convert", "script_name": "convert.py", "input_args": "10 km"}),
		scripted.Text("done")), exec)
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "skills", Agent: root, Sessions: session.NewService(memsession.New(), nil), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := r.RunSync(context.Background(), "u", "s", genai.NewContentFromText("convert", genai.RoleUser), nil)
	if err != nil {
		t.Fatal(err)
	}
	var results []map[string]any
	for _, ev := range evs {
		for _, fr := range ev.FunctionResponses() {
			results = append(results, fr.Response)
		}
	}
	if len(results) != 1 || results[0]["stdout"] != "10 km is 6.21 mi.\n" || results[0]["status"] != "success" {
		t.Errorf("script results %v, want one: 10 km is 6.21 mi.", results)
	}
}
