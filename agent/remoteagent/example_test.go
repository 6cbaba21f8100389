package remoteagent_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/agent/remoteagent"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server/a2aserver"
	"github.com/loomkit/loom/session/memsession"
)

// A remote agent calling a Loom application served over A2A (here in the
// same process; usually another server).
func ExampleNew() {
	// The remote side: an application served by a2aserver.
	greeter, _ := llmagent.New(llmagent.Config{Name: "greeter", Description: "Greets people.", Model: scripted.NewSequence("m", scripted.Text("Hello from afar!"))})
	served, _ := runner.New(runner.Config{AppName: "greeter", Agent: greeter, Sessions: memsession.NewService()})
	h, _ := a2aserver.New(a2aserver.Config{Runner: served})
	srv := httptest.NewServer(h)
	defer srv.Close()

	// The local side: the remote agent as the root of an application.
	remote, err := remoteagent.New(remoteagent.Config{Name: "greeter_remote", URL: srv.URL})
	if err != nil {
		panic(err)
	}
	r, _ := runner.New(runner.Config{AppName: "local", Agent: remote, Sessions: memsession.NewService(), AutoCreateSession: true})
	for ev, err := range r.Run(context.Background(), "u", "s", genai.NewContentFromText("hi", genai.RoleUser), nil) {
		if err != nil {
			panic(err)
		}
		if !ev.Partial && ev.Content != nil {
			fmt.Println(ev.Author+":", ev.Content.Parts[0].Text)
		}
	}
	// Output:
	// greeter_remote: Hello from afar!
}
