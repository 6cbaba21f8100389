package a2aserver_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/loomkit/loom/internal/a2aparts"
	"github.com/loomkit/loom/server/a2aserver"
	"github.com/loomkit/loom/session"
)

// A reply that cannot answer a paused task (no text or data, or a
// function response naming a call the task does not wait for) is refused
// as invalid and changes nothing: the task stays paused, its session
// unchanged, and the right answer still resumes it once.
//
// (CONFORMANCE P2)
func TestBadReplyLeavesTaskPaused(t *testing.T) {
	r := newRunner(t)
	_, base := serve(t, r)
	c := goClient(t, base)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	task := send(t, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "open a ticket"}))
	call := pendingCall(t, task)
	key := session.Key{AppName: r.AppName(), UserID: a2aserver.UserPrefix + task.ContextID, SessionID: task.ContextID}
	before, err := r.Sessions().Get(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}

	for name, part := range map[string]a2a.Part{
		"a file only": a2a.FilePart{File: a2a.FileURI{URI: "https://example.com/a.txt", FileMeta: a2a.FileMeta{MimeType: "text/plain"}}},
		"a response to another call": a2a.DataPart{
			Data:     map[string]any{"id": "not-" + call["id"].(string), "name": call["name"], "response": map[string]any{"status": "closed"}},
			Metadata: map[string]any{a2aparts.MetaType: a2aparts.TypeFunctionResponse},
		},
	} {
		bad := a2a.NewMessage(a2a.MessageRoleUser, part)
		bad.TaskID, bad.ContextID = task.ID, task.ContextID
		if res, err := c.SendMessage(ctx, &a2a.MessageSendParams{Message: bad}); !errors.Is(err, a2a.ErrInvalidParams) {
			t.Errorf("reply with %s: %+v, %v; want invalid params", name, res, err)
		}
		got, err := c.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.State != a2a.TaskStateInputRequired {
			t.Fatalf("after a reply with %s the task is %s, want still input-required", name, got.Status.State)
		}
	}
	after, err := r.Sessions().Get(ctx, key, nil)
	if err != nil || after.Len() != before.Len() {
		t.Fatalf("bad replies changed the session: %d events, then %d (%v)", before.Len(), after.Len(), err)
	}

	reply := a2a.NewMessage(a2a.MessageRoleUser, a2a.DataPart{Data: map[string]any{"status": "closed"}})
	reply.TaskID, reply.ContextID = task.ID, task.ContextID
	if done := send(t, c, reply); done.Status.State != a2a.TaskStateCompleted || artifactText(done) != "Ticket closed." {
		t.Fatalf("the good reply: %s %q, want completed with \"Ticket closed.\"", done.Status.State, artifactText(done))
	}
}
