package sqlsession_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/sqlsession"
)

func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "loom")
	defer os.RemoveAll(dir)
	url := "sqlite://" + filepath.Join(dir, "sessions.db")

	store, err := sqlsession.Open(ctx, url, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	svc := session.NewService(store, nil)
	key := session.Key{AppName: "demo", UserID: "ada", SessionID: "s1"}
	sess, _ := svc.Create(ctx, key, nil)
	ev := event.NewUserText("inv-1", "hello")
	ev.Actions.StateDelta = map[string]any{"app:visits": 1, "topic": "greetings"}
	if err := svc.AppendEvent(ctx, sess, ev); err != nil {
		fmt.Println(err)
		return
	}
	svc.Close()

	// Reopen: everything committed is there.
	svc, _ = sqlsession.NewService(ctx, url, nil)
	defer svc.Close()
	got, _ := svc.Get(ctx, key, nil)
	topic, _ := got.Get("topic")
	visits, _ := got.Get("app:visits")
	fmt.Println(got.Len(), topic, visits)
	// Output: 1 greetings 1
}

// A cancel sent through one replica's service reaches an invocation that
// watches the session on another replica over the same database.
func ExampleStore_WatchCancel() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "loom")
	defer os.RemoveAll(dir)
	url := "sqlite://" + filepath.Join(dir, "sessions.db")
	replicaA, _ := sqlsession.NewService(ctx, url, nil)
	defer replicaA.Close()
	replicaB, _ := sqlsession.NewService(ctx, url, nil)
	defer replicaB.Close()
	key := session.Key{AppName: "demo", UserID: "ada", SessionID: "s1"}

	// Replica B runs an invocation under this context (the runner does it).
	running, stop, _ := replicaB.WatchCancel(ctx, key)
	defer stop()
	// Replica A gets the cancel request.
	sent, _ := replicaA.Cancel(ctx, key)
	<-running.Done()
	fmt.Println(sent, context.Cause(running))
	// Output: true session: cancel requested
}
