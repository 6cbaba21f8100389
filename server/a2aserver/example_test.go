package a2aserver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server/a2aserver"
	"github.com/loomkit/loom/session/memsession"
)

// Serve an application over A2A and call it with the A2A Go SDK's client.
func ExampleNew() {
	greeter, _ := llmagent.New(llmagent.Config{
		Name:        "greeter",
		Description: "Greets people.",
		Model:       scripted.NewSequence("m", scripted.Text("Hello, Ada!")),
	})
	r, _ := runner.New(runner.Config{AppName: "greeter", Agent: greeter, Sessions: memsession.NewService()})

	h, err := a2aserver.New(a2aserver.Config{Runner: r})
	if err != nil {
		panic(err)
	}
	defer h.Close()
	mux := http.NewServeMux()
	mux.Handle("/a2a/greeter/", http.StripPrefix("/a2a/greeter", h))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx := context.Background()
	card, err := agentcard.NewResolver(nil).Resolve(ctx, srv.URL+"/a2a/greeter")
	if err != nil {
		panic(err)
	}
	fmt.Println(card.Name+":", card.Description, "streaming:", card.Capabilities.Streaming)
	client, _ := a2aclient.NewFromCard(ctx, card)
	res, err := client.SendMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "I am Ada"})})
	if err != nil {
		panic(err)
	}
	task := res.(*a2a.Task)
	fmt.Println(task.Status.State, task.Artifacts[0].Parts[0].(a2a.TextPart).Text)
	// Output:
	// greeter: Greets people. streaming: true
	// completed Hello, Ada!
}
