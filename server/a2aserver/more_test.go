package a2aserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server/a2aserver"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/agenttool"
	"github.com/loomkit/loom/tool/functiontool"
)

// A tool asking for a credential makes the task auth-required; the
// credential in a data part resumes it, and never reaches the session.
//
// (CONFORMANCE P1)
func TestCredentialIsAuthRequired(t *testing.T) {
	const secret = "k-123"
	fetch, err := functiontool.New(functiontool.Config{Name: "fetch_report", Description: "Fetches a private report."},
		func(ctx context.Context, tc tool.Context, _ noArgs) (map[string]any, error) {
			cred := tc.Credential()
			if cred == nil {
				tc.RequestCredential(map[string]any{"authScheme": map[string]any{"type": "apiKey", "in": "header", "name": "X-Key"}})
				return nil, nil
			}
			return map[string]any{"report": "fine", "key_ok": cred["apiKey"] == secret}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	a, err := llmagent.New(llmagent.Config{Name: "reporter", Tools: []tool.Tool{fetch},
		Model: scripted.NewSequence("m", scripted.Call("fetch_report", map[string]any{}), scripted.Text("The report is fine."))})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "reporter", Agent: a, Sessions: memsession.NewService()})
	if err != nil {
		t.Fatal(err)
	}
	_, base := serve(t, r)
	c := goClient(t, base)
	task := send(t, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "my report"}))
	if task.Status.State != a2a.TaskStateAuthRequired {
		t.Fatalf("state %s, want auth-required", task.Status.State)
	}
	reply := a2a.NewMessage(a2a.MessageRoleUser, a2a.DataPart{Data: map[string]any{"apiKey": secret}})
	reply.TaskID, reply.ContextID = task.ID, task.ContextID
	done := send(t, c, reply)
	if done.Status.State != a2a.TaskStateCompleted || artifactText(done) != "The report is fine." {
		t.Errorf("after the credential: %s %q", done.Status.State, artifactText(done))
	}
	sess, err := r.Sessions().Get(context.Background(), session.Key{AppName: "reporter", UserID: a2aserver.UserPrefix + task.ContextID, SessionID: task.ContextID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range sess.Events() {
		if b, _ := json.Marshal(ev); strings.Contains(string(b), secret) {
			t.Fatalf("the credential was written to the session: %s", b)
		}
	}
	noSecretInTask(t, c, done, secret)
}

// noSecretInTask fails t when the task, as message/send returned it or as
// tasks/get reads it, holds secret (in its history, say).
func noSecretInTask(t *testing.T, c *a2aclient.Client, task *a2a.Task, secret string) {
	t.Helper()
	got, err := c.GetTask(context.Background(), &a2a.TaskQueryParams{ID: task.ID})
	if err != nil {
		t.Fatal(err)
	}
	for _, tk := range []*a2a.Task{task, got} {
		b, err := json.Marshal(tk)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), secret) {
			t.Errorf("the task holds the credential: %s", b)
		}
		if len(tk.History) == 0 {
			t.Errorf("the task has no history: the check proves nothing")
		}
	}
}

