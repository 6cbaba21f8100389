package storage_test

import (
	"context"
	"fmt"

	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/storage"
)

func ExampleOpenSessions() {
	ctx := context.Background()
	// "sqlite:///var/lib/loom/sessions.db" or "postgres://..." work the same.
	svc, err := storage.OpenSessions(ctx, "sqlite::memory:")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer svc.Close()
	sess, err := svc.Create(ctx, session.Key{AppName: "demo", UserID: "ada", SessionID: "s1"}, map[string]any{"user:name": "Ada"})
	if err != nil {
		fmt.Println(err)
		return
	}
	name, _ := sess.Get("user:name")
	fmt.Println(sess.ID(), name)
	// Output: s1 Ada
}
