package runner_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
)

// TestInvalidStateWriteFailsTheRun: a state value no store can hold (a
// cycle, NaN), written through a callback context, fails the run with
// session.ErrInvalid when its event is committed; the process survives and
// nothing of the event is stored.
func TestInvalidStateWriteFailsTheRun(t *testing.T) {
	cyclic := map[string]any{"a": 1}
	cyclic["self"] = cyclic
	for name, v := range map[string]any{"cycle": cyclic, "nan": math.NaN(), "app-inf": math.Inf(1)} {
		t.Run(name, func(t *testing.T) {
			root := custom(t, "root", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
				cc := agent.NewCallbackContext(inv)
				key := "k"
				if name == "app-inf" {
					key = "app:k"
				}
				cc.State().Set(key, v)
				yield(cc.Event(), nil)
			})
			r, svc, key := setup(t, root, runner.Config{})
			if _, err := r.RunSync(context.Background(), user, "s1", userText("go"), nil); !errors.Is(err, session.ErrInvalid) {
				t.Fatalf("run = %v, want session.ErrInvalid", err)
			}
			s := stored(t, svc, key)
			if _, ok := s.Get("k"); ok {
				t.Error("the invalid value reached storage")
			}
			if s.Len() != 1 {
				t.Errorf("stored %d events, want only the user's", s.Len())
			}
		})
	}
}
