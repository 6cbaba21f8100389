package storage_test

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
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

// A package providing a session store registers its URL scheme, usually
// in an init function; programs that import it open the store by URL, the
// loom command's --sessions flag included.
func ExampleRegisterSessions() {
	registerExample.Do(func() { // once per process, as an init function would
		storage.RegisterSessions("example-kv", func(ctx context.Context, url string) (*session.Service, error) {
			// A real opener parses url and connects to its store.
			return memsession.NewService(), nil
		})
	})
	svc, err := storage.OpenSessions(context.Background(), "example-kv://cache:6379/0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer svc.Close()
	fmt.Println(slices.Contains(storage.SessionSchemes(), "example-kv://"))
	// Output: true
}

var registerExample sync.Once
