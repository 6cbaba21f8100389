package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/session/memsession"
)

// A server for one app whose agent greets the user; a client creates a
// session and streams a run over SSE.
func ExampleNew() {
	greeter, _ := agent.New(agent.Config{
		Name: "greeter",
		Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
			return func(yield func(*event.Event, error) bool) {
				ev := inv.NewEvent()
				ev.Content = genai.NewContentFromText("Hello, "+inv.UserContent().Parts[0].Text+"!", genai.RoleModel)
				yield(ev, nil)
			}
		},
	})
	app, _ := runner.New(runner.Config{AppName: "hello", Agent: greeter, Sessions: memsession.NewService()})
	srv, err := server.New(server.Config{Apps: []*runner.Runner{app}})
	if err != nil {
		fmt.Println(err)
		return
	}
	// In a program: hs := &http.Server{Addr: ..., Handler: srv};
	// hs.RegisterOnShutdown(func() { srv.Close() }); hs.ListenAndServe().
	ts := httptest.NewServer(srv)
	defer ts.Close()

	resp, err := http.Post(ts.URL+"/apps/hello/users/ada/sessions", "application/json", strings.NewReader(`{"sessionId":"s1"}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println("create:", resp.Status)

	body := `{"appName":"hello","userId":"ada","sessionId":"s1","newMessage":{"role":"user","parts":[{"text":"Ada"}]},"streaming":true}`
	resp, err = http.Post(ts.URL+"/run_sse", "application/json", strings.NewReader(body))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue // blank lines and the ": done" comment
		}
		var ev event.Event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: %s\n", ev.Author, ev.Content.Parts[0].Text)
	}
	// Output:
	// create: 200 OK
	// greeter: Hello, Ada!
}

// An API that authenticates its callers with bearer tokens: each token
// stands for one user, who may reach only their own sessions; a run
// request may leave out userId and runs as that user.
func ExampleConfig_authenticate() {
	greeter, _ := agent.New(agent.Config{
		Name: "greeter",
		Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
			return func(yield func(*event.Event, error) bool) {
				ev := inv.NewEvent()
				ev.Content = genai.NewContentFromText("Hello, "+inv.Session().UserID()+"!", genai.RoleModel)
				yield(ev, nil)
			}
		},
	})
	app, _ := runner.New(runner.Config{AppName: "hello", Agent: greeter, Sessions: memsession.NewService(), AutoCreateSession: true})
	tokens := map[string]string{"secret-ada": "ada", "secret-bob": "bob"} // in a program: a token store
	srv, err := server.New(server.Config{
		Apps: []*runner.Runner{app},
		Authenticate: func(r *http.Request) (string, error) {
			token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if user := tokens[token]; ok && user != "" {
				return user, nil
			}
			return "", errors.New("missing or unknown bearer token")
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()

	send := func(method, path, token, body string) {
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		fmt.Printf("%s %s: %d", method, path, resp.StatusCode)
		if strings.HasPrefix(string(b), "[") { // a run's events
			var evs []*event.Event
			_ = json.Unmarshal(b, &evs)
			fmt.Printf(" %s", evs[len(evs)-1].Content.Parts[0].Text)
		}
		fmt.Println()
	}
	send("GET", "/apps/hello/users/ada/sessions", "", "")
	send("GET", "/apps/hello/users/ada/sessions", "secret-bob", "")
	send("POST", "/run", "secret-ada", `{"appName":"hello","sessionId":"s1","newMessage":{"parts":[{"text":"hi"}]}}`)
	send("GET", "/apps/hello/users/ada/sessions/s1", "secret-ada", "")
	// Output:
	// GET /apps/hello/users/ada/sessions: 401
	// GET /apps/hello/users/ada/sessions: 403
	// POST /run: 200 Hello, ada!
	// GET /apps/hello/users/ada/sessions/s1: 200
}

// Under Authenticate, app-scoped state (keys starting with "app:", which
// every user of the app reads) is written only where AuthorizeAppState
// allows it: here only the user "admin" may write it.
func ExampleConfig_authorizeAppState() {
	greeter, _ := agent.New(agent.Config{
		Name: "greeter",
		Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
			return func(func(*event.Event, error) bool) {}
		},
	})
	app, _ := runner.New(runner.Config{AppName: "hello", Agent: greeter, Sessions: memsession.NewService()})
	srv, err := server.New(server.Config{
		Apps: []*runner.Runner{app},
		Authenticate: func(r *http.Request) (string, error) {
			user, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || user == "" {
				return "", errors.New("no bearer token")
			}
			return user, nil // in a program: a token checked against a store
		},
		AuthorizeAppState: func(r *http.Request, user string, keys []string) error {
			if user != "admin" {
				return fmt.Errorf("only admin writes %v", keys)
			}
			return nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, user := range []string{"ada", "admin"} {
		req := httptest.NewRequest("POST", "http://localhost/apps/hello/users/"+user+"/sessions", strings.NewReader(`{"state":{"app:banner":"Maintenance at noon"}}`))
		req.Header.Set("Authorization", "Bearer "+user)
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		fmt.Println(user, w.Code)
	}
	// Output:
	// ada 403
	// admin 200
}

// A handler of its own that streams events bounds each write with a
// StreamWriter: a client that stops reading for 30 s is cut off.
func ExampleNewStreamWriter() {
	ticks := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := server.NewStreamWriter(r.Context(), w, server.DefaultStreamWriteTimeout)
		defer sw.Close()
		sw.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			if _, err := fmt.Fprintf(sw, "data: %d\n\n", i); err != nil {
				return // the client is gone, or stalled
			}
			sw.Flush()
		}
	})
	ts := httptest.NewServer(ticks)
	defer ts.Close()
	resp, err := http.Get(ts.URL)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Print(strings.ReplaceAll(string(body), "\n\n", "\n"))
	// Output:
	// data: 0
	// data: 1
	// data: 2
}
