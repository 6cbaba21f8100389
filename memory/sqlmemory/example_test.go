package sqlmemory_test

import (
	"context"
	"fmt"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/memory/sqlmemory"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

func ExampleOpen() {
	ctx := context.Background()
	mem, err := sqlmemory.NewService(ctx, "sqlite::memory:", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer mem.Close()

	sessions := memsession.NewService()
	sess, _ := sessions.Create(ctx, session.Key{AppName: "demo", UserID: "ada", SessionID: "s1"}, nil)
	sessions.AppendEvent(ctx, sess, event.NewUserText("inv", "My cat is called Turing"))
	sessions.AppendEvent(ctx, sess, event.NewUserText("inv", "I live in London"))
	if err := mem.AddSession(ctx, sess); err != nil {
		fmt.Println(err)
		return
	}
	res, _ := mem.Search(ctx, "demo", "ada", "what is the CAT's name?", nil)
	for _, e := range res {
		fmt.Println(e.Text())
	}
	// Output: My cat is called Turing
}
