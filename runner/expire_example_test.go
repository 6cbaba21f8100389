package runner_test

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session/memsession"
)

// Sessions unused for longer than the app's SessionTTL are deleted by
// ExpireSessions, with their events, state and artifacts.
func ExampleRunner_ExpireSessions() {
	ctx := context.Background()
	bot, err := llmagent.New(llmagent.Config{Name: "bot", Model: scripted.NewSequence("m", scripted.Text("Hello."))})
	if err != nil {
		panic(err)
	}
	r, err := runner.New(runner.Config{
		AppName:           "helpdesk",
		Agent:             bot,
		Sessions:          memsession.NewService(),
		AutoCreateSession: true,
		SessionTTL:        30 * 24 * time.Hour,
	})
	if err != nil {
		panic(err)
	}
	if _, err := r.RunSync(ctx, "ada", "s1", genai.NewContentFromText("hi", genai.RoleUser), nil); err != nil {
		panic(err)
	}
	n, _ := r.ExpireSessions(ctx, time.Now())
	fmt.Println("deleted today:", n)
	n, _ = r.ExpireSessions(ctx, time.Now().Add(31*24*time.Hour))
	fmt.Println("deleted a month later:", n)
	// Output:
	// deleted today: 0
	// deleted a month later: 1
}
