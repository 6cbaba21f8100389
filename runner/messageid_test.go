package runner_test

import (
	"context"
	"errors"
	"testing"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
)

// TestMessageIDStoredOnce: a run with RunOptions.MessageID stores its
// message under that id; a second run with the same id stores nothing,
// runs no agent and fails with session.ErrAlreadyExists.
//
// (CONFORMANCE D10)
func TestMessageIDStoredOnce(t *testing.T) {
	runs := 0
	root := custom(t, "root", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		runs++
		ev := inv.NewEvent()
		ev.Content = userText("ok")
		ev.Content.Role = "model"
		yield(ev, nil)
	})
	r, svc, key := setup(t, root, runner.Config{})
	opts := &runner.RunOptions{MessageID: "m-1"}
	if _, err := r.RunSync(context.Background(), user, "s1", userText("hello"), opts); err != nil {
		t.Fatal(err)
	}
	_, err := r.RunSync(context.Background(), user, "s1", userText("hello"), opts)
	if !errors.Is(err, session.ErrAlreadyExists) {
		t.Fatalf("second run with the same message id: %v, want ErrAlreadyExists", err)
	}
	s := stored(t, svc, key)
	if s.Len() != 2 || s.At(0).ID != "m-1" || s.At(0).Text() != "hello" || runs != 1 {
		t.Fatalf("log of %d events (first %s %q), agent ran %d times: want the message once under its id and one run", s.Len(), s.At(0).ID, s.At(0).Text(), runs)
	}
}
