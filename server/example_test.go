package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
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
