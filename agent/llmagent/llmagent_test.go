package llmagent_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/agent/workflowagent"
	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/builtintool"
)

const app, user, sid = "app", "u", "s"

// fnTool is a minimal tool for these tests.
type fnTool struct {
	name string
	run  func(ctx context.Context, tc tool.Context, args map[string]any) (map[string]any, error)
	long bool
}

func (f fnTool) Name() string        { return f.name }
func (f fnTool) Description() string { return f.name + " tool" }
func (f fnTool) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{Name: f.name, Description: f.Description()}
}
func (f fnTool) Run(ctx context.Context, tc tool.Context, args map[string]any) (map[string]any, error) {
	return f.run(ctx, tc, args)
}
func (f fnTool) IsLongRunning() bool { return f.long }

func mustAgent(t *testing.T, cfg llmagent.Config) *llmagent.Agent {
	t.Helper()
	a, err := llmagent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

type fixture struct {
	r   *runner.Runner
	svc *session.Service
	key session.Key
}

func newFixture(t *testing.T, root agent.Agent, arts *artifact.Service, state map[string]any) *fixture {
	t.Helper()
	svc := memsession.NewService()
	r, err := runner.New(runner.Config{AppName: app, Agent: root, Sessions: svc, Artifacts: arts})
	if err != nil {
		t.Fatal(err)
	}
	key := session.Key{AppName: app, UserID: user, SessionID: sid}
	if _, err := svc.Create(context.Background(), key, state); err != nil {
		t.Fatal(err)
	}
	return &fixture{r: r, svc: svc, key: key}
}

func (f *fixture) run(t *testing.T, text string, opts *runner.RunOptions) []*event.Event {
	t.Helper()
	evs, err := f.r.RunSync(context.Background(), user, sid, genai.NewContentFromText(text, genai.RoleUser), opts)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func (f *fixture) session(t *testing.T) *session.Session {
	t.Helper()
	s, err := f.svc.Get(context.Background(), f.key, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestA1OutputKey checks that the final text, without thought parts, is
// written to the output key in the same event.
func TestA1OutputKey(t *testing.T) {
	m := scripted.NewSequence("m", scripted.Turn{Thought: "let me think", Text: "Paris"})
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "geo", Model: m, OutputKey: "capital"}), nil, nil)
	evs := f.run(t, "capital of France?", nil)
	last := evs[len(evs)-1]
	if got := last.Actions.StateDelta["capital"]; got != "Paris" {
		t.Fatalf("output key in final event = %v, want Paris", got)
	}
	if v, _ := f.session(t).Get("capital"); v != "Paris" {
		t.Fatalf("state capital = %v", v)
	}
}

// TestA1OutputSchema checks JSON output validated against the schema and
// stored parsed.
func TestA1OutputSchema(t *testing.T) {
	schema := &jsonschema.Schema{Type: "object", Required: []string{"city"}, Properties: map[string]*jsonschema.Schema{"city": {Type: "string"}}}
	m := scripted.NewSequence("m", scripted.Text(`{"city":"Paris"}`), scripted.Text(`{"town":1}`))
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "geo", Model: m, OutputKey: "out", OutputSchema: schema}), nil, nil)
	f.run(t, "q", nil)
	v, _ := f.session(t).Get("out")
	if mv, ok := v.(map[string]any); !ok || mv["city"] != "Paris" {
		t.Fatalf("out = %#v, want parsed object", v)
	}
	if req := m.Requests()[0]; req.Config.ResponseMIMEType != "application/json" || req.Config.ResponseJsonSchema == nil {
		t.Fatal("request does not ask for JSON output")
	}
	_, err := f.r.RunSync(context.Background(), user, sid, genai.NewContentFromText("q", genai.RoleUser), nil)
	if err == nil || !strings.Contains(err.Error(), "output schema") {
		t.Fatalf("invalid output: err = %v", err)
	}
}

