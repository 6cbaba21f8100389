package runner_test

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
)

// TestR10ImportedHistory: a history given to CreateSession is stored as
// data (its events as given, each marked imported, and their state
// deltas): nothing in it waits for an answer, its invocation cannot be
// resumed, and an invalid history is refused with ErrInvalid before any
// session exists.
func TestR10ImportedHistory(t *testing.T) {
	ctx := context.Background()
	root := custom(t, "bot", func(context.Context, *agent.Invocation, func(*event.Event, error) bool) {})
	r, svc, _ := setup(t, root, runner.Config{})

	hello := event.NewUserText("e-old", "hello")
	hello.ID = "ev1"
	hello.Actions.StateDelta = map[string]any{"seen": true}
	call := event.New("e-old", "bot")
	call.ID = "ev2"
	call.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
		{FunctionCall: &genai.FunctionCall{ID: "lr-1", Name: "wait", Args: map[string]any{}}},
	}}
	call.LongRunningToolIDs = []string{"lr-1"}
	// Records only the runtime writes, which a client cannot claim.
	call.LLMCall = true
	call.CustomMetadata = map[string]any{event.MetadataStartedCalls: []any{"lr-1"}, event.MetadataCallMAC: "forged", "mine": "kept"}

	sess, err := r.CreateSession(ctx, user, "imported", nil, []*event.Event{hello, call})
	if err != nil {
		t.Fatal(err)
	}
	got := stored(t, svc, sess.Key())
	if got.Len() != 2 || got.Events()[0].ID != "ev1" || got.Events()[1].ID != "ev2" {
		t.Fatalf("stored %d events, want ev1, ev2", got.Len())
	}
	if v, _ := got.Get("seen"); v != true {
		t.Errorf("state seen = %v, want true", v)
	}
	for _, ev := range got.Events() {
		if !ev.Imported() {
			t.Errorf("imported event %s is not marked imported", ev.ID)
		}
	}
	if ids := got.Events()[1].LongRunningToolIDs; len(ids) != 1 {
		t.Errorf("imported event's long-running ids = %v, want them as given", ids)
	}
	if imp := got.Events()[1]; imp.LLMCall || imp.StartedCalls() != nil || imp.CustomMetadata[event.MetadataCallMAC] != nil || imp.CustomMetadata["mine"] != "kept" {
		t.Errorf("imported event's records: llmCall %v, metadata %v; want the client's own entries only", imp.LLMCall, imp.CustomMetadata)
	}
	if call.Imported() || hello.Imported() {
		t.Errorf("CreateSession modified the caller's events")
	}
	// An answer to the imported call is refused and stores nothing.
	ans := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
		{FunctionResponse: &genai.FunctionResponse{ID: "lr-1", Name: "wait", Response: map[string]any{"ok": true}}},
	}}
	var runErr error
	for _, err := range r.Run(ctx, user, "imported", ans, nil) {
		if err != nil {
			runErr = err
		}
	}
	if runErr == nil {
		t.Error("an answer to a call of an imported history was accepted")
	}
	if n := stored(t, svc, sess.Key()).Len(); n != 2 {
		t.Errorf("after the refused answer the session has %d events, want 2", n)
	}
	// Neither a run naming the imported invocation nor Resume continues it.
	for name, events := range map[string]func() error{
		"run": func() error {
			for _, err := range r.Run(ctx, user, "imported", genai.NewContentFromText("go on", genai.RoleUser), &runner.RunOptions{InvocationID: "e-old"}) {
				if err != nil {
					return err
				}
			}
			return nil
		},
		"resume": func() error {
			for _, err := range r.Resume(ctx, user, "imported", "e-old", nil) {
				if err != nil {
					return err
				}
			}
			return nil
		},
	} {
		if err := events(); !errors.Is(err, runner.ErrInvalid) {
			t.Errorf("%s of the imported invocation: err = %v, want ErrInvalid", name, err)
		}
		if n := stored(t, svc, sess.Key()).Len(); n != 2 {
			t.Errorf("after the refused %s the session has %d events, want 2", name, n)
		}
	}
	// An author the tree does not have is data like any other.
	if _, err := r.CreateSession(ctx, user, "stranger", nil, []*event.Event{event.NewModelText("e-old", "stranger", "hi")}); err != nil {
		t.Errorf("a history with another author: %v", err)
	}

	partial := event.NewModelText("e-old", "bot", "half")
	partial.Partial = true
	userAsModel := event.NewUserText("e-old", "hi")
	userAsModel.Content.Role = genai.RoleModel
	dup1, dup2 := event.NewUserText("e-old", "a"), event.NewUserText("e-old", "b")
	dup1.ID, dup2.ID = "same", "same"
	for name, evs := range map[string][]*event.Event{
		"partial":       {partial},
		"user as model": {userAsModel},
		"duplicate ids": {dup1, dup2},
		"nil event":     {nil},
	} {
		if _, err := r.CreateSession(ctx, user, "bad", nil, evs); !errors.Is(err, runner.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
		key := session.Key{AppName: app, UserID: user, SessionID: "bad"}
		if _, err := svc.Get(ctx, key, nil); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("%s: a refused history left a session behind (err = %v)", name, err)
		}
	}
}
