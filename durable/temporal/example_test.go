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

// Two deployments share a Temporal namespace, each with its own session
// store: each gives its clients a workflow id prefix of its own, so that
// their sessions "s1" are two workflows.
func ExampleClient_WorkflowID() {
	tc, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:7233", Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer tc.Close()
	eu, err := temporal.NewClient(temporal.ClientConfig{Client: tc, TaskQueue: "loom-eu", WorkflowIDPrefix: "loom-eu"})
	if err != nil {
		log.Fatal(err)
	}
	us, err := temporal.NewClient(temporal.ClientConfig{Client: tc, TaskQueue: "loom-us", WorkflowIDPrefix: "loom-us"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(eu.WorkflowID("support", "ada", "s1"))
	fmt.Println(us.WorkflowID("support", "ada", "s1"))
	fmt.Println(temporal.WorkflowID("support", "ada", "s1")) // the default prefix
	// Output:
	// loom-eu/support/ada/s1
	// loom-us/support/ada/s1
	// loom/support/ada/s1
}

// A server's client of Temporal listens for the events that workers of
// other processes send it as they run its turns, partial text included:
// on a free loopback port by default, or on an interface other machines
// reach, at an address it advertises.
func ExampleClient_FeedURL() {
	tc, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:7233", Logger: quiet})
	if err != nil {
		log.Fatal(err)
	}
	defer tc.Close()
	cl, err := temporal.NewClient(temporal.ClientConfig{Client: tc, FeedAddr: "127.0.0.1:0", FeedURL: "http://web-1.internal:7300"})
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	fmt.Println(cl.FeedURL())
	// Output:
	// http://web-1.internal:7300
}
