package runner_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
)

// TestA16NotResumableAnswerContinuesAsker: in an application that is not
// resumable (the zero runner.Config), a sequence [A (long-running tool), B]
// writes no checkpoint; the answer continues A, the agent that asked, and
// B does not run, as in ADK. (CONFORMANCE A16)
func TestA16NotResumableAnswerContinuesAsker(t *testing.T) {
	mA := scripted.NewSequence("mA", scripted.Call("wait", nil), scripted.Text("A done"))
	mB := scripted.NewSequence("mB", scripted.Text("B done"))
	r, svc, key := setup(t, seq(t, "pipeline", llm(t, "A", mA, waitTool(t)), llm(t, "B", mB)), runner.Config{})
	ctx := context.Background()
	_, callID, name := pending(t, runAll(t, r.Run(ctx, user, key.SessionID, userText("go"), nil)))
	evs := runAll(t, r.Run(ctx, user, key.SessionID, answer(callID, name, map[string]any{"ok": true}), nil))
	if got := strings.Join(answers(evs), ","); got != "A:A done" {
		t.Fatalf("answers after the answer %q, want A's only", got)
	}
	if len(mB.Requests()) != 0 {
		t.Error("B ran: the sequence was continued without checkpoints")
	}
	s := stored(t, svc, key)
	for i := range s.Len() {
		if ev := s.At(i); agent.IsCheckpoint(ev) || ev.Actions.AgentState != nil || ev.Actions.EndOfAgent {
			t.Errorf("event %d of %s is a checkpoint in an application that is not resumable", i, ev.Author)
		}
	}
}

// TestA16NotResumableResumeRefused: in an application that is not
// resumable, resuming an invocation of workflow agents from the middle,
// by Resume or by an explicit invocation id, fails with ErrInvalid and
// runs nothing again. (CONFORMANCE A16)
func TestA16NotResumableResumeRefused(t *testing.T) {
	mA := scripted.NewSequence("mA", scripted.Text("A done"), scripted.Text("again"))
	mB := scripted.NewSequence("mB", scripted.Text("B done"), scripted.Text("again"))
	r, svc, key := setup(t, seq(t, "pipeline", llm(t, "A", mA), llm(t, "B", mB)), runner.Config{})
	ctx := context.Background()
	evs := runAll(t, r.Run(ctx, user, key.SessionID, userText("go"), nil))
	invID := evs[0].InvocationID
	before := stored(t, svc, key).Len()
	for name, run := range map[string]func() error{
		"Resume": func() error {
			for _, err := range r.Resume(ctx, user, key.SessionID, invID, nil) {
				if err != nil {
					return err
				}
			}
			return nil
		},
		"InvocationID": func() error {
			_, err := r.RunSync(ctx, user, key.SessionID, userText("more"), &runner.RunOptions{InvocationID: invID})
			return err
		},
	} {
		if err := run(); !errors.Is(err, runner.ErrInvalid) || !strings.Contains(err.Error(), "not resumable") {
			t.Errorf("%s: error %v, want ErrInvalid saying the application is not resumable", name, err)
		}
	}
	if len(mA.Requests()) != 1 || len(mB.Requests()) != 1 {
		t.Errorf("models called %d, %d times, want once each", len(mA.Requests()), len(mB.Requests()))
	}
	if after := stored(t, svc, key).Len(); after != before {
		t.Errorf("%d events stored by the refused resumes", after-before)
	}
}
