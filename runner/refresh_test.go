package runner_test

import (
	"context"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/runner"
)

// sayer is an agent answering with a fixed text.
func sayer(t *testing.T, name, text string, subs ...agent.Agent) agent.Agent {
	return custom(t, name, func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		ev := event.New(inv.ID(), name)
		ev.Content = genai.NewContentFromText(text, genai.RoleModel)
		yield(ev, nil)
	}, subs...)
}

// TestRefresh swaps the root agent between invocations: each invocation
// runs the agent Config.Refresh returned when it started; nil keeps the
// current one, and an agent that does not form a tree is ignored.
func TestRefresh(t *testing.T) {
	v1, v2 := sayer(t, "root", "one"), sayer(t, "root", "two")
	dup := sayer(t, "root", "bad", sayer(t, "root", "inner"))
	var mu sync.Mutex
	next := agent.Agent(nil)
	r, _, key := setup(t, v1, runner.Config{Refresh: func(context.Context) agent.Agent {
		mu.Lock()
		defer mu.Unlock()
		return next
	}})
	say := func(want string) {
		t.Helper()
		events, err := r.RunSync(context.Background(), user, key.SessionID, userText("hi"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(events) != 1 || events[0].Content.Parts[0].Text != want {
			t.Fatalf("answer = %v, want %q", events, want)
		}
	}
	say("one")
	mu.Lock()
	next = v2
	mu.Unlock()
	say("two")
	if r.Agent() != v2 || r.Tree().Root() != v2 {
		t.Error("Agent and Tree do not report the refreshed root")
	}
	mu.Lock()
	next = dup
	mu.Unlock()
	say("two")
	mu.Lock()
	next = nil
	mu.Unlock()
	say("two")
}
