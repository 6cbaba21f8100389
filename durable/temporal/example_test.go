package temporal_test

import (
	"context"
	"fmt"
	"log"

	"go.temporal.io/sdk/client"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/durable/temporal"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/server"
	"github.com/loomkit/loom/storage"
)

// A worker process runs the invocations of an app; a server process
// starts them on Temporal and streams their events. Both use the same app
// over the same session store.
func Example() {
	ctx := context.Background()
	sessions, err := storage.OpenSessions(ctx, "sqlite:///var/lib/loom/sessions.db")
	if err != nil {
		log.Fatal(err)
	}
	root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: scripted.NewSequence("m", scripted.Text("hi"))})
	if err != nil {
		log.Fatal(err)
	}
	app, err := runner.New(runner.Config{AppName: "helpdesk", Agent: root, Sessions: sessions, Resumable: true})
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.Dial(client.Options{HostPort: "127.0.0.1:7233"})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// In the worker process:
	w, err := temporal.NewWorker(c, temporal.DefaultTaskQueue, app)
	if err != nil {
		log.Fatal(err)
	}
	go func() { _ = w.Run(nil) }()

	// In the server process:
	invoker, err := temporal.NewClient(temporal.ClientConfig{Client: c})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(server.Config{Apps: []*runner.Runner{app}, Invoker: invoker})
	if err != nil {
		log.Fatal(err)
	}
	_ = srv // serve it with net/http
}

// TreeHash tells two builds of an agent tree apart when their structure
// differs.
func ExampleTreeHash() {
	build := func(name string) *agent.Tree {
		a, err := llmagent.New(llmagent.Config{Name: name, Model: scripted.NewSequence("m")})
		if err != nil {
			log.Fatal(err)
		}
		t, err := agent.NewTree(a)
		if err != nil {
			log.Fatal(err)
		}
		return t
	}
	first, again, other := temporal.TreeHash(build("assistant")), temporal.TreeHash(build("assistant")), temporal.TreeHash(build("helper"))
	fmt.Println(first == again)
	fmt.Println(first == other)
	// Output:
	// true
	// false
}
