package a2aserver_test

// The A2A server driven by the A2A Go SDK's client.

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/loomkit/loom/internal/a2aparts"
	"github.com/loomkit/loom/server/a2aserver"
	"github.com/loomkit/loom/session"
)

func goClient(t testing.TB, base string) *a2aclient.Client {
	t.Helper()
	card, err := agentcard.NewResolver(http.DefaultClient).Resolve(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a2aclient.NewFromCard(context.Background(), card, a2aclient.WithJSONRPCTransport(http.DefaultClient))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func send(t *testing.T, c *a2aclient.Client, msg *a2a.Message) *a2a.Task {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := c.SendMessage(ctx, &a2a.MessageSendParams{Message: msg})
	if err != nil {
		t.Fatalf("message/send: %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("message/send returned %T, want a task", res)
	}
	return task
}

func artifactText(task *a2a.Task) string {
	var b strings.Builder
	for _, a := range task.Artifacts {
		b.WriteString(a2aparts.Text(a.Parts))
	}
	return b.String()
}

func pendingCall(t *testing.T, task *a2a.Task) map[string]any {
	t.Helper()
	if task.Status.State != a2a.TaskStateInputRequired || task.Status.Message == nil {
		t.Fatalf("task state %s, want input-required with a message", task.Status.State)
	}
	for _, p := range task.Status.Message.Parts {
		if dp, ok := p.(a2a.DataPart); ok && a2aparts.Kind(dp) == a2aparts.TypeFunctionCall && dp.Metadata[a2aparts.MetaLongRunning] == true {
			return dp.Data
		}
	}
	t.Fatalf("input-required message %+v has no pausing call", task.Status.Message)
	return nil
}

// A long-running tool pauses the task; a data part answers it.
//
// (CONFORMANCE P1)
func TestLongRunningTool(t *testing.T) {
	_, base := serve(t, newRunner(t))
	c := goClient(t, base)
	task := send(t, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "open a ticket"}))
	if call := pendingCall(t, task); call["name"] != "open_ticket" {
		t.Fatalf("pausing call %v, want open_ticket", call)
	}
	reply := a2a.NewMessage(a2a.MessageRoleUser, a2a.DataPart{Data: map[string]any{"status": "closed"}})
	reply.TaskID, reply.ContextID = task.ID, task.ContextID
	done := send(t, c, reply)
	if done.ID != task.ID || done.Status.State != a2a.TaskStateCompleted || artifactText(done) != "Ticket closed." {
		t.Errorf("resumed task %s %s %q, want task %s completed with \"Ticket closed.\"", done.ID, done.Status.State, artifactText(done), task.ID)
	}
}

// ADK's own form of an answer: a function_response data part naming the
// call.
//
// (CONFORMANCE P1)
func TestExplicitFunctionResponse(t *testing.T) {
	_, base := serve(t, newRunner(t))
	c := goClient(t, base)
	task := send(t, c, a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "email bob@example.com: hi"}))
	call := pendingCall(t, task)
	reply := a2a.NewMessage(a2a.MessageRoleUser, a2a.DataPart{
		Data:     map[string]any{"id": call["id"], "name": call["name"], "response": map[string]any{"confirmed": false}},
		Metadata: map[string]any{a2aparts.MetaType: a2aparts.TypeFunctionResponse},
	})
	reply.TaskID, reply.ContextID = task.ID, task.ContextID
	done := send(t, c, reply)
	if done.Status.State != a2a.TaskStateCompleted || !strings.Contains(artifactText(done), "did not send") {
		t.Errorf("rejected confirmation: %s %q, want completed without sending", done.Status.State, artifactText(done))
	}
}

// A client that disconnects loses nothing: the task runs on and its result
// is read later.
func TestDisconnect(t *testing.T) {
	r := newRunner(t)
	_, base := serve(t, r)
	c := goClient(t, base)
	ctx, cancel := context.WithCancel(context.Background())
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "weather in Oslo"})
	var id a2a.TaskID
	var contextID string
	for ev, err := range c.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: msg}) {
		if err != nil {
			t.Fatal(err)
		}
		info := ev.TaskInfo()
		id, contextID = info.TaskID, info.ContextID
		break // the client goes away after the first event
	}
	cancel()
	var task *a2a.Task
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		got, err := c.GetTask(context.Background(), &a2a.TaskQueryParams{ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if task = got; task.Status.State.Terminal() {
			break
		}
	}
	if task.Status.State != a2a.TaskStateCompleted || !strings.Contains(artifactText(task), "Oslo") {
		t.Fatalf("task after the disconnect: %s %q, want completed with the answer", task.Status.State, artifactText(task))
	}
	sess, err := r.Sessions().Get(context.Background(), session.Key{AppName: "assistant", UserID: a2aserver.UserPrefix + contextID, SessionID: contextID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sess.Len() < 4 {
		t.Errorf("session holds %d events, want the whole turn", sess.Len())
	}
}

func TestBadRequests(t *testing.T) {
	_, base := serve(t, newRunner(t))
	c := goClient(t, base)
	ctx := context.Background()

	bad := a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "hi"})
	bad.ContextID = strings.Repeat("x", 300) // not a valid session id
	if _, err := c.SendMessage(ctx, &a2a.MessageSendParams{Message: bad}); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("bad context id: err = %v, want invalid params", err)
	}
	empty := a2a.NewMessage(a2a.MessageRoleUser)
	if _, err := c.SendMessage(ctx, &a2a.MessageSendParams{Message: empty}); !errors.Is(err, a2a.ErrInvalidParams) {
		t.Errorf("empty message: err = %v, want invalid params", err)
	}
	if _, err := c.GetTask(ctx, &a2a.TaskQueryParams{ID: "nope"}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("unknown task: err = %v, want task not found", err)
	}

	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "", http.StatusMethodNotAllowed},
		{http.MethodPost, a2aserver.CardPath, http.StatusMethodNotAllowed},
		{http.MethodGet, a2aserver.CardPath, http.StatusOK},
	} {
		req, _ := http.NewRequest(tc.method, base+tc.path, strings.NewReader("{}"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
	}
	// A body over the limit is refused, not read.
	resp, err := http.Post(base, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"parts":[{"kind":"text","text":"`+strings.Repeat("a", 5<<20)+`"}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"error"`) || strings.Contains(string(body), `"result"`) {
		t.Errorf("oversized body: %d %s, want a JSON-RPC error", resp.StatusCode, body)
	}
}

func TestCard(t *testing.T) {
	h, base := serve(t, newRunner(t))
	card, err := agentcard.NewResolver(http.DefaultClient).Resolve(context.Background(), base)
	if err != nil {
		t.Fatal(err)
	}
	if card.URL != base || card.PreferredTransport != a2a.TransportProtocolJSONRPC || !card.Capabilities.Streaming {
		t.Errorf("card URL %q transport %q streaming %v, want %q over JSON-RPC with streaming", card.URL, card.PreferredTransport, card.Capabilities.Streaming, base)
	}
	if card.Description == "" || len(card.Skills) != 7 { // the agent and its six tools
		t.Errorf("card description %q, %d skills, want the agent's description and 7 skills", card.Description, len(card.Skills))
	}
	if got := h.Card("https://agents.example.com/a2a/assistant").URL; got != "https://agents.example.com/a2a/assistant" {
		t.Errorf("Card(url).URL = %q", got)
	}
}