// TestA2InstructionTemplating covers every placeholder form.
func TestA2InstructionTemplating(t *testing.T) {
	arts := artifact.NewService(newMemArtifacts())
	ctx := context.Background()
	if _, err := arts.Save(ctx, artifact.Ref{AppName: app, UserID: user, SessionID: sid, Name: "notes.txt"}, genai.NewPartFromText("be brief")); err != nil {
		t.Fatal(err)
	}
	m := scripted.NewSequence("m", scripted.Text("ok"))
	instr := "Hi {name}. Tier {user:tier}, region {app:region}. Opt:[{nick?}]. Notes: {artifact.notes.txt}. Literal {not valid} and {{\"json\": 1}}"
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, Instruction: instr}), arts,
		map[string]any{"name": "Ada", "user:tier": "gold", "app:region": "eu"})
	f.run(t, "hi", nil)
	got := m.Requests()[0].Config.SystemInstruction.Parts[0].Text
	want := "Hi Ada. Tier gold, region eu. Opt:[]. Notes: be brief. Literal {not valid} and {{\"json\": 1}}" +
		"\n\nYou are an agent. Your internal name is \"a\"."
	if got != want {
		t.Fatalf("instruction:\n got %q\nwant %q", got, want)
	}
	// A required missing key is a clear error.
	m2 := scripted.NewSequence("m", scripted.Text("ok"))
	f2 := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m2, Instruction: "Hello {missing}"}), nil, nil)
	_, err := f2.r.RunSync(ctx, user, sid, genai.NewContentFromText("hi", genai.RoleUser), nil)
	if err == nil || !strings.Contains(err.Error(), `"missing"`) {
		t.Fatalf("err = %v, want an error naming the missing key", err)
	}
}

// TestA6Transfer checks transfer: the model calls transfer_to_agent, the
// response event carries the action, the target answers in the same
// invocation, and the next turn goes straight to it.
func TestA6Transfer(t *testing.T) {
	rootModel := scripted.NewSequence("root-m", scripted.Call("transfer_to_agent", map[string]any{"agent_name": "billing"}))
	billingModel := scripted.NewSequence("billing-m", scripted.Text("I can help with your bill."), scripted.Text("Refund issued."))
	billing := mustAgent(t, llmagent.Config{Name: "billing", Description: "handles bills", Model: billingModel})
	root := mustAgent(t, llmagent.Config{Name: "root", Model: rootModel, SubAgents: []agent.Agent{billing}})
	f := newFixture(t, root, nil, nil)
	evs := f.run(t, "my bill is wrong", nil)
	if len(evs) != 3 {
		t.Fatalf("got %d events, want call, response, answer", len(evs))
	}
	if evs[1].Actions.TransferToAgent != "billing" {
		t.Fatalf("response event transfer = %q", evs[1].Actions.TransferToAgent)
	}
	if evs[2].Author != "billing" || evs[2].Text() != "I can help with your bill." {
		t.Fatalf("answer by %s: %q", evs[2].Author, evs[2].Text())
	}
	decl := rootModel.Requests()[0].Config.Tools[0].FunctionDeclarations[0]
	if decl.Name != "transfer_to_agent" {
		t.Fatalf("root was not offered the transfer tool: %s", decl.Name)
	}
	evs = f.run(t, "please refund", nil)
	if len(evs) != 1 || evs[0].Author != "billing" {
		t.Fatalf("next turn answered by %v, want billing directly", evs)
	}
	if len(rootModel.Requests()) != 1 {
		t.Fatal("root model was called again on the second turn")
	}
}

// TestA6TransferBackDisallowed checks that an agent that may not transfer
// to its parent does not keep the conversation.
func TestA6TransferBackDisallowed(t *testing.T) {
	rootModel := scripted.NewSequence("root-m", scripted.Call("transfer_to_agent", map[string]any{"agent_name": "leaf"}), scripted.Text("root again"))
	leaf := mustAgent(t, llmagent.Config{Name: "leaf", Model: scripted.NewSequence("leaf-m", scripted.Text("leaf")), DisallowTransferToParent: true})
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "root", Model: rootModel, SubAgents: []agent.Agent{leaf}}), nil, nil)
	f.run(t, "one", nil)
	evs := f.run(t, "two", nil)
	if evs[len(evs)-1].Author != "root" {
		t.Fatalf("second turn answered by %s, want root", evs[len(evs)-1].Author)
	}
}

