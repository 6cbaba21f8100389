package agenttool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/artifact/memartifact"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/memory/memmemory"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/agenttool"
)

type parentEnv struct {
	svc  *session.Service
	sess *session.Session
	inv  *agent.Invocation
	tc   *agent.CallbackContext
}

// newParent builds the context of a "caller" agent calling a tool, in a
// session with the given state and services.
func newParent(t *testing.T, state map[string]any, arts *artifact.Service, mem *memory.Service) *parentEnv {
	t.Helper()
	ctx := context.Background()
	svc := memsession.NewService()
	sess, err := svc.Create(ctx, session.Key{AppName: "app", UserID: "u1", SessionID: "parent"}, state)
	if err != nil {
		t.Fatal(err)
	}
	caller := mustAgent(t, agent.Config{Name: "caller", Run: func(context.Context, *agent.Invocation) iter.Seq2[*event.Event, error] {
		return func(func(*event.Event, error) bool) {}
	}})
	tree, err := agent.NewTree(caller)
	if err != nil {
		t.Fatal(err)
	}
	inv := agent.NewInvocation(agent.InvocationConfig{Session: sess, Tree: tree, Artifacts: arts, Memory: mem})
	inv = inv.For(caller)
	return &parentEnv{svc: svc, sess: sess, inv: inv, tc: agent.NewToolContext(inv, "call-1")}
}

