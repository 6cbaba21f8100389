package a2aserver_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"go.uber.org/goleak"
)

// TestNoLeak: finished, paused and cancelled tasks leave no goroutine
// behind once the handler is closed.
func TestNoLeak(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	func() {
		stop, base := serveNoCleanup(t)
		defer stop()
		c := goClient(t, base)
		send(t, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "add 1 and 2"}))
		send(t, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "email bob@example.com: hi"}))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for ev, err := range c.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "slow job"})}) {
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.CancelTask(ctx, &a2a.TaskIDParams{ID: ev.TaskInfo().TaskID}); err != nil {
				t.Fatal(err)
			}
			break
		}
	}()
	http.DefaultClient.CloseIdleConnections()
}