// TestA7OtherAgentsAsContext checks that another agent's events appear in
// an agent's history as user content "For context: [B] said: ...".
func TestA7OtherAgentsAsContext(t *testing.T) {
	rootModel := scripted.NewSequence("root-m", scripted.Turn{Text: "Routing you.", Calls: []*genai.FunctionCall{{Name: "transfer_to_agent", Args: map[string]any{"agent_name": "helper"}}}})
	helperModel := scripted.NewSequence("helper-m", scripted.Text("done"))
	helper := mustAgent(t, llmagent.Config{Name: "helper", Model: helperModel})
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "root", Model: rootModel, SubAgents: []agent.Agent{helper}}), nil, nil)
	f.run(t, "hi", nil)
	contents := helperModel.Requests()[0].Contents
	var found bool
	for _, c := range contents {
		if c.Role == genai.RoleModel {
			t.Fatalf("helper's history has a model turn it did not produce: %+v", c.Parts[0])
		}
		if len(c.Parts) > 1 && c.Parts[0].Text == "For context:" && c.Parts[1].Text == "[root] said: Routing you." {
			found = true
		}
	}
	if !found {
		t.Fatal("root's text is not presented as context to helper")
	}
}

// TestA8ParallelCallsConcurrentMergedInOrder checks that the calls of one
// response run concurrently and merge into one event in call order.
func TestA8ParallelCallsConcurrentMergedInOrder(t *testing.T) {
	var mu sync.Mutex
	arrived := 0
	all := make(chan struct{})
	slow := fnTool{name: "slow", run: func(ctx context.Context, tc tool.Context, args map[string]any) (map[string]any, error) {
		mu.Lock()
		arrived++
		if arrived == 3 {
			close(all)
		}
		mu.Unlock()
		select { // only returns if all three calls are in flight together
		case <-all:
		case <-time.After(10 * time.Second):
			return nil, errors.New("calls did not run concurrently")
		}
		tc.State().Set(fmt.Sprint("k", args["i"]), args["i"])
		return map[string]any{"i": args["i"]}, nil
	}}
	calls := []*genai.FunctionCall{{Name: "slow", Args: map[string]any{"i": 0.0}}, {Name: "slow", Args: map[string]any{"i": 1.0}}, {Name: "slow", Args: map[string]any{"i": 2.0}}}
	m := scripted.NewSequence("m", scripted.Turn{Calls: calls}, scripted.Text("done"))
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, Tools: []tool.Tool{slow}}), nil, nil)
	evs := f.run(t, "go", nil)
	resp := evs[1].FunctionResponses()
	if len(resp) != 3 {
		t.Fatalf("merged event has %d responses, want 3", len(resp))
	}
	for i, r := range resp {
		if r.Response["i"] != float64(i) || r.ID != evs[0].FunctionCalls()[i].ID {
			t.Fatalf("response %d = %v (id %s), out of call order", i, r.Response, r.ID)
		}
		if _, ok := evs[1].Actions.StateDelta[fmt.Sprint("k", float64(i))]; !ok {
			t.Fatalf("state delta of call %d not merged: %v", i, evs[1].Actions.StateDelta)
		}
	}
}

