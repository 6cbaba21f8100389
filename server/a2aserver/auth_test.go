package a2aserver_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/server/a2aserver"
	"github.com/loomkit/loom/session"
)

// asUser is a transport that names the caller in the X-User header.
type asUser struct{ user string }

func (u asUser) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-User", u.user)
	return http.DefaultTransport.RoundTrip(r)
}

// TestAuthenticatedUsersAreIsolated checks CONFORMANCE S8 over A2A: with
// server.Config.Authenticate, a context's session belongs to the caller,
// and a task only to the user who started it: another user can neither
// read it nor answer its pause, and the same context id names a session
// of their own.
func TestAuthenticatedUsersAreIsolated(t *testing.T) {
	r := newRunner(t)
	client := authClients(t, r)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	alice, bob := client("alice"), client("bob")

	task := send(t, alice, a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "open a ticket"}))
	pendingCall(t, task)
	key := session.Key{AppName: r.AppName(), UserID: "alice", SessionID: string(task.ContextID)}
	before, err := r.Sessions().Get(ctx, key, nil)
	if err != nil {
		t.Fatalf("alice's context is not alice's session: %v", err)
	}

	if got, err := bob.GetTask(ctx, &a2a.TaskQueryParams{ID: task.ID}); err == nil {
		t.Fatalf("bob read alice's task: %+v", got)
	}
	if _, err := bob.CancelTask(ctx, &a2a.TaskIDParams{ID: task.ID}); err == nil {
		t.Fatal("bob cancelled alice's task")
	}
	reply := a2a.NewMessage(a2a.MessageRoleUser, a2a.DataPart{Data: map[string]any{"status": "closed"}})
	reply.TaskID, reply.ContextID = task.ID, task.ContextID
	if res, err := bob.SendMessage(ctx, &a2a.MessageSendParams{Message: reply}); err == nil {
		t.Fatalf("bob answered alice's task: %+v", res)
	}
	after, err := r.Sessions().Get(ctx, key, nil)
	if err != nil || after.Len() != before.Len() {
		t.Fatalf("alice's session changed by bob's requests: %d events, then %d (%v)", before.Len(), after.Len(), err)
	}

	// Bob's message in the same context id lands in a session of his own.
	mine := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "open a ticket"})
	mine.ContextID = task.ContextID
	bobs := send(t, bob, mine)
	if bobs.ID == task.ID {
		t.Fatal("bob's message continued alice's task")
	}
	if _, err := r.Sessions().Get(ctx, session.Key{AppName: r.AppName(), UserID: "bob", SessionID: string(task.ContextID)}, nil); err != nil {
		t.Fatalf("bob's message did not go to bob's session: %v", err)
	}

	// Alice still answers her own pause.
	done := send(t, alice, reply)
	if done.ID != task.ID || done.Status.State != a2a.TaskStateCompleted || artifactText(done) != "Ticket closed." {
		t.Fatalf("alice's answer: task %s %s %q", done.ID, done.Status.State, artifactText(done))
	}
}

// authClients serves r over A2A behind an Authenticate that trusts the
// X-User header, and returns a client factory per user.
func authClients(t *testing.T, r *runner.Runner) func(user string) *a2aclient.Client {
	t.Helper()
	h, err := a2aserver.New(a2aserver.Config{Runner: r})
	if err != nil {
		t.Fatal(err)
	}
	const prefix = "/a2a/assistant"
	api, err := server.New(server.Config{Apps: []*runner.Runner{r},
		Mounts: map[string]http.Handler{prefix: http.StripPrefix(prefix, h)},
		Authenticate: func(req *http.Request) (string, error) {
			if u := req.Header.Get("X-User"); u != "" {
				return u, nil
			}
			return "", errors.New("who are you?")
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	return func(user string) *a2aclient.Client {
		hc := &http.Client{Transport: asUser{user}}
		card, err := agentcard.NewResolver(hc).Resolve(context.Background(), srv.URL+prefix)
		if err != nil {
			t.Fatal(err)
		}
		c, err := a2aclient.NewFromCard(context.Background(), card, a2aclient.WithJSONRPCTransport(hc))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
}

// TestResubscribeIsTheOwnersOnly checks CONFORMANCE S8 for
// tasks/resubscribe: behind Authenticate, only the user who started a
// running task can follow it; another user who learns its id is
// told it is not found and sees none of its events.
func TestResubscribeIsTheOwnersOnly(t *testing.T) {
	client := authClients(t, newRunner(t))
	alice, bob := client("alice"), client("bob")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := startSlowJob(ctx, t, alice).TaskID
	defer func() {
		if _, err := alice.CancelTask(ctx, &a2a.TaskIDParams{ID: id}); err != nil {
			t.Error(err)
		}
	}()

	for ev, err := range bob.ResubscribeToTask(ctx, &a2a.TaskIDParams{ID: id}) {
		if err == nil {
			t.Fatalf("bob followed alice's task: %T %+v", ev, ev)
		}
		if !errors.Is(err, a2a.ErrTaskNotFound) {
			t.Errorf("bob's resubscribe: %v, want task not found", err)
		}
		break
	}
	sub, stop := context.WithTimeout(ctx, 200*time.Millisecond)
	defer stop()
	for _, err := range alice.ResubscribeToTask(sub, &a2a.TaskIDParams{ID: id}) {
		if err != nil && sub.Err() == nil {
			t.Errorf("alice's resubscribe to her own task: %v", err)
		}
		break
	}
}

// TestMessageOnAnotherUsersRunningTaskIsNotFound: behind Authenticate, a
// message naming another user's running task is told the task is not
// found, as for a task that is not running, instead of learning that it
// runs.
func TestMessageOnAnotherUsersRunningTaskIsNotFound(t *testing.T) {
	client := authClients(t, newRunner(t))
	alice, bob := client("alice"), client("bob")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info := startSlowJob(ctx, t, alice)
	defer func() {
		if _, err := alice.CancelTask(ctx, &a2a.TaskIDParams{ID: info.TaskID}); err != nil {
			t.Error(err)
		}
	}()
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "yes"})
	msg.TaskID, msg.ContextID = info.TaskID, info.ContextID
	if res, err := bob.SendMessage(ctx, &a2a.MessageSendParams{Message: msg}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("bob's message on alice's running task: %+v, %v; want task not found", res, err)
	}
}

// startSlowJob starts a slow job as c's user and returns its task once it
// runs.
func startSlowJob(ctx context.Context, t *testing.T, c *a2aclient.Client) a2a.TaskInfo {
	t.Helper()
	for ev, err := range c.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "slow job"})}) {
		if err != nil {
			t.Fatal(err)
		}
		return ev.TaskInfo()
	}
	t.Fatal("the slow job's stream ended without an event")
	return a2a.TaskInfo{}
}
