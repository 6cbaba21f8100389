package reflectretry_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/plugin/reflectretry"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
)

// lookupTool fails while fail returns true for the call's number (from 1).
type lookupTool struct {
	calls atomic.Int64
	fail  func(n int64) bool
}

func (*lookupTool) Name() string        { return "lookup" }
func (*lookupTool) Description() string { return "looks a record up" }
func (*lookupTool) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{Name: "lookup", Description: "looks a record up"}
}
func (l *lookupTool) Run(_ context.Context, _ tool.Context, args map[string]any) (map[string]any, error) {
	if l.fail(l.calls.Add(1)) {
		return map[string]any{"status": "error"}, fmt.Errorf("record %v not found", args["id"])
	}
	return map[string]any{"record": "ok"}, nil
}

// fixture runs an agent whose model follows a script set per invocation.
type fixture struct {
	r    *runner.Runner
	mu   sync.Mutex
	plan []scripted.Turn
}

func newFixture(t *testing.T, cfg reflectretry.Config, lt tool.Tool) *fixture {
	t.Helper()
	f := &fixture{}
	m := scripted.New("m", func(context.Context, *model.Request) (scripted.Turn, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.plan) == 0 {
			return scripted.Turn{}, errors.New("script exhausted")
		}
		turn := f.plan[0]
		f.plan = f.plan[1:]
		return turn, nil
	})
	a, err := llmagent.New(llmagent.Config{Name: "a", Model: m, Tools: []tool.Tool{lt}})
	if err != nil {
		t.Fatal(err)
	}
	svc := memsession.NewService()
	if _, err := svc.Create(context.Background(), session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil); err != nil {
		t.Fatal(err)
	}
	f.r, err = runner.New(runner.Config{AppName: "app", Agent: a, Sessions: svc, Plugins: []*plugin.Plugin{reflectretry.New(cfg)}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// run runs one invocation in which the model calls lookup calls times, one
// call per turn (or all in one turn when parallel), and then answers. It
// returns the function responses in order.
func (f *fixture) run(t *testing.T, calls int, parallel bool) []map[string]any {
	t.Helper()
	var plan []scripted.Turn
	if parallel {
		var fcs []*genai.FunctionCall
		for i := range calls {
			fcs = append(fcs, &genai.FunctionCall{ID: fmt.Sprintf("c%d", i), Name: "lookup", Args: map[string]any{"id": i}})
		}
		plan = append(plan, scripted.Turn{Calls: fcs})
	} else {
		for i := range calls {
			plan = append(plan, scripted.Call("lookup", map[string]any{"id": i}))
		}
	}
	f.mu.Lock()
	f.plan = append(plan, scripted.Text("done"))
	f.mu.Unlock()
	evs, err := f.r.RunSync(context.Background(), "u", "s", genai.NewContentFromText("go", genai.RoleUser), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, e := range evs {
		for _, r := range e.FunctionResponses() {
			out = append(out, r.Response)
		}
	}
	return out
}

// retryCount reads retry_count, a number in whatever Go type the stored
// response gives it.
func retryCount(r map[string]any) int {
	switch n := r["retry_count"].(type) {
	case int:
		return n
	case float64:
		return int(n)
	}
	return -1
}

// TestT12ReflectAndRetry: consecutive failures of a tool get ADK's
// reflection response, numbered, up to the limit; the next failure takes
// the ordinary error path; a success resets the count.
func TestT12ReflectAndRetry(t *testing.T) {
	lt := &lookupTool{fail: func(n int64) bool { return n != 4 }}
	f := newFixture(t, reflectretry.Config{MaxRetries: 2}, lt)
	got := f.run(t, 3, false)
	if len(got) != 3 {
		t.Fatalf("%d responses", len(got))
	}
	for i, want := range []int{1, 2} {
		r := got[i]
		if r["response_type"] != reflectretry.ResponseType || retryCount(r) != want ||
			r["error_details"] != fmt.Sprintf("record %d not found", i) || r["error_type"] != "ToolError" {
			t.Fatalf("response %d: %v", i, r)
		}
		g, _ := r["reflection_guidance"].(string)
		if !strings.HasPrefix(g, "The call to tool `lookup` failed.\n\n**Error Details:**\n```\nrecord ") ||
			!strings.Contains(g, fmt.Sprintf("**Tool Arguments Used:**\n```json\n{\n  \"id\": %d\n}\n```", i)) ||
			!strings.Contains(g, fmt.Sprintf("This is retry attempt **%d of 2**.", want)) {
			t.Fatalf("guidance %d:\n%s", i, g)
		}
	}
	if got[2]["error"] != "record 2 not found" || got[2]["response_type"] != nil {
		t.Fatalf("past the limit: %v, want the ordinary error response", got[2])
	}
	// Call 4 succeeds and resets the count: call 5 is retry 1 again.
	got = f.run(t, 2, false)
	if got[0]["record"] != "ok" || retryCount(got[1]) != 1 {
		t.Fatalf("after a success: %v", got)
	}
}

// TestT12AnswerWhenExceeded: past the limit the model is told not to call
// the tool again.
func TestT12AnswerWhenExceeded(t *testing.T) {
	f := newFixture(t, reflectretry.Config{MaxRetries: 1, AnswerWhenExceeded: true}, &lookupTool{fail: func(int64) bool { return true }})
	got := f.run(t, 2, false)
	g, _ := got[1]["reflection_guidance"].(string)
	if retryCount(got[1]) != 1 || !strings.HasPrefix(g, "The tool `lookup` has failed consecutively 1 times and the retry limit has been exceeded.") ||
		!strings.Contains(g, "**Do not attempt to use the `lookup` tool again for this task.**") {
		t.Fatalf("past the limit: %v", got[1])
	}
}

// TestT12Scope: by default each invocation counts afresh; ScopeGlobal
// carries the count over.
func TestT12Scope(t *testing.T) {
	always := func(int64) bool { return true }
	f := newFixture(t, reflectretry.Config{}, &lookupTool{fail: always})
	f.run(t, 2, false)
	if got := f.run(t, 1, false); retryCount(got[0]) != 1 {
		t.Fatalf("invocation scope: %v", got[0])
	}
	g := newFixture(t, reflectretry.Config{Scope: reflectretry.ScopeGlobal}, &lookupTool{fail: always})
	g.run(t, 2, false)
	if got := g.run(t, 1, false); retryCount(got[0]) != 3 {
		t.Fatalf("global scope: %v", got[0])
	}
}

// TestT12ParallelCalls: failures of calls run at once are each counted once
// (run under -race).
func TestT12ParallelCalls(t *testing.T) {
	f := newFixture(t, reflectretry.Config{MaxRetries: 8}, &lookupTool{fail: func(int64) bool { return true }})
	got := f.run(t, 8, true)
	var counts []int
	for _, r := range got {
		counts = append(counts, retryCount(r))
	}
	slices.Sort(counts)
	if !slices.Equal(counts, []int{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("retry counts %v", counts)
	}
}

// TestT12ExtractError: a result that reports a failure is handled as one.
func TestT12ExtractError(t *testing.T) {
	lt := &lookupTool{fail: func(int64) bool { return false }}
	cfg := reflectretry.Config{ExtractError: func(_ context.Context, _ tool.Context, _ tool.Tool, _, result map[string]any) error {
		if result["record"] == "ok" {
			return errors.New("record is a placeholder")
		}
		return nil
	}}
	got := newFixture(t, cfg, lt).run(t, 1, false)
	if got[0]["response_type"] != reflectretry.ResponseType || got[0]["error_details"] != "record is a placeholder" {
		t.Fatalf("extracted failure: %v", got[0])
	}
}
