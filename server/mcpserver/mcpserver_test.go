package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/examples/assistant"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/server/mcpserver"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/agenttool"
	"github.com/loomkit/loom/tool/functiontool"
)

// protocols are the protocol versions clients ask for: their latest
// (which a stateful server such as this one negotiates down) and
// 2025-11-25.
var protocols = []string{"", "2025-11-25"}

func newRunner(t testing.TB) *runner.Runner {
	t.Helper()
	root, err := assistant.New(assistant.Offline())
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "assistant", Agent: root, Sessions: session.NewService(memsession.New(), nil)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func serve(t testing.TB, cfg mcpserver.Config) (*mcpserver.Handler, string) {
	t.Helper()
	h, err := mcpserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	return h, srv.URL
}

// connect opens an MCP session with the Go SDK's client; elicit, when not
// nil, answers elicitations.
func connect(t testing.TB, url, protocol string, hc *http.Client, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: elicit})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t testing.TB, cs *mcp.ClientSession, args map[string]any) (*mcp.CallToolResult, mcpserver.Result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "assistant", Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %v: %v", args, err)
	}
	var out mcpserver.Result
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatal(err)
		}
	}
	return res, out
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// The tool is listed under the root agent's name, with its description.
func TestToolList(t *testing.T) {
	_, url := serve(t, mcpserver.Config{Runner: newRunner(t)})
	cs := connect(t, url, "", nil, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != "assistant" || !strings.HasPrefix(res.Tools[0].Description, assistant.Description) {
		t.Fatalf("tools %+v, want one, assistant, described as the agent", res.Tools)
	}
}

// One call is one invocation; a call with the session_id of an earlier
// result continues that session.
func TestCallAndContinue(t *testing.T) {
	r := newRunner(t)
	_, url := serve(t, mcpserver.Config{Runner: r})
	cs := connect(t, url, "", nil, nil)
	res, out := call(t, cs, map[string]any{"request": "weather in Oslo"})
	if res.IsError || out.Status != mcpserver.StatusCompleted || !strings.Contains(out.Response, "Oslo") || text(res) != out.Response || out.SessionID == "" {
		t.Fatalf("first call: %+v %q, want completed with the weather in Oslo", out, text(res))
	}
	res, out2 := call(t, cs, map[string]any{"request": "add 2 and 3", "session_id": out.SessionID})
	if res.IsError || out2.SessionID != out.SessionID || !strings.Contains(out2.Response, "5") {
		t.Fatalf("second call: %+v, want the sum in session %s", out2, out.SessionID)
	}
	sess, err := r.Sessions().Get(context.Background(), session.Key{AppName: "assistant", UserID: mcpserver.UserPrefix + out.SessionID, SessionID: out.SessionID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	invocations := map[string]bool{}
	for _, ev := range sess.Events() {
		invocations[ev.InvocationID] = true
	}
	if len(invocations) != 2 {
		t.Errorf("session holds %d invocations, want 2 (one per call)", len(invocations))
	}
}

// A pause (send_email waits for the user's approval) is asked through
// elicitation; approving it resumes the invocation within the same call.
func TestElicitationApproves(t *testing.T) {
	for _, protocol := range protocols {
		t.Run("protocol="+protocol, func(t *testing.T) {
			r := newRunner(t)
			_, url := serve(t, mcpserver.Config{Runner: r})
			var mu sync.Mutex
			var asked []string
			cs := connect(t, url, protocol, nil, func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				asked = append(asked, req.Params.Message)
				mu.Unlock()
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirmed": true}}, nil
			})
			res, out := call(t, cs, map[string]any{"request": "email bob@example.com: lunch at noon"})
			if res.IsError || out.Status != mcpserver.StatusCompleted || !strings.Contains(out.Response, "bob@example.com") {
				t.Fatalf("call: %+v %q, want completed, the email sent", out, text(res))
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 1 || !strings.Contains(asked[0], "send_email") {
				t.Errorf("elicitations %q, want one asking to approve send_email", asked)
			}
			sess, err := r.Sessions().Get(context.Background(), session.Key{AppName: "assistant", UserID: mcpserver.UserPrefix + out.SessionID, SessionID: out.SessionID}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if v, _ := sess.Get("last_email_to"); v != "bob@example.com" {
				t.Errorf("last_email_to = %v, want bob@example.com: the tool ran once approved", v)
			}
		})
	}
}

// Declining the elicitation rejects the call.
func TestElicitationDeclines(t *testing.T) {
	for _, protocol := range protocols {
		t.Run("protocol="+protocol, func(t *testing.T) {
			_, url := serve(t, mcpserver.Config{Runner: newRunner(t)})
			cs := connect(t, url, protocol, nil, func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "decline"}, nil
			})
			res, out := call(t, cs, map[string]any{"request": "email bob@example.com: lunch"})
			if res.IsError || out.Status != mcpserver.StatusCompleted || !strings.Contains(out.Response, "did not send") {
				t.Fatalf("call: %+v %q, want completed without sending", out, text(res))
			}
		})
	}
}

// A cancelled elicitation leaves the session waiting: the result is
// pending, and answers in a later call resume it.
func TestElicitationCancelled(t *testing.T) {
	for _, protocol := range protocols {
		t.Run("protocol="+protocol, func(t *testing.T) {
			_, url := serve(t, mcpserver.Config{Runner: newRunner(t)})
			cs := connect(t, url, protocol, nil, func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return &mcp.ElicitResult{Action: "cancel"}, nil
			})
			res, out := call(t, cs, map[string]any{"request": "email bob@example.com: lunch"})
			if res.IsError || out.Status != mcpserver.StatusPending || len(out.Pending) != 1 {
				t.Fatalf("call: %+v %q, want pending on one call", out, text(res))
			}
			res, out = call(t, cs, map[string]any{"session_id": out.SessionID, "answers": map[string]any{out.Pending[0].ID: true}})
			if res.IsError || out.Status != mcpserver.StatusCompleted || !strings.Contains(out.Response, "bob@example.com") {
				t.Fatalf("answer: %+v %q, want completed, the email sent", out, text(res))
			}
		})
	}
}

// A client without elicitation gets a pending result listing the call,
// and answers it in a later call of the same session.
func TestPendingAndAnswer(t *testing.T) {
	r := newRunner(t)
	_, url := serve(t, mcpserver.Config{Runner: r})
	cs := connect(t, url, "", nil, nil)
	res, out := call(t, cs, map[string]any{"request": "email bob@example.com: lunch at noon"})
	if res.IsError || out.Status != mcpserver.StatusPending || len(out.Pending) != 1 {
		t.Fatalf("call: %+v, want pending on one call", out)
	}
	p := out.Pending[0]
	if p.Kind != mcpserver.KindConfirmation || p.Name != "adk_request_confirmation" || !strings.Contains(p.Message, "send_email") || !strings.Contains(text(res), p.ID) {
		t.Fatalf("pending %+v, text %q: want the approval of send_email, named in the text", p, text(res))
	}
	// A new request while the session waits is refused, and loses nothing.
	res, again := call(t, cs, map[string]any{"request": "weather in Oslo", "session_id": out.SessionID})
	if again.Status != mcpserver.StatusPending || len(again.Pending) != 1 || again.Pending[0].ID != p.ID {
		t.Fatalf("request while waiting: %+v %q, want the same pending call", again, text(res))
	}
	res, done := call(t, cs, map[string]any{"session_id": out.SessionID, "answers": map[string]any{p.ID: "yes"}})
	if res.IsError || done.Status != mcpserver.StatusCompleted || !strings.Contains(done.Response, "bob@example.com") {
		t.Fatalf("answer: %+v %q, want completed, the email sent", done, text(res))
	}
}

// Bad arguments get an error result naming the problem; nothing runs.
func TestBadArguments(t *testing.T) {
	r := newRunner(t)
	_, url := serve(t, mcpserver.Config{Runner: r})
	cs := connect(t, url, "", nil, nil)
	_, out := call(t, cs, map[string]any{"request": "email bob@example.com: hi"})
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, "request is required"},
		{map[string]any{"request": "   "}, "request is required"},
		{map[string]any{"request": "hi", "session_id": "no-such-session"}, "no session no-such-session"},
		{map[string]any{"request": "hi", "session_id": strings.Repeat("x", 300)}, "session id"},
		{map[string]any{"session_id": out.SessionID, "answers": map[string]any{"made-up": true}}, "made-up"},
		{map[string]any{"session_id": out.SessionID, "answers": map[string]any{out.Pending[0].ID: 7.0}}, "want an object"},
		{map[string]any{"session_id": out.SessionID, "request": "x", "answers": map[string]any{out.Pending[0].ID: true}}, "either request or answers"},
		{map[string]any{"request": 12}, "bad arguments"},
	} {
		res, _ := call(t, cs, tc.args)
		if !res.IsError || !strings.Contains(text(res), tc.want) {
			t.Errorf("%v: %v %q, want an error containing %q", tc.args, res.IsError, text(res), tc.want)
		}
	}
	// The session still waits for its call.
	res, done := call(t, cs, map[string]any{"session_id": out.SessionID, "answers": map[string]any{out.Pending[0].ID: false}})
	if res.IsError || done.Status != mcpserver.StatusCompleted || !strings.Contains(done.Response, "did not send") {
		t.Fatalf("answer after bad calls: %+v %q", done, text(res))
	}
}