// TestA9Callbacks checks that before-callbacks short-circuit and
// after-callbacks replace results.
func TestA9Callbacks(t *testing.T) {
	toolRan := false
	tl := fnTool{name: "t", run: func(context.Context, tool.Context, map[string]any) (map[string]any, error) {
		toolRan = true
		return map[string]any{"v": "real"}, nil
	}}
	t.Run("before-model skips model", func(t *testing.T) {
		m := scripted.NewSequence("m")
		a := mustAgent(t, llmagent.Config{Name: "a", Model: m, BeforeModel: []agent.BeforeModelCallback{
			func(ctx context.Context, cc *agent.CallbackContext, req *model.Request) (*model.Response, error) {
				cc.State().Set("cb", "before-model")
				return &model.Response{Content: genai.NewContentFromText("cached", genai.RoleModel)}, nil
			}}})
		f := newFixture(t, a, nil, nil)
		evs := f.run(t, "hi", nil)
		if len(m.Requests()) != 0 || evs[0].Text() != "cached" || evs[0].Actions.StateDelta["cb"] != "before-model" {
			t.Fatalf("model called %d times; event %q delta %v", len(m.Requests()), evs[0].Text(), evs[0].Actions.StateDelta)
		}
	})
	t.Run("before-tool skips tool, after-tool replaces", func(t *testing.T) {
		toolRan = false
		m := scripted.NewSequence("m", scripted.Call("t", nil), scripted.Text("ok"), scripted.Call("t", nil), scripted.Text("ok"))
		skip := true
		a := mustAgent(t, llmagent.Config{Name: "a", Model: m, Tools: []tool.Tool{tl},
			BeforeTool: []agent.BeforeToolCallback{func(ctx context.Context, tc tool.Context, tt tool.Tool, args map[string]any) (map[string]any, error) {
				if skip {
					return map[string]any{"v": "from-callback"}, nil
				}
				return nil, nil
			}},
			AfterTool: []agent.AfterToolCallback{func(ctx context.Context, tc tool.Context, tt tool.Tool, args, res map[string]any) (map[string]any, error) {
				if res["v"] == "real" {
					return map[string]any{"v": "replaced"}, nil
				}
				return nil, nil
			}}})
		f := newFixture(t, a, nil, nil)
		evs := f.run(t, "1", nil)
		if toolRan || evs[1].FunctionResponses()[0].Response["v"] != "from-callback" {
			t.Fatalf("tool ran=%v response=%v", toolRan, evs[1].FunctionResponses()[0].Response)
		}
		skip = false
		evs = f.run(t, "2", nil)
		if !toolRan || evs[1].FunctionResponses()[0].Response["v"] != "replaced" {
			t.Fatalf("after-tool did not replace: %v", evs[1].FunctionResponses()[0].Response)
		}
	})
	t.Run("after-model replaces", func(t *testing.T) {
		m := scripted.NewSequence("m", scripted.Text("raw"))
		a := mustAgent(t, llmagent.Config{Name: "a", Model: m, AfterModel: []agent.AfterModelCallback{
			func(ctx context.Context, cc *agent.CallbackContext, r *model.Response) (*model.Response, error) {
				return &model.Response{Content: genai.NewContentFromText("edited", genai.RoleModel)}, nil
			}}})
		if evs := newFixture(t, a, nil, nil).run(t, "hi", nil); evs[0].Text() != "edited" {
			t.Fatalf("text %q", evs[0].Text())
		}
	})
	t.Run("before-agent short-circuits, after-agent appends", func(t *testing.T) {
		m := scripted.NewSequence("m", scripted.Text("model answer"))
		block := true
		a := mustAgent(t, llmagent.Config{Name: "a", Model: m,
			BeforeAgent: []agent.BeforeAgentCallback{func(ctx context.Context, cc *agent.CallbackContext) (*genai.Content, error) {
				if block {
					return genai.NewContentFromText("blocked", genai.RoleModel), nil
				}
				return nil, nil
			}},
			AfterAgent: []agent.AfterAgentCallback{func(ctx context.Context, cc *agent.CallbackContext) (*genai.Content, error) {
				return genai.NewContentFromText("postscript", genai.RoleModel), nil
			}}})
		f := newFixture(t, a, nil, nil)
		evs := f.run(t, "hi", nil)
		if len(evs) != 1 || evs[0].Text() != "blocked" || len(m.Requests()) != 0 {
			t.Fatalf("before-agent did not short-circuit: %d events", len(evs))
		}
		block = false
		evs = f.run(t, "hi", nil)
		if len(evs) != 2 || evs[0].Text() != "model answer" || evs[1].Text() != "postscript" {
			t.Fatalf("after-agent: %d events", len(evs))
		}
	})
	t.Run("on-model-error recovers", func(t *testing.T) {
		m := scripted.NewSequence("m", scripted.Turn{Err: errors.New("overloaded")})
		a := mustAgent(t, llmagent.Config{Name: "a", Model: m, OnModelError: []agent.OnModelErrorCallback{
			func(ctx context.Context, cc *agent.CallbackContext, req *model.Request, err error) (*model.Response, error) {
				return &model.Response{Content: genai.NewContentFromText("fallback: "+err.Error(), genai.RoleModel)}, nil
			}}})
		if evs := newFixture(t, a, nil, nil).run(t, "hi", nil); !strings.Contains(evs[0].Text(), "overloaded") {
			t.Fatalf("text %q", evs[0].Text())
		}
	})
}

