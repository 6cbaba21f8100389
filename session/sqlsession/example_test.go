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