func mustAgent(t *testing.T, cfg agent.Config) *agent.Custom {
	t.Helper()
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func userText(inv *agent.Invocation) string {
	var b strings.Builder
	for _, p := range inv.UserContent().Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// newHelper is a custom child agent: it answers twice (the second answer is
// the one that counts) and writes state of every scope.
func newHelper(t *testing.T) *agent.Custom {
	return mustAgent(t, agent.Config{Name: "helper", Description: "Answers questions about a topic.",
		Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
			return func(yield func(*event.Event, error) bool) {
				first := inv.NewEvent()
				first.Content = genai.NewContentFromText("let me think", genai.RoleModel)
				if !yield(first, nil) {
					return
				}
				topic, _ := inv.Session().Get("topic")
				ev := inv.NewEvent()
				ev.Content = genai.NewContentFromText(fmt.Sprintf("%s, about %v", strings.ToUpper(userText(inv)), topic), genai.RoleModel)
				ev.Actions.StateDelta = map[string]any{
					"last_question": userText(inv),
					"topic":         topic, // written back unchanged: not forwarded
					"temp:scratch":  1,
					"user:lang":     "en",
					"obsolete":      nil,
				}
				yield(ev, nil)
			}
		}})
}

func TestDeclaration(t *testing.T) {
	at, err := agenttool.New(newHelper(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	d := at.Declaration()
	if d.Name != "helper" || d.Description != "Answers questions about a topic." {
		t.Errorf("declaration = %q %q", d.Name, d.Description)
	}
	// ADK's declaration of an agent tool: a required string request, a
	// string result.
	got, _ := json.Marshal(d)
	want := `{"description":"Answers questions about a topic.","name":"helper","parameters":{"properties":{"request":{"type":"STRING"}},"required":["request"],"type":"OBJECT"},"response":{"type":"STRING"}}`
	if string(got) != want {
		t.Errorf("declaration = %s, want %s", got, want)
	}
	if _, ok := tool.Tool(at).(tool.LongRunning); ok {
		t.Error("an agent tool claims to be long-running")
	}
	if _, err := agenttool.New(nil, nil); err == nil {
		t.Error("nil agent accepted")
	}
	dup := mustAgent(t, agent.Config{Name: "x", SubAgents: []agent.Agent{newHelper(t), newHelper(t)},
		Run: func(context.Context, *agent.Invocation) iter.Seq2[*event.Event, error] {
			return func(func(*event.Event, error) bool) {}
		}})
	if _, err := agenttool.New(dup, nil); err == nil {
		t.Error("an invalid agent tree was accepted")
	}
}

// TestRunCustomAgent checks the answer, the state forwarded to the caller
// and that the child's events stay out of the caller's session (CONFORMANCE A10).
func TestRunCustomAgent(t *testing.T) {
	ctx := context.Background()
	p := newParent(t, map[string]any{"topic": "bees", "obsolete": "x", "user:name": "Ann"}, nil, nil)
	at, err := agenttool.New(newHelper(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := at.Run(ctx, p.tc, map[string]any{"request": "why buzz"})
	if err != nil {
		t.Fatal(err)
	}
	if got := res["result"]; got != "WHY BUZZ, about bees" || len(res) != 1 {
		t.Errorf("result = %v", res)
	}
	delta := p.tc.Actions().StateDelta
	if delta["last_question"] != "why buzz" || delta["user:lang"] != "en" {
		t.Errorf("forwarded delta = %v", delta)
	}
	if v, ok := delta["obsolete"]; !ok || v != nil {
		t.Errorf("a deletion was not forwarded: %v", delta)
	}
	for _, k := range []string{"topic", "temp:scratch", "user:name"} {
		if _, ok := delta[k]; ok {
			t.Errorf("key %q forwarded, want only the child's changes: %v", k, delta)
		}
	}
	// The caller reads the forwarded state at once (SetLocal); nothing is
	// committed until its response event is.
	if v, _ := p.sess.Get("last_question"); v != "why buzz" {
		t.Errorf("caller's live state last_question = %v", v)
	}
	if p.sess.Len() != 0 {
		t.Errorf("caller's session has %d events, want 0", p.sess.Len())
	}
	stored, err := p.svc.Get(ctx, p.sess.Key(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Len() != 0 {
		t.Errorf("stored caller session has %d events", stored.Len())
	}
	if _, ok := stored.Get("last_question"); ok {
		t.Error("child state was committed to the caller's session directly")
	}
	list, err := p.svc.List(ctx, "app", "", nil)
	if err != nil || len(list.Sessions) != 1 {
		t.Errorf("caller's session service holds %d sessions (%v), want 1", len(list.Sessions), err)
	}
	if p.tc.Actions().SkipSummarization {
		t.Error("SkipSummarization set without the option")
	}
}

func TestSkipSummarization(t *testing.T) {
	p := newParent(t, nil, nil, nil)
	at, err := agenttool.New(newHelper(t), &agenttool.Config{SkipSummarization: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := at.Run(context.Background(), p.tc, map[string]any{"request": "q"}); err != nil {
		t.Fatal(err)
	}
	if !p.tc.Actions().SkipSummarization {
		t.Error("SkipSummarization not set")
	}
}

func TestBadRequest(t *testing.T) {
	p := newParent(t, nil, nil, nil)
	at, err := agenttool.New(newHelper(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []map[string]any{nil, {}, {"request": 3.0}, {"query": "q"}} {
		_, err := at.Run(context.Background(), p.tc, args)
		if !errors.Is(err, agenttool.ErrInvalidRequest) {
			t.Errorf("args %v: err = %v, want ErrInvalidRequest", args, err)
		}
	}
}

// TestR8ChildErrors checks that an error or a model error of the child
// becomes the tool's error.
func TestR8ChildErrors(t *testing.T) {
	errChild := errors.New("database down")
	failing := mustAgent(t, agent.Config{Name: "failing", Run: func(context.Context, *agent.Invocation) iter.Seq2[*event.Event, error] {
		return func(yield func(*event.Event, error) bool) { yield(nil, errChild) }
	}})
	at, err := agenttool.New(failing, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := newParent(t, nil, nil, nil)
	if _, err := at.Run(context.Background(), p.tc, map[string]any{"request": "q"}); !errors.Is(err, errChild) {
		t.Errorf("err = %v, want %v", err, errChild)
	}

	modelErr := mustAgent(t, agent.Config{Name: "model_error", Run: func(_ context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
		return func(yield func(*event.Event, error) bool) {
			ev := inv.NewEvent()
			ev.ErrorCode, ev.ErrorMessage = "SAFETY", "blocked"
			yield(ev, nil)
		}
	}})
	at, err = agenttool.New(modelErr, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = at.Run(context.Background(), p.tc, map[string]any{"request": "q"})
	if err == nil || !strings.Contains(err.Error(), "SAFETY blocked") {
		t.Errorf("err = %v, want the child's model error", err)
	}
}

// TestServicesForwarded checks that the child reads and writes the caller's
// artifacts (saves recorded in the caller's artifact delta) and searches the
// caller's memory (CONFORMANCE A10).
func TestServicesForwarded(t *testing.T) {
	ctx := context.Background()
	arts := memartifact.NewService()
	mem := memmemory.NewService()
	p := newParent(t, nil, arts, mem)
	if _, err := arts.Save(ctx, artifact.Ref{AppName: "app", UserID: "u1", SessionID: "parent", Name: "brief.txt"}, genai.NewPartFromText("brief")); err != nil {
		t.Fatal(err)
	}
	var sawMemory bool
	writer := mustAgent(t, agent.Config{Name: "writer", Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
		return func(yield func(*event.Event, error) bool) {
			sawMemory = inv.Memory() == mem
			cc := agent.NewCallbackContext(inv)
			brief, err := cc.LoadArtifact(ctx, "brief.txt", artifact.Latest)
			if err != nil {
				yield(nil, err)
				return
			}
			names, err := cc.ListArtifacts(ctx)
			if err != nil {
				yield(nil, err)
				return
			}
			if _, err := cc.SaveArtifact(ctx, "report.txt", genai.NewPartFromText("report on "+brief.Text)); err != nil {
				yield(nil, err)
				return
			}
			ev := cc.Event()
			ev.Content = genai.NewContentFromText(strings.Join(names, ","), genai.RoleModel)
			yield(ev, nil)
		}
	}})
	at, err := agenttool.New(writer, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := at.Run(ctx, p.tc, map[string]any{"request": "write it"})
	if err != nil {
		t.Fatal(err)
	}
	if res["result"] != "brief.txt" {
		t.Errorf("child listed %v, want the caller's artifacts", res["result"])
	}
	if !sawMemory {
		t.Error("the child did not get the caller's memory service")
	}
	if v, ok := p.tc.Actions().ArtifactDelta["report.txt"]; !ok || v != 0 {
		t.Errorf("caller's artifact delta = %v", p.tc.Actions().ArtifactDelta)
	}
	got, err := p.tc.LoadArtifact(ctx, "report.txt", artifact.Latest)
	if err != nil || got.Text != "report on brief" {
		t.Errorf("caller loads report: %v, %v", got, err)
	}
}

func TestNoArtifactService(t *testing.T) {
	p := newParent(t, nil, nil, nil)
	saver := mustAgent(t, agent.Config{Name: "saver", Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
		return func(yield func(*event.Event, error) bool) {
			_, err := agent.NewCallbackContext(inv).SaveArtifact(ctx, "a.txt", genai.NewPartFromText("x"))
			ev := inv.NewEvent()
			ev.Content = genai.NewContentFromText(fmt.Sprint(errors.Is(err, agent.ErrNoService)), genai.RoleModel)
			yield(ev, nil)
		}
	}})
	at, err := agenttool.New(saver, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := at.Run(context.Background(), p.tc, map[string]any{"request": "save"})
	if err != nil || res["result"] != "true" {
		t.Errorf("child without artifact service: %v, %v", res, err)
	}
}

// TestConcurrentCalls runs several calls of one tool at once, as the calls
// of one model response do; run with -race.
func TestConcurrentCalls(t *testing.T) {
	p := newParent(t, map[string]any{"topic": "ants"}, nil, nil)
	at, err := agenttool.New(newHelper(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]string, 8)
	errs := make([]error, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tc := agent.NewToolContext(p.inv, fmt.Sprint("call-", i))
			res, err := at.Run(context.Background(), tc, map[string]any{"request": fmt.Sprint("q", i)})
			errs[i] = err
			if err == nil {
				results[i], _ = res["result"].(string)
			}
		}()
	}
	wg.Wait()
	for i := range results {
		if want := fmt.Sprintf("Q%d, about ants", i); errs[i] != nil || results[i] != want {
			t.Errorf("call %d: %q, %v; want %q", i, results[i], errs[i], want)
		}
	}
}

// TestWithLLMAgents runs an LLM agent that calls another LLM agent through
// the tool, end to end through the runner with scripted models (CONFORMANCE A10).
func TestWithLLMAgents(t *testing.T) {
	ctx := context.Background()
	childModel := scriptedText("4")
	child, err := llmagent.New(llmagent.Config{Name: "calculator", Description: "Does arithmetic.", Model: childModel, OutputKey: "answer"})
	if err != nil {
		t.Fatal(err)
	}
	for _, skip := range []bool{false, true} {
		t.Run(fmt.Sprint("skip=", skip), func(t *testing.T) {
			at, err := agenttool.New(child, &agenttool.Config{SkipSummarization: skip})
			if err != nil {
				t.Fatal(err)
			}
			parentModel := scriptedSequence(
				callTurn("calculator", map[string]any{"request": "2+2"}),
				"It is 4.",
			)
			parent, err := llmagent.New(llmagent.Config{Name: "assistant", Model: parentModel, Tools: []tool.Tool{at}})
			if err != nil {
				t.Fatal(err)
			}
			svc := memsession.NewService()
			r, err := runner.New(runner.Config{AppName: "app", Agent: parent, Sessions: svc, AutoCreateSession: true})
			if err != nil {
				t.Fatal(err)
			}
			events, err := r.RunSync(ctx, "u1", "s1", genai.NewContentFromText("what is 2+2?", genai.RoleUser), nil)
			if err != nil {
				t.Fatal(err)
			}
			var response *event.Event
			for _, ev := range events {
				if ev.Author != "assistant" {
					t.Errorf("event by %q reached the caller's run", ev.Author)
				}
				if len(ev.FunctionResponses()) > 0 {
					response = ev
				}
			}
			if response == nil {
				t.Fatal("no function response event")
			}
			fr := response.FunctionResponses()[0]
			if fr.Name != "calculator" || fr.Response["result"] != "4" {
				t.Errorf("function response = %s %v", fr.Name, fr.Response)
			}
			if response.Actions.StateDelta["answer"] != "4" {
				t.Errorf("child's output key not forwarded: %v", response.Actions.StateDelta)
			}
			sess, err := svc.Get(ctx, session.Key{AppName: "app", UserID: "u1", SessionID: "s1"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if v, _ := sess.Get("answer"); v != "4" {
				t.Errorf("committed state answer = %v", v)
			}
			for _, ev := range sess.Events() {
				if ev.Author != "user" && ev.Author != "assistant" {
					t.Errorf("child event by %q in the caller's session", ev.Author)
				}
			}
			wantCalls := 2
			if skip {
				wantCalls = 1
			}
			if n := len(parentModel.Requests()); n != wantCalls {
				t.Errorf("caller's model called %d times, want %d", n, wantCalls)
			}
			reqs := childModel.Requests()
			if len(reqs) == 0 || scripted.LastUserText(reqs[len(reqs)-1]) != "2+2" {
				t.Error("the child model did not receive the request as user text")
			}
			last := events[len(events)-1]
			if skip {
				if last != response || !last.IsFinalResponse() {
					t.Error("with SkipSummarization the function response should be the final event")
				}
			} else if textOf(last) != "It is 4." {
				t.Errorf("final answer = %q", textOf(last))
			}
		})
	}
}

func textOf(ev *event.Event) string {
	if ev.Content == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range ev.Content.Parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// TestChildFailureKeepsCallersArtifacts: a child that saves an artifact and
// then fails does not take back the version the caller's delta records;
// the caller's commit decides about it (CONFORMANCE R11).
func TestChildFailureKeepsCallersArtifacts(t *testing.T) {
	ctx := context.Background()
	arts := memartifact.NewService()
	p := newParent(t, nil, arts, nil)
	failing := mustAgent(t, agent.Config{Name: "failing", Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
		return func(yield func(*event.Event, error) bool) {
			if _, err := agent.NewCallbackContext(inv).SaveArtifact(ctx, "draft.txt", genai.NewPartFromText("draft")); err != nil {
				yield(nil, err)
				return
			}
			yield(nil, errors.New("child failed after saving"))
		}
	}})
	at, err := agenttool.New(failing, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := at.Run(ctx, p.tc, map[string]any{"request": "draft"}); err == nil {
		t.Fatal("the child's failure was not reported")
	}
	v, ok := p.tc.Actions().ArtifactDelta["draft.txt"]
	if !ok || v != 0 {
		t.Fatalf("caller's artifact delta = %v, want draft.txt: 0", p.tc.Actions().ArtifactDelta)
	}
	if got, err := p.tc.LoadArtifact(ctx, "draft.txt", v); err != nil || got.Text != "draft" {
		t.Errorf("the version the caller records: %v, %v", got, err)
	}
}
