package a2aserver_test

import (
	"context"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
)

// BenchmarkSendMessage: one message/send round trip over HTTP on the
// loopback, a tool call and its answer included (the offline assistant
// adding two numbers), in a new context each time.
func BenchmarkSendMessage(b *testing.B) {
	_, base := serve(b, newRunner(b))
	c := goClient(b, base)
	ctx := context.Background()
	for b.Loop() {
		res, err := c.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "add 2 and 3"})})
		if err != nil {
			b.Fatal(err)
		}
		if task := res.(*a2a.Task); task.Status.State != a2a.TaskStateCompleted {
			b.Fatalf("state %s", task.Status.State)
		}
	}
}
