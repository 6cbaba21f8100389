package cli_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/loomkit/loom/cli"
	"github.com/loomkit/loom/examples/assistant"
)

// TestServeA2A: "loom web --a2a" serves every app over A2A at /a2a/APP,
// next to the API and the UI; without the flag nothing is there.
func TestServeA2A(t *testing.T) {
	for _, withFlag := range []bool{true, false} {
		ctx, cancel := context.WithCancel(context.Background())
		urls := make(chan string, 1)
		done := make(chan int, 1)
		args := []string{"web", "--port", "0", "--sessions", "memory://", "--artifacts", "memory://"}
		if withFlag {
			args = append(args, "--a2a")
		}
		var stderr bytes.Buffer
		go func() {
			done <- cli.Run(ctx, args, cli.Env{Stdout: io.Discard, Stderr: &stderr, Getenv: noEnv, Listening: func(u string) { urls <- u }},
				cli.App{Name: "assistant", New: assistant.New, Offline: assistant.Offline})
		}()
		base := <-urls
		cardURL := base + cli.A2APath("assistant")
		card, err := agentcard.NewResolver(http.DefaultClient).Resolve(ctx, cardURL)
		if !withFlag {
			if err == nil {
				t.Error("without --a2a the agent card is served")
			}
			cancel()
			<-done
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if card.Name != "assistant" || card.URL != cardURL {
			t.Errorf("card %q at %q, want assistant at %q", card.Name, card.URL, cardURL)
		}
		client, err := a2aclient.NewFromCard(ctx, card)
		if err != nil {
			t.Fatal(err)
		}
		res, err := client.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "add 2 and 3"})})
		if err != nil {
			t.Fatal(err)
		}
		task, ok := res.(*a2a.Task)
		if !ok || task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) == 0 {
			t.Fatalf("message/send = %+v, want a completed task with an artifact", res)
		}
		if txt := task.Artifacts[0].Parts[0].(a2a.TextPart).Text; !strings.Contains(txt, "5") {
			t.Errorf("answer %q, want the sum", txt)
		}
		if !strings.Contains(stderr.String(), "A2A agent assistant at "+cardURL) {
			t.Errorf("stderr %q does not announce the A2A agent", stderr.String())
		}
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("exit code %d", code)
		}
	}
}