// An agent used as a tool whose child asks for a credential makes the
// task auth-required; the approval of the agent tool's request, its
// payload the credential, reaches the child, and neither the session nor
// the task's history keeps it.
//
// (CONFORMANCE P1)
func TestRelayedCredentialIsAuthRequired(t *testing.T) {
	const secret = "k-relayed-77"
	fetch, err := functiontool.New(functiontool.Config{Name: "fetch_report", Description: "Fetches a private report."},
		func(ctx context.Context, tc tool.Context, _ noArgs) (map[string]any, error) {
			cred := tc.Credential()
			if cred == nil {
				tc.RequestCredential(map[string]any{"authScheme": map[string]any{"type": "apiKey", "in": "header", "name": "X-Key"}})
				return nil, nil
			}
			return map[string]any{"key_ok": cred["apiKey"] == secret}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	child, err := llmagent.New(llmagent.Config{Name: "reporter", Tools: []tool.Tool{fetch},
		Model: scripted.New("child", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
			if frs := scripted.LastFunctionResponse(req); len(frs) > 0 {
				return scripted.Text(fmt.Sprintf("key ok: %v", frs[0].Response["key_ok"])), nil
			}
			return scripted.Call("fetch_report", map[string]any{}), nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	at, err := agenttool.New(child, nil)
	if err != nil {
		t.Fatal(err)
	}
	root, err := llmagent.New(llmagent.Config{Name: "assistant", Tools: []tool.Tool{at},
		Model: scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
			if frs := scripted.LastFunctionResponse(req); len(frs) > 0 {
				return scripted.Text(fmt.Sprint("done: ", frs[0].Response["result"])), nil
			}
			return scripted.Call("reporter", map[string]any{"request": "my report"}), nil
		})})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "reporter", Agent: root, Sessions: memsession.NewService()})
	if err != nil {
		t.Fatal(err)
	}
	_, base := serve(t, r)
	c := goClient(t, base)
	task := send(t, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "my report"}))
	if task.Status.State != a2a.TaskStateAuthRequired {
		t.Fatalf("state %s, want auth-required", task.Status.State)
	}
	reply := a2a.NewMessage(a2a.MessageRoleUser, a2a.DataPart{Data: map[string]any{"confirmed": true, "payload": map[string]any{"apiKey": secret}}})
	reply.TaskID, reply.ContextID = task.ID, task.ContextID
	done := send(t, c, reply)
	if done.Status.State != a2a.TaskStateCompleted || artifactText(done) != "done: key ok: true" {
		t.Fatalf("after the credential: %s %q, want the child's answer with the key", done.Status.State, artifactText(done))
	}
	sess, err := r.Sessions().Get(context.Background(), session.Key{AppName: "reporter", UserID: a2aserver.UserPrefix + task.ContextID, SessionID: task.ContextID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range sess.Events() {
		if b, _ := json.Marshal(ev); strings.Contains(string(b), secret) {
			t.Fatalf("the credential was written to the session: %s", b)
		}
	}
	noSecretInTask(t, c, done, secret)
}

// Many clients at once, on separate contexts and on a shared one: every
// task completes with its own answer.
func TestConcurrentTasks(t *testing.T) {
	_, base := serve(t, newRunner(t))
	c := goClient(t, base)
	shared := a2a.NewContextID()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: fmt.Sprintf("add %d and 1", i)})
			if i%2 == 0 {
				msg.ContextID = shared
			}
			res, err := c.SendMessage(context.Background(), &a2a.MessageSendParams{Message: msg})
			if err != nil {
				errs <- err
				return
			}
			task := res.(*a2a.Task)
			if want := fmt.Sprintf("The sum is %d.", i+1); task.Status.State != a2a.TaskStateCompleted || !strings.Contains(artifactText(task), want) {
				errs <- fmt.Errorf("task %d: %s %q, want %q", i, task.Status.State, artifactText(task), want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A paused task can be cancelled; its context goes on with new tasks.
//
// (CONFORMANCE P2)
func TestCancelPausedTask(t *testing.T) {
	_, base := serve(t, newRunner(t))
	c := goClient(t, base)
	ctx := context.Background()
	paused := send(t, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "email bob@example.com: hi"}))
	if paused.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("state %s, want input-required", paused.Status.State)
	}
	cancelled, err := c.CancelTask(ctx, &a2a.TaskIDParams{ID: paused.ID})
	if err != nil || cancelled.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("tasks/cancel = %v, %v; want canceled", cancelled, err)
	}
	late := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "yes"})
	late.TaskID, late.ContextID = paused.ID, paused.ContextID
	if _, err := c.SendMessage(ctx, &a2a.MessageSendParams{Message: late}); err == nil {
		t.Error("a reply to a cancelled task was accepted")
	}
	next := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "add 1 and 2"})
	next.ContextID = paused.ContextID
	if task := send(t, c, next); task.Status.State != a2a.TaskStateCompleted || !strings.Contains(artifactText(task), "3") {
		t.Errorf("next task of the context: %s %q, want completed with the sum", task.Status.State, artifactText(task))
	}
}
