package loadmemorytool_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/memory/memmemory"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/loadmemorytool"
)

// TestLoadMemory checks that an agent finds what the same user said in an
// earlier session, and never another user's memories.
func TestLoadMemory(t *testing.T) {
	ctx := context.Background()
	sessions := memsession.NewService()
	mem := memmemory.NewService()
	remember := func(user, id, text string) {
		s, err := sessions.Create(ctx, session.Key{AppName: "app", UserID: user, SessionID: id}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := sessions.AppendEvent(ctx, s, event.NewUserText("e-old", text)); err != nil {
			t.Fatal(err)
		}
		if err := mem.AddSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	remember("ann", "old", "My favourite colour is teal.")
	remember("bob", "other", "My favourite colour is crimson.")

	lm, err := loadmemorytool.New()
	if err != nil {
		t.Fatal(err)
	}
	llm := scripted.New("m", func(ctx context.Context, req *model.Request) (scripted.Turn, error) {
		if res := scripted.LastFunctionResponse(req); len(res) > 0 {
			return scripted.Text(fmt.Sprint(res[0].Response["memories"])), nil
		}
		return scripted.Call(loadmemorytool.Name, map[string]any{"query": "favourite colour"}), nil
	})
	a, err := llmagent.New(llmagent.Config{Name: "a", Model: llm, Tools: []tool.Tool{lm}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, Sessions: sessions, Memory: mem, AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := r.RunSync(ctx, "ann", "new", genai.NewContentFromText("what is my favourite colour?", genai.RoleUser), nil)
	if err != nil {
		t.Fatal(err)
	}
	answer := evs[len(evs)-1].Text()
	if !strings.Contains(answer, "teal") || strings.Contains(answer, "crimson") {
		t.Fatalf("memories given to the model: %s", answer)
	}
}

// TestLoadMemoryWithoutService checks the clear error without a memory
// service: the model gets an error response naming the problem.
func TestLoadMemoryWithoutService(t *testing.T) {
	lm, _ := loadmemorytool.New()
	llm := scripted.NewSequence("m", scripted.Call(loadmemorytool.Name, map[string]any{"query": "x"}), scripted.Text("ok"))
	a, _ := llmagent.New(llmagent.Config{Name: "a", Model: llm, Tools: []tool.Tool{lm}})
	r, _ := runner.New(runner.Config{AppName: "app", Agent: a, Sessions: memsession.NewService(), AutoCreateSession: true})
	evs, err := r.RunSync(context.Background(), "u", "s", genai.NewContentFromText("hi", genai.RoleUser), nil)
	if err != nil {
		t.Fatal(err)
	}
	if msg := fmt.Sprint(evs[1].FunctionResponses()[0].Response["error"]); !strings.Contains(msg, "service not configured") {
		t.Fatalf("error response %q", msg)
	}
}
