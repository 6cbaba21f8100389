package runner_test

import (
	"context"
	"testing"
	"time"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/sqlsession"
)

// TestR13CancelReachesOtherReplica: a replica process runs a turn that
// hangs in its model call; this process, another replica over the same
// database, cancels the session through session.Service.Cancel. The turn
// on the other process ends cancelled, closed in the log by an abort event,
// and a next turn here works (CONFORMANCE R13).
func TestR13CancelReachesOtherReplica(t *testing.T) {
	replicaBackends(t, func(t *testing.T, dsn string) {
		cmd, stderr := startHolding(t, "cancellable", dsn, 7)

		ctx := context.Background()
		r, store, err := replicaRunner(ctx, dsn, false)
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		key := session.Key{AppName: app, UserID: replicaUser, SessionID: replicaShared}
		start := time.Now()
		if ok, err := r.Sessions().Cancel(ctx, key); !ok || err != nil {
			t.Fatalf("cancel: %v %v", ok, err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("the replica: %v: %s", err, stderr.String())
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the turn on the other replica did not stop after the cancel")
		}
		if d := time.Since(start); d > 20*sqlsession.CancelPollInterval {
			t.Errorf("the cancel took %v to reach the other replica", d)
		}
		sess, err := r.Sessions().Get(ctx, key, nil)
		if err != nil {
			t.Fatal(err)
		}
		last := sess.At(sess.Len() - 1)
		if !event.IsAbort(last) || last.Author != "assistant" || last.InvocationID != sess.At(sess.Len()-2).InvocationID {
			t.Fatalf("the cancelled turn ends with %+v, want the root agent's abort event", last)
		}
		out, err := r.RunSync(ctx, replicaUser, replicaShared, userText("after"), nil)
		if err != nil {
			t.Fatalf("turn after the cancel: %v", err)
		}
		if got := text(out[len(out)-1]); got != "answer to after" {
			t.Errorf("turn after the cancel answered %q", got)
		}
	})
}
