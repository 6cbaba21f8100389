package a2aserver

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/internal/a2aparts"
)

func TestApproves(t *testing.T) {
	for text, want := range map[string]bool{"yes": true, " Yes. ": true, "OK": true, "approve": true, "no": false, "never": false, "": false} {
		if got := approves(text); got != want {
			t.Errorf("approves(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestAnswers(t *testing.T) {
	confirm := &genai.FunctionCall{ID: "c1", Name: event.FunctionRequestConfirmation}
	tool := &genai.FunctionCall{ID: "t1", Name: "open_ticket"}
	input := &genai.FunctionCall{ID: "i1", Name: "adk_request_input"}
	for _, tc := range []struct {
		name  string
		calls []*genai.FunctionCall
		reply []a2a.Part
		want  []map[string]any
	}{
		{"text approves", []*genai.FunctionCall{confirm}, []a2a.Part{a2a.TextPart{Text: "yes"}}, []map[string]any{{"confirmed": true}}},
		{"text rejects", []*genai.FunctionCall{confirm}, []a2a.Part{a2a.TextPart{Text: "no way"}}, []map[string]any{{"confirmed": false}}},
		{"text answers a tool", []*genai.FunctionCall{tool}, []a2a.Part{a2a.TextPart{Text: "done"}}, []map[string]any{{"response": "done"}}},
		{"text answers an input request", []*genai.FunctionCall{input}, []a2a.Part{a2a.TextPart{Text: "yes"}}, []map[string]any{{"result": "yes"}}},
		{"data answers both", []*genai.FunctionCall{confirm, tool}, []a2a.Part{a2a.DataPart{Data: map[string]any{"confirmed": true}}}, []map[string]any{{"confirmed": true}, {"confirmed": true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts, err := answers(tc.calls, tc.reply)
			if err != nil {
				t.Fatal(err)
			}
			if len(parts) != len(tc.want) {
				t.Fatalf("%d responses, want %d", len(parts), len(tc.want))
			}
			for i, p := range parts {
				fr := p.FunctionResponse
				if fr.ID != tc.calls[i].ID || fr.Name != tc.calls[i].Name || fmt.Sprint(fr.Response) != fmt.Sprint(tc.want[i]) {
					t.Errorf("response %d = %+v, want %v for %s", i, fr, tc.want[i], tc.calls[i].ID)
				}
			}
		})
	}
	// ADK's explicit form wins and is taken as is.
	explicit := a2a.DataPart{Data: map[string]any{"id": "t1", "name": "open_ticket", "response": map[string]any{"status": "ok"}}, Metadata: map[string]any{a2aparts.MetaType: a2aparts.TypeFunctionResponse}}
	parts, err := answers([]*genai.FunctionCall{confirm, tool}, []a2a.Part{a2a.TextPart{Text: "yes"}, explicit})
	if err != nil || len(parts) != 1 || parts[0].FunctionResponse.ID != "t1" {
		t.Errorf("explicit response: %v, %v; want only the response to t1", parts, err)
	}
	other := a2a.DataPart{Data: map[string]any{"id": "t2", "name": "open_ticket", "response": map[string]any{}}, Metadata: explicit.Metadata}
	if _, err := answers([]*genai.FunctionCall{tool}, []a2a.Part{other}); err == nil {
		t.Error("a response to a call the task does not wait for was accepted")
	}
	if _, err := answers([]*genai.FunctionCall{tool}, []a2a.Part{explicit, explicit}); err == nil {
		t.Error("two responses to one call were accepted")
	}
	if _, err := answers([]*genai.FunctionCall{tool}, []a2a.Part{a2a.TextPart{Text: "  "}}); err == nil {
		t.Error("an empty reply was accepted")
	}
}

func TestTaskStoreBound(t *testing.T) {
	s := newTaskStore(2)
	ctx := context.Background()
	for i := range 3 {
		task := &a2a.Task{ID: a2a.TaskID(fmt.Sprint(i)), ContextID: "c", Status: a2a.TaskStatus{State: a2a.TaskStateCompleted}}
		if err := s.Save(ctx, task); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Get(ctx, "0"); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("the oldest task: err = %v, want it dropped", err)
	}
	got, err := s.Get(ctx, "2")
	if err != nil || got.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("Get(2) = %+v, %v", got, err)
	}
	got.Status.State = a2a.TaskStateFailed // a copy: the store is not changed
	if again, _ := s.Get(ctx, "2"); again.Status.State != a2a.TaskStateCompleted {
		t.Error("a task read from the store shares memory with it")
	}
}

func TestSkills(t *testing.T) {
	run := func(context.Context, *agent.Invocation) iter.Seq2[*event.Event, error] {
		return func(func(*event.Event, error) bool) {}
	}
	leaf, err := agent.New(agent.Config{Name: "leaf", Description: "Does leaf things.", Run: run})
	if err != nil {
		t.Fatal(err)
	}
	root, err := agent.New(agent.Config{Name: "root", SubAgents: []agent.Agent{leaf}, Run: run})
	if err != nil {
		t.Fatal(err)
	}
	got := skills(root)
	if len(got) != 2 || got[0].id != "root" || got[1].id != "leaf" || got[1].desc != "Does leaf things." || got[1].tags[1] != "sub-agent" {
		t.Errorf("skills = %+v, want root then its sub-agent leaf", got)
	}
}

// The bound drops finished tasks first: a paused task outlives the later
// tasks that finished, so its pause can still be answered.
func TestTaskStoreKeepsUnfinishedTasks(t *testing.T) {
	s := newTaskStore(2)
	ctx := context.Background()
	save := func(id string, state a2a.TaskState) {
		t.Helper()
		if err := s.Save(ctx, &a2a.Task{ID: a2a.TaskID(id), ContextID: "c", Status: a2a.TaskStatus{State: state}}); err != nil {
			t.Fatal(err)
		}
	}
	save("paused", a2a.TaskStateInputRequired)
	for i := range 3 {
		save(fmt.Sprint(i), a2a.TaskStateCompleted)
	}
	if got, err := s.Get(ctx, "paused"); err != nil || got.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("the paused task after three finished ones: %+v, %v; want it kept", got, err)
	}
	if _, err := s.Get(ctx, "2"); err != nil {
		t.Errorf("the newest finished task: %v", err)
	}
	for _, id := range []string{"0", "1"} {
		if _, err := s.Get(ctx, a2a.TaskID(id)); !errors.Is(err, a2a.ErrTaskNotFound) {
			t.Errorf("older finished task %s: err = %v, want it dropped", id, err)
		}
	}
	// Once it finishes, it is dropped like any finished task.
	save("paused", a2a.TaskStateCompleted)
	save("3", a2a.TaskStateCompleted)
	save("4", a2a.TaskStateCompleted)
	if _, err := s.Get(ctx, "paused"); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("the task once finished: err = %v, want it dropped", err)
	}
	// With only unfinished tasks, the bound still holds.
	for i := range 3 {
		save(fmt.Sprint("p", i), a2a.TaskStateWorking)
	}
	if n := len(s.tasks); n != 2 {
		t.Errorf("%d tasks kept, want 2", n)
	}
	if _, err := s.Get(ctx, "p0"); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("the oldest unfinished task beyond the bound: err = %v, want it dropped", err)
	}
}
