package eval_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/eval"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// TestQ7EfficiencyPerRun checks what a case run took: two turns, the
// first with a tool call (two model calls), the second one model call, each
// call reporting 10 prompt, 5 candidates and 15 total tokens; the tool
// sleeps, so the duration is at least its sleep. The summary holds the
// mean of two runs.
func TestQ7EfficiencyPerRun(t *testing.T) {
	slow, err := functiontool.New(functiontool.Config{Name: "slow", Description: "takes its time"},
		func(context.Context, tool.Context, struct{}) (map[string]any, error) {
			time.Sleep(20 * time.Millisecond)
			return map[string]any{"ok": true}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	usage := &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 10, CandidatesTokenCount: 5, TotalTokenCount: 15}
	llm := scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		turn := scripted.Text("done")
		if len(scripted.LastFunctionResponse(req)) == 0 && strings.Contains(scripted.LastUserText(req), "slow") {
			turn = scripted.Call("slow", map[string]any{})
		}
		turn.Usage = usage
		return turn, nil
	})
	ag, err := llmagent.New(llmagent.Config{Name: "root", Model: llm, Tools: []tool.Tool{slow}})
	if err != nil {
		t.Fatal(err)
	}
	c := &eval.Case{EvalID: "c", Conversation: []*eval.Invocation{
		{UserContent: text("be slow", genai.RoleUser), FinalResponse: text("done", genai.RoleModel)},
		{UserContent: text("again", genai.RoleUser), FinalResponse: text("done", genai.RoleModel)},
	}}
	rep, err := eval.Run(t.Context(), &eval.Set{EvalSetID: "s", EvalCases: []*eval.Case{c}}, eval.Options{
		Runner: newRunner(t, ag), NumRuns: 2,
		Metrics: []*eval.Metric{{MetricName: eval.ResponseMatchMetric, Criterion: &eval.Criterion{Threshold: 0.7}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, run := range rep.Result.EvalCaseResults {
		e := run.Efficiency
		if e == nil {
			t.Fatalf("run %d has no efficiency", i)
		}
		if e.ModelCalls != 3 || e.PromptTokens != 30 || e.CandidatesTokens != 15 || e.TotalTokens != 45 {
			t.Errorf("run %d: %+v; want 3 calls, 30/15/45 tokens", i, e)
		}
		if e.DurationSeconds < 0.02 || e.DurationSeconds > 10 {
			t.Errorf("run %d took %v s; want at least the tool's 0.02 s", i, e.DurationSeconds)
		}
	}
	if m := rep.Cases[0].Efficiency; m == nil || m.ModelCalls != 3 || m.TotalTokens != 45 || m.DurationSeconds < 0.02 {
		t.Errorf("case summary: %+v", m)
	}

	// The result file keeps it as a member of each case result, which ADK's
	// readers ignore; it reads back as written.
	path := filepath.Join(t.TempDir(), "r"+eval.ResultFileSuffix)
	if err := eval.WriteResultFile(path, rep.Result); err != nil {
		t.Fatal(err)
	}
	back, err := eval.ReadResultFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := rep.Result.MarshalJSON()
	b, _ := back.MarshalJSON()
	if !bytes.Equal(a, b) || !bytes.Contains(a, []byte(`"efficiency":{"duration_seconds":`)) || !bytes.Contains(a, []byte(`"model_calls":3`)) {
		t.Errorf("result file:\n%s\nread back:\n%s", a, b)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(a, &members); err != nil {
		t.Fatal(err)
	}
	for k := range members {
		if k == "efficiency" {
			t.Errorf("efficiency at the top of the result, want it in each case result")
		}
	}
}

// TestQ7ADKResultWithoutEfficiency checks that a result file ADK wrote,
// which has no efficiency, reads and writes back unchanged.
func TestQ7ADKResultWithoutEfficiency(t *testing.T) {
	r, err := eval.ReadResultFile("testdata/adk.evalset_result.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, cr := range r.EvalCaseResults {
		if cr.Efficiency != nil {
			t.Errorf("case %s: efficiency %+v from a file without one", cr.EvalID, cr.Efficiency)
		}
	}
	if b, _ := r.MarshalJSON(); bytes.Contains(b, []byte("efficiency")) {
		t.Errorf("written back with an efficiency member: %s", b)
	}
}
