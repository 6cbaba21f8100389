package a2aserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

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

// (CONFORMANCE P1)
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
	s := newTaskStore(2, DefaultMaxTaskBytes)
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
	s := newTaskStore(2, DefaultMaxTaskBytes)
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

// The byte bound drops the oldest finished tasks, then the oldest
// unfinished ones, but keeps the task just saved even alone beyond it.
func TestTaskStoreByteBound(t *testing.T) {
	ctx := context.Background()
	text := strings.Repeat("x", 1000)
	task := func(id string, state a2a.TaskState, kib int) *a2a.Task {
		return &a2a.Task{ID: a2a.TaskID(id), ContextID: "c", Status: a2a.TaskStatus{State: state},
			History: []*a2a.Message{a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: strings.Repeat(text, kib)})}}
	}
	s := newTaskStore(100, 3700)
	for _, tk := range []*a2a.Task{task("paused", a2a.TaskStateInputRequired, 1), task("a", a2a.TaskStateCompleted, 1),
		task("b", a2a.TaskStateCompleted, 1), task("c", a2a.TaskStateCompleted, 1)} {
		if err := s.Save(ctx, tk); err != nil {
			t.Fatal(err)
		}
	}
	kept := func() (ids []string) {
		for id := range s.tasks {
			ids = append(ids, string(id))
		}
		slices.Sort(ids)
		return ids
	}
	if got := kept(); !slices.Equal(got, []string{"b", "c", "paused"}) {
		t.Errorf("kept %v, want the paused task and the two newest finished ones", got)
	}
	var sum int64
	for _, el := range s.tasks {
		sum += taskSize(el.Value.(*storedTask).task)
	}
	if s.bytes > 3700 || s.bytes != sum {
		t.Errorf("%d bytes counted for tasks of %d bytes, want at most 3700", s.bytes, sum)
	}
	if err := s.Save(ctx, task("big", a2a.TaskStateWorking, 5)); err != nil {
		t.Fatal(err)
	}
	if got := kept(); !slices.Equal(got, []string{"big"}) {
		t.Errorf("kept %v after a task over the bound alone, want only it", got)
	}
	if got, err := s.Get(ctx, "big"); err != nil || len(a2aparts.Text(got.History[0].Parts)) != 5000 {
		t.Errorf("the big task: %v", err)
	}
}

// cloneTask copies every field of the SDK's task types: it fails when
// one gains a field, which cloneTask (taskstore.go) must then learn.
func TestCloneTaskKnowsEveryField(t *testing.T) {
	for typ, want := range map[reflect.Type]int{
		reflect.TypeFor[a2a.Task](): 6, reflect.TypeFor[a2a.TaskStatus](): 3, reflect.TypeFor[a2a.Message](): 8,
		reflect.TypeFor[a2a.Artifact](): 6, reflect.TypeFor[a2a.TextPart](): 2, reflect.TypeFor[a2a.DataPart](): 2,
		reflect.TypeFor[a2a.FilePart](): 2, reflect.TypeFor[a2a.FileBytes](): 2, reflect.TypeFor[a2a.FileURI](): 2,
	} {
		if got := typ.NumField(); got != want {
			t.Errorf("%v has %d fields, cloneTask knows %d", typ, got, want)
		}
	}
	ts := time.Unix(1, 0)
	orig := &a2a.Task{ID: "t", ContextID: "c", Metadata: map[string]any{"m": map[string]any{"k": "v"}},
		Status:    a2a.TaskStatus{State: a2a.TaskStateWorking, Timestamp: &ts, Message: a2a.NewMessage(a2a.MessageRoleAgent, a2a.TextPart{Text: "s"})},
		History:   []*a2a.Message{{ID: "m1", Parts: []a2a.Part{a2a.DataPart{Data: map[string]any{"d": []any{"x"}}}, &a2a.TextPart{Text: "p"}}, Extensions: []string{"e"}}},
		Artifacts: []*a2a.Artifact{{ID: "a", Parts: []a2a.Part{a2a.FilePart{File: a2a.FileBytes{Bytes: "YQ=="}}}}},
	}
	want, _ := json.Marshal(orig)
	c := cloneTask(orig)
	if got, _ := json.Marshal(c); string(got) != string(want) {
		t.Fatalf("clone %s, want %s", got, want)
	}
	c.Metadata["m"].(map[string]any)["k"] = "changed"
	c.Status.Message.Parts[0] = a2a.TextPart{Text: "changed"}
	*c.Status.Timestamp = time.Unix(2, 0)
	c.History[0].Parts[0].(a2a.DataPart).Data["d"].([]any)[0] = "changed"
	c.History[0].Extensions[0] = "changed"
	c.History = append(c.History, &a2a.Message{ID: "m2"})
	c.Artifacts[0].Parts = append(c.Artifacts[0].Parts, a2a.TextPart{Text: "more"})
	if got, _ := json.Marshal(orig); string(got) != string(want) {
		t.Errorf("changing the clone changed the task: %s, want %s", got, want)
	}
}