// TestR1ToolStateVisibleToNextStep checks that state a tool sets is
// committed with its response event and seen by the next model step.
func TestR1ToolStateVisibleToNextStep(t *testing.T) {
	setter := fnTool{name: "set", run: func(ctx context.Context, tc tool.Context, args map[string]any) (map[string]any, error) {
		tc.State().Set("user:color", "blue")
		if v, _ := tc.State().Get("user:color"); v != "blue" {
			return nil, fmt.Errorf("dirty read %v", v)
		}
		return map[string]any{}, nil
	}}
	var seenAtNextStep any
	var f *fixture
	m := scripted.NewSequence("m", scripted.Call("set", nil), scripted.Text("done"))
	a := mustAgent(t, llmagent.Config{Name: "a", Model: m, Tools: []tool.Tool{setter}, Instruction: "Color: {user:color?}",
		BeforeModel: []agent.BeforeModelCallback{func(ctx context.Context, cc *agent.CallbackContext, req *model.Request) (*model.Response, error) {
			if s, err := f.svc.Get(ctx, f.key, nil); err == nil {
				seenAtNextStep, _ = s.Get("user:color")
			}
			return nil, nil
		}}})
	f = newFixture(t, a, nil, nil)
	f.run(t, "go", nil)
	if seenAtNextStep != "blue" {
		t.Fatalf("storage at the next step has user:color = %v", seenAtNextStep)
	}
	if got := m.Requests()[1].Config.SystemInstruction.Parts[0].Text; got != "Color: blue\n\nYou are an agent. Your internal name is \"a\"." {
		t.Fatalf("second instruction %q", got)
	}
}

// TestR4StreamingAggregatedOnce checks streaming: partial events for the
// chunks, then one aggregated event committed once.
func TestR4StreamingAggregatedOnce(t *testing.T) {
	m := scripted.NewSequence("m", scripted.Turn{Text: "Hello there world", Chunks: []string{"Hello ", "there ", "world"}})
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m}), nil, nil)
	evs := f.run(t, "hi", &runner.RunOptions{Streaming: true})
	if len(evs) != 4 {
		t.Fatalf("got %d events, want 3 partial + 1 final", len(evs))
	}
	for i, e := range evs[:3] {
		if !e.Partial {
			t.Fatalf("event %d not partial", i)
		}
	}
	if evs[3].Partial || evs[3].Text() != "Hello there world" {
		t.Fatalf("final %q partial=%v", evs[3].Text(), evs[3].Partial)
	}
	s := f.session(t)
	if s.Len() != 2 || s.At(1).Text() != "Hello there world" {
		t.Fatalf("stored %d events", s.Len())
	}
}

// chunkOnly streams partial chunks and never sends an aggregated response.
type chunkOnly struct{ chunks []string }

