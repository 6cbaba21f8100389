package preloadmemorytool_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/memory/memmemory"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/preloadmemorytool"
)

func newRunner(t *testing.T, m *scripted.Model, mem *memory.Service, plugins ...*plugin.Plugin) *runner.Runner {
	t.Helper()
	a, err := llmagent.New(llmagent.Config{Name: "a", Model: m, Instruction: "Be helpful.", Tools: []tool.Tool{preloadmemorytool.New()}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, Sessions: memsession.NewService(), Memory: mem, Plugins: plugins})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"s1", "s2"} {
		if _, err := r.Sessions().Create(context.Background(), session.Key{AppName: "app", UserID: "u", SessionID: id}, nil); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// TestPreloadAfterAutoMemory checks the two halves together: the
// AddSessionToMemory plugin remembers a finished session, and in a later
// session preload_memory puts the matching memory into the system
// instruction before the model call, without the model calling anything.
func TestPreloadAfterAutoMemory(t *testing.T) {
	m := scripted.NewSequence("m", scripted.Turn{Text: "Noted: your cat is Tom."}, scripted.Turn{Text: "Tom."})
	mem := memmemory.NewService()
	r := newRunner(t, m, mem, plugin.AddSessionToMemory())
	ctx := context.Background()
	if _, err := r.RunSync(ctx, "u", "s1", genai.NewContentFromText("my cat is called Tom", genai.RoleUser), nil); err != nil {
		t.Fatal(err)
	}
	found, err := mem.Search(ctx, "app", "u", "cat", nil)
	if err != nil || len(found) != 2 {
		t.Fatalf("memories after the first session = %d, %v; want the user's and the model's", len(found), err)
	}
	if _, err := r.RunSync(ctx, "u", "s2", genai.NewContentFromText("what is my cat called?", genai.RoleUser), nil); err != nil {
		t.Fatal(err)
	}
	first := m.Requests()[0].Config.SystemInstruction
	if len(first.Parts) != 1 {
		t.Errorf("first session's request got memories: %+v", first.Parts)
	}
	si := m.Requests()[1].Config.SystemInstruction
	var all []string
	for _, p := range si.Parts {
		all = append(all, p.Text)
	}
	text := strings.Join(all, "\n")
	if !strings.HasPrefix(text, "Be helpful.") || !strings.Contains(text, "user: my cat is called Tom") || !strings.Contains(text, "<memories>") {
		t.Fatalf("system instruction = %q", text)
	}
	for _, d := range m.Requests()[1].Config.Tools {
		for _, fd := range d.FunctionDeclarations {
			if fd.Name == preloadmemorytool.Name {
				t.Error("preload_memory was declared to the model")
			}
		}
	}
}

// TestPreloadWithoutMemoryService checks that a runner without a memory
// service fails the model call with a clear error, and that the plugin
// reports the same.
func TestPreloadWithoutMemoryService(t *testing.T) {
	m := scripted.NewSequence("m", scripted.Turn{Text: "hi"})
	r := newRunner(t, m, nil)
	_, err := r.RunSync(context.Background(), "u", "s1", genai.NewContentFromText("hello", genai.RoleUser), nil)
	if !errors.Is(err, agent.ErrNoService) || !strings.Contains(err.Error(), "preload_memory") {
		t.Fatalf("err = %v", err)
	}
	if len(m.Requests()) != 0 {
		t.Error("the model was called")
	}
}

// TestAddSessionToMemoryWithoutService checks the plugin's error.
func TestAddSessionToMemoryWithoutService(t *testing.T) {
	m := scripted.NewSequence("m", scripted.Turn{Text: "hi"})
	a, _ := llmagent.New(llmagent.Config{Name: "a", Model: m})
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, Sessions: memsession.NewService(), Plugins: []*plugin.Plugin{plugin.AddSessionToMemory()}})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = r.Sessions().Create(context.Background(), session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil)
	_, err = r.RunSync(context.Background(), "u", "s", genai.NewContentFromText("hello", genai.RoleUser), nil)
	if !errors.Is(err, agent.ErrNoService) {
		t.Fatalf("err = %v", err)
	}
}