// bearer authenticates "Bearer USER" as USER.
func bearer(r *http.Request) (string, error) {
	u, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || u == "" {
		return "", errors.New("no token")
	}
	return u, nil
}

type tokenTransport struct{ token string }

func (t tokenTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return http.DefaultTransport.RoundTrip(r)
}

func as(user string) *http.Client { return &http.Client{Transport: tokenTransport{user}} }

// With Authenticate, a session belongs to the authenticated user: another
// user cannot continue it, nor use the MCP session.
func TestAuthenticate(t *testing.T) {
	r := newRunner(t)
	_, url := serve(t, mcpserver.Config{Runner: r, Authenticate: bearer})
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d, want 401", resp.StatusCode)
	}
	alice := connect(t, url, "", as("alice"), nil)
	_, out := call(t, alice, map[string]any{"request": "weather in Oslo"})
	if out.Status != mcpserver.StatusCompleted {
		t.Fatalf("alice: %+v", out)
	}
	if _, err := r.Sessions().Get(context.Background(), session.Key{AppName: "assistant", UserID: "alice", SessionID: out.SessionID}, nil); err != nil {
		t.Errorf("alice's session: %v, want it stored under the user alice", err)
	}
	bob := connect(t, url, "", as("bob"), nil)
	res, _ := call(t, bob, map[string]any{"request": "weather in Oslo", "session_id": out.SessionID})
	if !res.IsError || !strings.Contains(text(res), "no session") {
		t.Errorf("bob continuing alice's session: %q, want no session", text(res))
	}
}