func (c chunkOnly) Name() string { return "chunky" }
func (c chunkOnly) Generate(ctx context.Context, req *model.Request, stream bool) func(func(*model.Response, error) bool) {
	return func(yield func(*model.Response, error) bool) {
		for _, ch := range c.chunks {
			if !yield(&model.Response{Partial: true, Content: genai.NewContentFromText(ch, genai.RoleModel)}, nil) {
				return
			}
		}
	}
}

// TestR4AggregatesWhenModelDoesNot checks the agent's own aggregator.
func TestR4AggregatesWhenModelDoesNot(t *testing.T) {
	m := llmFunc{name: "chunky", gen: chunkOnly{chunks: []string{"a", "b", "c"}}.Generate}
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m}), nil, nil)
	evs := f.run(t, "hi", &runner.RunOptions{Streaming: true})
	if last := evs[len(evs)-1]; last.Partial || last.Text() != "abc" {
		t.Fatalf("final %q partial=%v", last.Text(), last.Partial)
	}
	if f.session(t).Len() != 2 {
		t.Fatal("aggregate not committed exactly once")
	}
}

// TestR8CallbackPanicOnConcurrentCall checks that a tool callback that
// panics while the calls of one model turn run concurrently, on goroutines
// where nothing else could recover it, gives that call an error response
// instead of ending the process; the other call and the run go on.
func TestR8CallbackPanicOnConcurrentCall(t *testing.T) {
	ok := fnTool{name: "ok", run: func(context.Context, tool.Context, map[string]any) (map[string]any, error) {
		return map[string]any{"done": true}, nil
	}}
	other := fnTool{name: "other", run: ok.run}
	m := scripted.NewSequence("m", scripted.Turn{Calls: []*genai.FunctionCall{{Name: "ok"}, {Name: "other"}}}, scripted.Text("sorry"))
	a := mustAgent(t, llmagent.Config{Name: "a", Model: m, Tools: []tool.Tool{ok, other},
		BeforeTool: []agent.BeforeToolCallback{func(_ context.Context, _ tool.Context, tt tool.Tool, _ map[string]any) (map[string]any, error) {
			if tt.Name() == "other" {
				panic("callback bug")
			}
			return nil, nil
		}}})
	evs := newFixture(t, a, nil, nil).run(t, "go", nil)
	resp := evs[1].FunctionResponses()
	if len(resp) != 2 || resp[0].Response["done"] != true || !strings.Contains(fmt.Sprint(resp[1].Response["error"]), "a callback panicked: callback bug") {
		t.Fatalf("responses %v", resp)
	}
	if evs[len(evs)-1].Text() != "sorry" {
		t.Fatal("the run did not go on")
	}
}

// TestR8ToolErrorsAndPanics checks that a failing or panicking tool gives
// the model an error response and the run goes on.
func TestR8ToolErrorsAndPanics(t *testing.T) {
	bad := fnTool{name: "bad", run: func(context.Context, tool.Context, map[string]any) (map[string]any, error) {
		return nil, errors.New("disk full")
	}}
	crash := fnTool{name: "crash", run: func(_ context.Context, _ tool.Context, args map[string]any) (map[string]any, error) {
		return map[string]any{"n": 1 / len(args)}, nil // args is empty: a run-time panic
	}}
	m := scripted.NewSequence("m", scripted.Turn{Calls: []*genai.FunctionCall{{Name: "bad"}, {Name: "crash"}}}, scripted.Text("sorry"))
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, Tools: []tool.Tool{bad, crash}}), nil, nil)
	evs := f.run(t, "go", nil)
	resp := evs[1].FunctionResponses()
	if !strings.Contains(fmt.Sprint(resp[0].Response["error"]), "disk full") || !strings.Contains(fmt.Sprint(resp[1].Response["error"]), "panicked") {
		t.Fatalf("responses %v / %v", resp[0].Response, resp[1].Response)
	}
	if evs[2].Text() != "sorry" {
		t.Fatal("the model was not called with the error responses")
	}
	if got := m.Requests()[1].Contents; got[len(got)-1].Parts[0].FunctionResponse == nil {
		t.Fatal("error responses not in the model's history")
	}
}

