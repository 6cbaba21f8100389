package llmagent_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/codeexec"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// marked returns the events of evs that record a model call.
func marked(evs []*event.Event) []*event.Event {
	var out []*event.Event
	for _, ev := range evs {
		if ev.LLMCall {
			out = append(out, ev)
		}
	}
	return out
}

// TestR7EventsRecordModelCalls: the session log holds exactly one event
// marked as a model call (event.Event.LLMCall) per call of the model, whatever
// else the agent commits: tool responses, streamed chunks (never stored,
// never marked), a before-model callback's answer, code execution results,
// structured answers, confirmation requests, a model error turned into a
// response by a callback. This is what the runner counts when it resumes
// an invocation (R7).
func TestR7EventsRecordModelCalls(t *testing.T) {
	ctx := context.Background()
	check := func(t *testing.T, f *fixture, m *scripted.Model, wantCalls int) {
		t.Helper()
		evs := f.session(t).Events()
		if n := len(m.Requests()); n != wantCalls {
			t.Fatalf("the model was called %d times, want %d", n, wantCalls)
		}
		if got := marked(evs); len(got) != wantCalls {
			t.Fatalf("%d of %d events marked as model calls, want %d", len(got), len(evs), wantCalls)
		}
		for _, ev := range marked(evs) {
			if ev.Author == event.AuthorUser || ev.Content == nil || ev.Content.Role != genai.RoleModel {
				t.Fatalf("marked event of %s with content %+v", ev.Author, ev.Content)
			}
		}
	}

	t.Run("tool round, streamed", func(t *testing.T) {
		m := scripted.NewSequence("m", scripted.Call("lookup", nil), scripted.Text("two million"))
		f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, Tools: []tool.Tool{lookupTool()}}), nil, nil)
		for _, ev := range f.run(t, "how many?", &runner.RunOptions{Streaming: true}) {
			if ev.Partial && ev.LLMCall {
				t.Fatal("a streamed chunk is marked as a model call")
			}
		}
		check(t, f, m, 2)
	})

	t.Run("before-model callback answers", func(t *testing.T) {
		m := scripted.NewSequence("m", scripted.Text("live"))
		cached := func(_ context.Context, _ *agent.CallbackContext, req *model.Request) (*model.Response, error) {
			if scripted.LastUserText(req) == "cached" {
				return &model.Response{Content: genai.NewContentFromText("from cache", genai.RoleModel)}, nil
			}
			return nil, nil
		}
		f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, BeforeModel: []agent.BeforeModelCallback{cached}}), nil, nil)
		if evs := f.run(t, "cached", nil); len(evs) != 1 || evs[0].Text() != "from cache" || evs[0].LLMCall {
			t.Fatalf("the callback's answer: %d events, marked %v", len(evs), len(marked(evs)) > 0)
		}
		f.run(t, "live", nil)
		check(t, f, m, 1)
	})

	t.Run("structured answer", func(t *testing.T) {
		m := scripted.NewSequence("m",
			scripted.Turn{Calls: []*genai.FunctionCall{{Name: "lookup", Args: map[string]any{}}}},
			scripted.Turn{Calls: []*genai.FunctionCall{{Name: llmagent.SetModelResponseName, Args: map[string]any{"city": "Paris", "population": 2100000}}}},
		)
		f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, OutputSchema: citySchema, Tools: []tool.Tool{lookupTool()}}), nil, nil)
		evs := f.run(t, "Paris?", nil)
		if last := evs[len(evs)-1]; last.Text() != `{"city":"Paris","population":2100000}` || last.LLMCall {
			t.Fatalf("structured answer %q marked %v", last.Text(), last.LLMCall)
		}
		check(t, f, m, 2)
	})

	t.Run("code execution", func(t *testing.T) {
		m := scripted.NewSequence("m", scripted.Text("```tool_code\nprint(6*7)\n```"), scripted.Text("It is 42."))
		ex := &fakeExecutor{results: []codeexec.Result{{Stdout: "42\n"}}}
		f := newFixture(t, mustAgent(t, llmagent.Config{Name: "calc", Model: m, CodeExecutor: ex}), nil, nil)
		if evs := f.run(t, "6*7?", nil); len(evs) != 3 || evs[1].LLMCall {
			t.Fatalf("%d events, code result marked %v", len(evs), len(evs) > 1 && evs[1].LLMCall)
		}
		check(t, f, m, 2)
	})

	t.Run("confirmation", func(t *testing.T) {
		pay, err := functiontool.New(functiontool.Config{Name: "pay", RequireConfirmation: true},
			func(context.Context, tool.Context, struct{}) (map[string]any, error) {
				return map[string]any{"paid": true}, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		m := scripted.NewSequence("m", scripted.Call("pay", nil), scripted.Text("paid"))
		f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, Tools: []tool.Tool{pay}}), nil, nil)
		var id string
		for _, ev := range f.run(t, "pay", nil) {
			for _, fc := range ev.FunctionCalls() {
				if fc.Name == event.FunctionRequestConfirmation {
					id = fc.ID
					if ev.LLMCall {
						t.Fatal("the confirmation request is marked as a model call")
					}
				}
			}
		}
		if id == "" {
			t.Fatal("no confirmation request")
		}
		yes := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
			ID: id, Name: event.FunctionRequestConfirmation, Response: map[string]any{"confirmed": true}}}}}
		if _, err := f.r.RunSync(ctx, user, sid, yes, nil); err != nil {
			t.Fatal(err)
		}
		check(t, f, m, 2)
	})

	t.Run("model error answered by a callback", func(t *testing.T) {
		m := scripted.NewSequence("m", scripted.Turn{Err: errors.New("overloaded")})
		fallback := func(context.Context, *agent.CallbackContext, *model.Request, error) (*model.Response, error) {
			return &model.Response{Content: genai.NewContentFromText("try later", genai.RoleModel)}, nil
		}
		f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, OnModelError: []agent.OnModelErrorCallback{fallback}}), nil, nil)
		f.run(t, "hi", nil)
		check(t, f, m, 1)
	})
}

// TestR7MetadataKept: the mark is set beside the metadata a model response
// carries, which the event keeps as it is.
func TestR7MetadataKept(t *testing.T) {
	meta := map[string]any{"source": "m"}
	m := scripted.New("m", func(context.Context, *model.Request) (scripted.Turn, error) { return scripted.Text("hi"), nil })
	tag := func(_ context.Context, _ *agent.CallbackContext, resp *model.Response) (*model.Response, error) {
		r := *resp
		r.CustomMetadata = meta
		return &r, nil
	}
	f := newFixture(t, mustAgent(t, llmagent.Config{Name: "a", Model: m, AfterModel: []agent.AfterModelCallback{tag}}), nil, nil)
	evs := f.run(t, "hi", nil)
	if len(evs) != 1 || !evs[0].LLMCall || evs[0].CustomMetadata["source"] != "m" {
		t.Fatalf("events %d, metadata %v", len(evs), evs[0].CustomMetadata)
	}
	if len(meta) != 1 {
		t.Fatalf("the response's metadata was changed: %v", meta)
	}
}