// An MCP session opened by one user is refused to another (the SDK's
// check, fed with the user Loom authenticated).
func TestSessionHijack(t *testing.T) {
	_, url := serve(t, mcpserver.Config{Runner: newRunner(t), Authenticate: bearer})
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, id)
	}
	req, _ = http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer bob")
	req.Header.Set("Mcp-Session-Id", id)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("bob on alice's MCP session: %d, want 403", resp.StatusCode)
	}
}

// Sessions beyond MaxSessions are refused with 503 until one closes.
func TestMaxSessions(t *testing.T) {
	_, url := serve(t, mcpserver.Config{Runner: newRunner(t), MaxSessions: 1})
	first := connect(t, url, "2025-11-25", nil, nil)
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	if _, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}); err == nil {
		t.Fatal("a second session was opened beyond MaxSessions=1")
	}
	first.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err == nil {
			cs.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no session after the first closed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Mounted in the API server (server.Config.Mounts), the handler takes the
// user the server's Authenticate hook bound the request to.
func TestMountedAuthenticate(t *testing.T) {
	r := newRunner(t)
	h, err := mcpserver.New(mcpserver.Config{Runner: r})
	if err != nil {
		t.Fatal(err)
	}
	api, err := server.New(server.Config{Apps: []*runner.Runner{r}, Authenticate: bearer, Mounts: map[string]http.Handler{"/mcp/assistant": h}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(func() { // after the client sessions close (cleanups run last first)
		h.Close()
		api.Close()
		srv.Close()
	})
	url := srv.URL + "/mcp/assistant"

	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	if _, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil); err == nil {
		t.Error("connected without a token")
	}
	cs := connect(t, url, "", as("carol"), nil)
	_, out := call(t, cs, map[string]any{"request": "weather in Oslo"})
	if out.Status != mcpserver.StatusCompleted {
		t.Fatalf("call: %+v", out)
	}
	if _, err := r.Sessions().Get(context.Background(), session.Key{AppName: "assistant", UserID: "carol", SessionID: out.SessionID}, nil); err != nil {
		t.Errorf("carol's session: %v, want it stored under the user carol", err)
	}
}

// Close ends the requests in progress, an open session's event stream
// included, so that the HTTP server shuts down at once.
func TestCloseEndsStreams(t *testing.T) {
	h, err := mcpserver.New(mcpserver.Config{Runner: newRunner(t)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	h.Close()
	done := make(chan struct{})
	go func() {
		srv.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not close within 10s of Handler.Close")
	}
}

type ticketArgs struct {
	Title string `json:"title"`
}

// A long-running tool's pause is asked as text; the answer is the tool's
// response {"response": text}.
func TestElicitLongRunningTool(t *testing.T) {
	ticket, err := functiontool.New(functiontool.Config{Name: "open_ticket", Description: "Opens a ticket.", LongRunning: true},
		func(context.Context, tool.Context, ticketArgs) (map[string]any, error) {
			return map[string]any{"status": "pending"}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	llm := scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if fr := scripted.LastFunctionResponse(req); len(fr) > 0 {
			return scripted.Text(fmt.Sprintf("Ticket %v.", fr[0].Response["response"])), nil
		}
		return scripted.Call("open_ticket", map[string]any{"title": "printer"}), nil
	})
	root, err := llmagent.New(llmagent.Config{Name: "desk", Model: llm, Tools: []tool.Tool{ticket}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "desk", Agent: root, Sessions: session.NewService(memsession.New(), nil)})
	if err != nil {
		t.Fatal(err)
	}
	_, url := serve(t, mcpserver.Config{Runner: r})
	var asked string
	cs := connect(t, url, "", nil, func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = req.Params.Message
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"response": "closed"}}, nil
	})
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "desk", Arguments: map[string]any{"request": "my printer is broken"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(res); res.IsError || got != "Ticket closed." || !strings.Contains(asked, "open_ticket") {
		t.Errorf("result %q (asked %q), want Ticket closed. after asking about open_ticket", got, asked)
	}
}

// An agent tool whose child asks for credentials is a credential for the
// client, never asked in a form: the result is pending on it, and the
// approval with the credential as payload, in a later call, reaches the
// child, while the session keeps no credential.
//
// (CONFORMANCE T22)
func TestRelayedCredentialIsNotElicited(t *testing.T) {
	const secret = "k-mcp-relayed-31"
	fetch, err := functiontool.New(functiontool.Config{Name: "fetch_report", Description: "Fetches a private report."},
		func(_ context.Context, tc tool.Context, _ struct{}) (map[string]any, error) {
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
	r, err := runner.New(runner.Config{AppName: "assistant", Agent: root, Sessions: session.NewService(memsession.New(), nil)})
	if err != nil {
		t.Fatal(err)
	}
	_, url := serve(t, mcpserver.Config{Runner: r})
	var mu sync.Mutex
	var asked []string
	cs := connect(t, url, "", nil, func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, req.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirmed": true}}, nil
	})
	res, out := call(t, cs, map[string]any{"request": "my report"})
	if res.IsError || out.Status != mcpserver.StatusPending || len(out.Pending) != 1 || out.Pending[0].Kind != mcpserver.KindCredential {
		t.Fatalf("call: %+v %q, want pending on one credential", out, text(res))
	}
	mu.Lock()
	if len(asked) != 0 {
		t.Errorf("the credential was asked in a form: %q", asked)
	}
	mu.Unlock()
	p := out.Pending[0]
	res, done := call(t, cs, map[string]any{"session_id": out.SessionID, "answers": map[string]any{
		p.ID: map[string]any{"confirmed": true, "payload": map[string]any{"apiKey": secret}}}})
	if res.IsError || done.Status != mcpserver.StatusCompleted || done.Response != "done: key ok: true" {
		t.Fatalf("answer: %+v %q, want the child's answer with the key", done, text(res))
	}
	sess, err := r.Sessions().Get(context.Background(), session.Key{AppName: "assistant", UserID: mcpserver.UserPrefix + out.SessionID, SessionID: out.SessionID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range sess.Events() {
		if b, _ := json.Marshal(ev); strings.Contains(string(b), secret) {
			t.Fatalf("the credential was written to the session: %s", b)
		}
	}
}