// TestR9UnknownTool checks that calling a tool that does not exist gives an
// error response naming it.
func TestR9UnknownTool(t *testing.T) {
	m := scripted.NewSequence("m", scripted.Call("teleport", nil), scripted.Text("ok"))
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m}), nil, nil)
	evs := f.run(t, "go", nil)
	if msg := fmt.Sprint(evs[1].FunctionResponses()[0].Response["error"]); !strings.Contains(msg, `"teleport" not found`) {
		t.Fatalf("error %q", msg)
	}
}

// TestR9CallToRequestOnlyTool: a model that calls a tool which is not a
// function (a provider's built-in search, held only to change requests)
// gets an error response naming it, and nothing runs.
func TestR9CallToRequestOnlyTool(t *testing.T) {
	m := scripted.NewSequence("m", scripted.Call(builtintool.GoogleSearchName, map[string]any{"q": "x"}), scripted.Text("ok"))
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, Tools: []tool.Tool{builtintool.GoogleSearch()}}), nil, nil)
	evs := f.run(t, "go", nil)
	if msg := fmt.Sprint(evs[1].FunctionResponses()[0].Response["error"]); !strings.Contains(msg, `"google_search" is not a function`) {
		t.Fatalf("error %q", msg)
	}
	if got := model.Text(evs[len(evs)-1].Content, ""); got != "ok" {
		t.Fatalf("final text %q", got)
	}
}

// TestT3LongRunningPausesAndResumes checks that a long-running call pauses
// the invocation and a later function response resumes the asking agent.
func TestT3LongRunningPausesAndResumes(t *testing.T) {
	approve := fnTool{name: "approve", long: true, run: func(context.Context, tool.Context, map[string]any) (map[string]any, error) {
		return nil, nil // the result comes later from the client
	}}
	m := scripted.NewSequence("m", scripted.Call("approve", map[string]any{"amount": 5.0}), scripted.Text("approved, thanks"))
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, Tools: []tool.Tool{approve}}), nil, nil)
	evs := f.run(t, "pay 5", nil)
	if len(evs) != 2 || len(evs[0].LongRunningToolIDs) != 1 || !evs[0].IsFinalResponse() {
		t.Fatalf("want the paused call event and the record that its tool ran, got %d events", len(evs))
	}
	id := evs[0].LongRunningToolIDs[0]
	if got := evs[1].StartedCalls(); evs[1].Content != nil || !slices.Equal(got, []string{id}) {
		t.Fatalf("second event: content %v, started calls %v, want none and [%s]", evs[1].Content, got, id)
	}
	resp := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{ID: id, Name: "approve", Response: map[string]any{"ok": true}}}}}
	evs, err := f.r.RunSync(context.Background(), user, sid, resp, nil)
	if err != nil {
		t.Fatal(err)
	}
	if evs[len(evs)-1].Text() != "approved, thanks" {
		t.Fatalf("resumed answer %q", evs[len(evs)-1].Text())
	}
}

// TestHistoryIsIncremental checks that the history a model receives over
// many turns is identical to the history built from scratch.
func TestHistoryIsIncremental(t *testing.T) {
	var turns []scripted.Turn
	for i := range 5 {
		turns = append(turns, scripted.Call("echo", map[string]any{"i": float64(i)}), scripted.Text(fmt.Sprint("answer ", i)))
	}
	echo := fnTool{name: "echo", run: func(ctx context.Context, tc tool.Context, args map[string]any) (map[string]any, error) {
		return args, nil
	}}
	m := scripted.NewSequence("m", turns...)
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, Tools: []tool.Tool{echo}}), nil, nil)
	for i := range 5 {
		f.run(t, fmt.Sprint("q", i), nil)
	}
	reqs := m.Requests()
	last := reqs[len(reqs)-1].Contents
	want := event.History(f.session(t).Events()[:f.session(t).Len()-1], event.HistoryOptions{Agent: "a"})
	if len(last) != len(want) {
		t.Fatalf("incremental history has %d contents, from scratch %d", len(last), len(want))
	}
	for i := range want {
		if fmt.Sprint(last[i].Role, len(last[i].Parts)) != fmt.Sprint(want[i].Role, len(want[i].Parts)) {
			t.Fatalf("content %d differs", i)
		}
	}
}

