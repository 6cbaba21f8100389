package runner_test

import (
	"context"
	"testing"
	"time"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
)

// TestDetachedCancelAbortsNothing: a run whose context is cancelled with
// cause runner.ErrDetached mid-tool stops without committing an abort
// event: the call stays open, as after a crash, for Resume.
//
// (CONFORMANCE D11)
func TestDetachedCancelAbortsNothing(t *testing.T) {
	started := make(chan struct{})
	m := scripted.NewSequence("m", scripted.Call("slow", nil), scripted.Text("done"))
	r, svc, key := setup(t, llm(t, "A", m, blockingTool(t, started)), runner.Config{Resumable: true})
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.RunSync(ctx, user, key.SessionID, userText("go"), nil)
		done <- err
	}()
	<-started
	cancel(runner.ErrDetached)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("invocation did not stop after the cancellation")
	}
	sess := stored(t, svc, key)
	for _, ev := range sess.Events() {
		if event.IsAbort(ev) {
			t.Fatalf("a detached invocation was aborted: %+v", ev)
		}
	}
	last := sess.At(sess.Len() - 1)
	if calls := last.FunctionCalls(); len(calls) != 1 || calls[0].Name != "slow" {
		t.Fatalf("the log ends with %+v, want the open call", last)
	}
}
