package temporal_test

import (
	"context"
	"testing"
	"time"

	"github.com/loomkit/loom/durable/temporal"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/session"
)

// userTexts returns the texts of the user messages of a log, in order.
func userTexts(log *session.Session) []string {
	var out []string
	for _, ev := range log.Events() {
		if ev.Author == event.AuthorUser && ev.Content != nil {
			for _, p := range ev.Content.Parts {
				if p != nil && p.Text != "" {
					out = append(out, p.Text)
				}
			}
		}
	}
	return out
}

// TestMessageAdmittedBeforeAnotherWorkflowsMessage: a message admitted
// when the log was empty reaches a fresh session workflow only after
// another message was stored and answered (by the session's previous
// workflow, which then ended: idle, or cancelled). Its turn stores and
// runs the message; it does not take the other message for its own and
// resume that one's invocation.
func TestMessageAdmittedBeforeAnotherWorkflowsMessage(t *testing.T) {
	env, app, _ := suiteEnv(t)
	ctx := context.Background()
	// The previous workflow's turn, after this message was admitted.
	first, err := app.RunSync(ctx, user, "s", text("first"), nil)
	if err != nil {
		t.Fatal(err)
	}
	firstInv := first[0].InvocationID
	var st temporal.Status
	env.RegisterDelayedCallback(func() {
		send(t, env, temporal.Message{RequestID: "late", Content: text("second"), After: 0}, func(s temporal.Status, err error) {
			if err != nil {
				t.Errorf("update: %v", err)
			}
			st = s
		})
	}, time.Second)
	env.ExecuteWorkflow(temporal.WorkflowName, temporal.SessionInput{
		App: appName, User: user, Session: "s", TreeHash: temporal.TreeHash(app.Tree()),
	})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	log := stored(t, app, "s")
	if got := userTexts(log); len(got) != 2 || got[0] != "first" || got[1] != "second" {
		t.Fatalf("user messages in the log %q, want [first second]\n%s", got, shapeText(t, log))
	}
	if st.Error != "" || st.InvocationID == "" || st.InvocationID == firstInv {
		t.Fatalf("status %+v: want the message's own invocation, not %s", st, firstInv)
	}
	if ev := log.At(st.Floor); ev.Author != event.AuthorUser || ev.Content.Parts[0].Text != "second" {
		t.Fatalf("status floor %d is not the message's index in the log", st.Floor)
	}
}