// TestA6NoTransferToWorkflowParent checks that an LLM agent under a
// workflow agent is not offered its parent as a transfer target.
func TestA6NoTransferToWorkflowParent(t *testing.T) {
	m := scripted.NewSequence("m", scripted.Text("done"))
	child := mustAgent(t, llmagent.Config{Name: "step", Model: m})
	seq, err := workflowagent.NewSequential(workflowagent.Config{Name: "pipeline", SubAgents: []agent.Agent{child}})
	if err != nil {
		t.Fatal(err)
	}
	newFixture(t, seq, nil, nil).run(t, "go", nil)
	req := m.Requests()[0]
	if sys := systemTexts(req); len(req.Config.Tools) != 0 || len(sys) != 1 || sys[0] != `You are an agent. Your internal name is "step".` {
		t.Fatalf("child under a workflow was offered a transfer: tools %d, system instruction %q", len(req.Config.Tools), sys)
	}
}

// TestT3PauseStopsEnclosingWorkflow checks that a long-running call pauses
// the whole invocation: the next step of a sequence does not run.
func TestT3PauseStopsEnclosingWorkflow(t *testing.T) {
	lr := fnTool{name: "wait", long: true, run: func(context.Context, tool.Context, map[string]any) (map[string]any, error) { return nil, nil }}
	first := mustAgent(t, llmagent.Config{Name: "first", Model: scripted.NewSequence("m1", scripted.Call("wait", nil)), Tools: []tool.Tool{lr}})
	secondModel := scripted.NewSequence("m2", scripted.Text("second"))
	second := mustAgent(t, llmagent.Config{Name: "second", Model: secondModel})
	seq, err := workflowagent.NewSequential(workflowagent.Config{Name: "pipeline", SubAgents: []agent.Agent{first, second}})
	if err != nil {
		t.Fatal(err)
	}
	var evs []*event.Event
	for _, ev := range newFixture(t, seq, nil, nil).run(t, "go", nil) {
		// Leave out the pipeline's checkpoint before its first step, and
		// the record that the tool ran.
		if !agent.IsCheckpoint(ev) && ev.StartedCalls() == nil {
			evs = append(evs, ev)
		}
	}
	if len(evs) != 1 || len(secondModel.Requests()) != 0 {
		t.Fatalf("%d events; second agent called %d times; want a pause after the call", len(evs), len(secondModel.Requests()))
	}
}

// TestHistoryAfterSessionRecreated checks that the incremental history
// notices a session deleted and recreated under the same id, even with more
// events than before: the model sees only the new session's events.
func TestHistoryAfterSessionRecreated(t *testing.T) {
	m := scripted.NewSequence("m", scripted.Text("first"), scripted.Text("second"))
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m}), nil, nil)
	f.run(t, "old question", nil)
	ctx := context.Background()
	if err := f.svc.Delete(ctx, f.key); err != nil {
		t.Fatal(err)
	}
	s, err := f.svc.Create(ctx, f.key, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := f.svc.AppendEvent(ctx, s, event.NewUserText("e-new", fmt.Sprint("new note ", i))); err != nil {
			t.Fatal(err)
		}
	}
	f.run(t, "new question", nil)
	var texts []string
	for _, c := range m.Requests()[1].Contents {
		texts = append(texts, c.Parts[0].Text)
	}
	if strings.Join(texts, "|") != "new note 0|new note 1|new note 2|new question" {
		t.Fatalf("history after recreation: %q", texts)
	}
}
