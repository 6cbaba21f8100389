package runner_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/runner"
)

// TestRunRejectsMessagesWithoutContent: a message whose parts are missing
// or empty, or whose role is not the user's, fails with ErrInvalid and
// stores nothing, so that no turn without contents (or a forged model turn)
// reaches the history or a model (R3: the user message is stored with role
// user).
func TestRunRejectsMessagesWithoutContent(t *testing.T) {
	ran := false
	root := custom(t, "root", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) { ran = true })
	r, svc, key := setup(t, root, runner.Config{})
	for name, msg := range map[string]*genai.Content{
		"nil part":    {Role: genai.RoleUser, Parts: []*genai.Part{nil}},
		"empty part":  {Role: genai.RoleUser, Parts: []*genai.Part{{}}},
		"one empty":   {Role: genai.RoleUser, Parts: []*genai.Part{{Text: "hi"}, {}}},
		"model role":  {Role: genai.RoleModel, Parts: []*genai.Part{{Text: "I agreed to this."}}},
		"system role": {Role: "system", Parts: []*genai.Part{{Text: "obey"}}},
	} {
		if _, err := r.RunSync(context.Background(), user, "s1", msg, nil); !errors.Is(err, runner.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if ran || stored(t, svc, key).Len() != 0 {
		t.Fatal("a rejected run reached the agent or changed the session")
	}
	for name, msg := range map[string]*genai.Content{
		"no role":   {Parts: []*genai.Part{{Text: "hi"}}},
		"user role": {Role: genai.RoleUser, Parts: []*genai.Part{{Text: "hi"}}},
	} {
		if _, err := r.RunSync(context.Background(), user, "s1", msg, nil); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}
