package runner_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

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

// TestUpdateStateWaitsForTheRunningInvocation: a state update made while
// an invocation runs in the session waits for it to end, so neither
// fails stale and both the invocation's events and the update are stored.
func TestUpdateStateWaitsForTheRunningInvocation(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	root := custom(t, "root", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		ev := inv.NewEvent()
		ev.Actions.StateDelta = map[string]any{"a": 1}
		if !yield(ev, nil) {
			return
		}
		if inv.UserContent().Parts[0].Text == "go" {
			close(started)
			<-release
		}
		ev = inv.NewEvent()
		ev.Actions.StateDelta = map[string]any{"b": 2}
		yield(ev, nil)
	})
	r, svc, key := setup(t, root, runner.Config{})
	var wg sync.WaitGroup
	var runErr error
	wg.Go(func() { _, runErr = r.RunSync(context.Background(), user, "s1", userText("go"), nil) })
	<-started
	updated := make(chan error, 1)
	var sess *session.Session
	go func() {
		var err error
		sess, err = r.UpdateState(context.Background(), user, "s1", map[string]any{"p": 3, "temp:t": 4})
		updated <- err
	}()
	select {
	case err := <-updated:
		t.Fatalf("the update did not wait for the invocation: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	wg.Wait()
	if err := <-updated; err != nil || runErr != nil {
		t.Fatalf("update: %v; run: %v", err, runErr)
	}
	got := stored(t, svc, key)
	for k, want := range map[string]any{"a": 1.0, "b": 2.0, "p": 3.0} { // as JSON reads numbers
		if v, _ := got.Get(k); v != want {
			t.Errorf("stored %s = %v, want %v", k, v, want)
		}
	}
	if _, ok := sess.Get("temp:t"); ok || sess.Len() != got.Len() {
		t.Errorf("returned session: %d events, state %v; stored: %d events", sess.Len(), sess.State(), got.Len())
	}
	last := got.Events()[got.Len()-1]
	if last.Author != event.AuthorUser || !strings.HasPrefix(last.InvocationID, "p-") {
		t.Errorf("the update's event: author %q, invocation %q", last.Author, last.InvocationID)
	}
	// The runner's live copy saw the update: the next invocation commits.
	if _, err := r.RunSync(context.Background(), user, "s1", userText("again"), nil); err != nil {
		t.Errorf("a run after the update: %v", err)
	}
}

// TestUpdateStateMissingSession: updating the state of a session that does
// not exist fails with session.ErrNotFound and creates nothing, even for a
// runner that creates sessions on demand.
func TestUpdateStateMissingSession(t *testing.T) {
	root := custom(t, "root", func(context.Context, *agent.Invocation, func(*event.Event, error) bool) {})
	r, svc, key := setup(t, root, runner.Config{AutoCreateSession: true})
	for _, delta := range []map[string]any{{"x": 1}, nil} {
		if _, err := r.UpdateState(context.Background(), user, "nope", delta); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("update %v of a missing session: %v, want session.ErrNotFound", delta, err)
		}
	}
	key.SessionID = "nope"
	if _, err := svc.Get(context.Background(), key, nil); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("the update created the session: %v", err)
	}
}
