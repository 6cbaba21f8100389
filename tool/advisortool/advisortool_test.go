package advisortool_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/advisortool"
)

type fixture struct {
	tool    *advisortool.Tool
	r       *runner.Runner
	svc     *session.Service
	advisor *scripted.Model
	mu      sync.Mutex
	plan    []scripted.Turn
}

func newFixture(t *testing.T, cfg advisortool.Config) *fixture {
	t.Helper()
	f := &fixture{}
	f.advisor = scripted.New("advisor-m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		return scripted.Turn{Text: "advice #" + fmt.Sprint(len(f.advisor.Requests()))}, nil
	}).Recording()
	cfg.Model = f.advisor
	at, err := advisortool.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.tool = at
	m := scripted.New("agent-m", func(context.Context, *model.Request) (scripted.Turn, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.plan) == 0 {
			return scripted.Turn{}, errors.New("script exhausted")
		}
		turn := f.plan[0]
		f.plan = f.plan[1:]
		return turn, nil
	})
	a, err := llmagent.New(llmagent.Config{Name: "a", Model: m, Tools: []tool.Tool{at}})
	if err != nil {
		t.Fatal(err)
	}
	f.svc = memsession.NewService()
	if _, err := f.svc.Create(context.Background(), session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil); err != nil {
		t.Fatal(err)
	}
	f.r, err = runner.New(runner.Config{AppName: "app", Agent: a, Sessions: f.svc})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func consult(q string) *genai.FunctionCall {
	return &genai.FunctionCall{Name: advisortool.DefaultName, Args: map[string]any{"question": q, "context": "budget is tight"}}
}

// run plays turns (each a list of calls made at once), then a final text,
// and returns the tool's responses in order.
func (f *fixture) run(t *testing.T, turns ...[]*genai.FunctionCall) []map[string]any {
	t.Helper()
	var plan []scripted.Turn
	for i, calls := range turns {
		for j, c := range calls {
			c.ID = fmt.Sprintf("t%dc%d-%p", i, j, c)
		}
		plan = append(plan, scripted.Turn{Calls: calls})
	}
	f.mu.Lock()
	f.plan = append(plan, scripted.Text("done"))
	f.mu.Unlock()
	evs, err := f.r.RunSync(context.Background(), "u", "s", genai.NewContentFromText("plan my trip", genai.RoleUser), nil)
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

func at(_ *testing.T, f *fixture) *advisortool.Tool { return f.tool }

func errorOf(r map[string]any) string { s, _ := r["error"].(string); return s }

// TestAdvisorBudgets: a turn gets MaxPerTurn consultations, a session
// MaxPerSession; past either the advisor is not called and the model reads
// which budget is spent. The session's count is in session state.
func TestAdvisorBudgets(t *testing.T) {
	f := newFixture(t, advisortool.Config{MaxPerTurn: 2, MaxPerSession: 3})
	got := f.run(t, []*genai.FunctionCall{consult("a")}, []*genai.FunctionCall{consult("b")}, []*genai.FunctionCall{consult("c")})
	if got[0]["advice"] != "advice #1" || got[1]["advice"] != "advice #2" || !strings.Contains(errorOf(got[2]), "2 consultations per turn") {
		t.Fatalf("first turn: %v", got)
	}
	got = f.run(t, []*genai.FunctionCall{consult("d")}, []*genai.FunctionCall{consult("e")})
	if got[0]["advice"] != "advice #3" || !strings.Contains(errorOf(got[1]), "3 consultations per conversation") {
		t.Fatalf("second turn: %v", got)
	}
	if n := len(f.advisor.Requests()); n != 3 {
		t.Fatalf("advisor called %d times, want 3", n)
	}
	s, err := f.svc.Get(context.Background(), session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := at(t, f).Used(s); n != 3 {
		t.Fatalf("session records %d consultations, want 3", n)
	}
}

// TestAdvisorParallelCalls: consultations made at once in one model
// response are counted one by one: with a turn budget of 2, two of three
// reach the advisor, and the counts stored with the response are 2 (run
// under -race).
func TestAdvisorParallelCalls(t *testing.T) {
	for range 20 {
		f := newFixture(t, advisortool.Config{MaxPerTurn: 2})
		got := f.run(t, []*genai.FunctionCall{consult("a"), consult("b"), consult("c")})
		var advised, refused int
		for _, r := range got {
			if r["advice"] != nil {
				advised++
			} else if strings.Contains(errorOf(r), "2 consultations per turn") {
				refused++
			}
		}
		if advised != 2 || refused != 1 || len(f.advisor.Requests()) != 2 {
			t.Fatalf("responses %v", got)
		}
		s, err := f.svc.Get(context.Background(), session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := at(t, f).Used(s); n != 2 {
			t.Fatalf("session records %d consultations, want 2", n)
		}
	}
}

// TestAdvisorRequest: the advisor gets its instruction, the user's message,
// the agent's context and question; bad arguments are errors and cost
// nothing.
func TestAdvisorRequest(t *testing.T) {
	f := newFixture(t, advisortool.Config{Instruction: "Be a careful travel advisor."})
	bad := &genai.FunctionCall{Name: advisortool.DefaultName, Args: map[string]any{"question": "q", "context": 7}}
	got := f.run(t, []*genai.FunctionCall{bad}, []*genai.FunctionCall{consult("train or plane?")})
	if !strings.Contains(errorOf(got[0]), "context must be a string") {
		t.Fatalf("bad context: %v", got[0])
	}
	reqs := f.advisor.Requests()
	if len(reqs) != 1 {
		t.Fatalf("advisor called %d times", len(reqs))
	}
	if si := reqs[0].Config.SystemInstruction.Parts[0].Text; si != "Be a careful travel advisor." {
		t.Fatalf("instruction %q", si)
	}
	text := reqs[0].Contents[0].Parts[0].Text
	for _, want := range []string{"plan my trip", "budget is tight", "train or plane?"} {
		if !strings.Contains(text, want) {
			t.Fatalf("advisor request lacks %q:\n%s", want, text)
		}
	}
}

func TestNewNeedsModel(t *testing.T) {
	if _, err := advisortool.New(advisortool.Config{}); err == nil {
		t.Fatal("no error without a model")
	}
}
