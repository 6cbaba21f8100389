package graph_test

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// A workflow routes a message, fans out to two checks that run
// concurrently, and joins their results.
func ExampleNew() {
	classify := graph.Func("classify", func(_ context.Context, nc *graph.Context, in string) (string, error) {
		if strings.Contains(in, "?") {
			nc.SetRoute("question")
		} else {
			nc.SetRoute("statement")
		}
		return in, nil
	})
	answer := graph.Func("answer", func(_ context.Context, _ *graph.Context, in string) (string, error) {
		return "a question: " + in, nil
	})
	length := graph.Func("length", func(_ context.Context, _ *graph.Context, in string) (int, error) {
		return len(in), nil
	})
	words := graph.Func("words", func(_ context.Context, _ *graph.Context, in string) (int, error) {
		return len(strings.Fields(in)), nil
	})
	report := graph.Func("report", func(_ context.Context, _ *graph.Context, in map[string]int) (string, error) {
		return fmt.Sprintf("%d characters, %d words", in["length"], in["words"]), nil
	})
	wf, err := graph.New(graph.Config{
		Name:  "triage",
		Nodes: []*graph.Node{classify, answer, length, words, graph.Join("stats"), report},
		Edges: []graph.Edge{
			{From: "classify", To: "answer", Route: "question"},
			{From: "classify", To: "length", Route: "statement"},
			{From: "classify", To: "words", Route: "statement"},
			{From: "length", To: "stats"},
			{From: "words", To: "stats"},
			{From: "stats", To: "report"},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx := context.Background()
	sessions := memsession.NewService()
	r, _ := runner.New(runner.Config{AppName: "docs", Agent: wf, Sessions: sessions})
	for i, msg := range []string{"is it raining?", "the sun is out"} {
		sid := fmt.Sprint("s", i)
		sessions.Create(ctx, session.Key{AppName: "docs", UserID: "ada", SessionID: sid}, nil)
		for ev, err := range r.Run(ctx, "ada", sid, genai.NewContentFromText(msg, genai.RoleUser), nil) {
			if err != nil {
				fmt.Println(err)
				return
			}
			if ev.Author == "triage" && ev.Actions.EndOfAgent {
				fmt.Println(ev.Output)
			}
		}
	}
	// Output:
	// a question: is it raining?
	// 14 characters, 4 words
}

// A node asks the user for input; the invocation pauses until the client
// answers the adk_request_input call, then the node runs again with the
// answer.
func ExampleContext_RequestInput() {
	approve := graph.Func("approve", func(_ context.Context, nc *graph.Context, in string) (string, error) {
		resp, err := nc.RequestInput(graph.InputRequest{Message: "Send " + in + "?"})
		if err != nil {
			return "", err // graph.ErrWaitingForInput: the workflow pauses
		}
		if resp["approved"] == true {
			return "sent " + in, nil
		}
		return "kept " + in, nil
	})
	wf, _ := graph.New(graph.Config{Name: "mailer", Nodes: []*graph.Node{approve}})

	ctx := context.Background()
	sessions := memsession.NewService()
	sessions.Create(ctx, session.Key{AppName: "docs", UserID: "ada", SessionID: "s1"}, nil)
	r, _ := runner.New(runner.Config{AppName: "docs", Agent: wf, Sessions: sessions})

	var callID string
	for ev := range r.Run(ctx, "ada", "s1", genai.NewContentFromText("the report", genai.RoleUser), nil) {
		for _, fc := range ev.FunctionCalls() {
			if fc.Name == graph.FunctionRequestInput {
				callID = fc.ID
				fmt.Println("asked:", fc.Args["message"])
			}
		}
	}
	answer := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
		graph.InputResponse(callID, map[string]any{"approved": true}),
	}}
	for ev := range r.Run(ctx, "ada", "s1", answer, nil) {
		if ev.Author == "mailer" && ev.Actions.EndOfAgent {
			fmt.Println(ev.Output)
		}
	}
	// Output:
	// asked: Send the report?
	// sent the report
}

// A node runs another node chosen at run time and awaits its output.
func ExampleContext_RunNode() {
	square := graph.Func("square", func(_ context.Context, _ *graph.Context, n int) (int, error) { return n * n, nil })
	pick := graph.Func("pick", func(ctx context.Context, nc *graph.Context, in string) (any, error) {
		return nc.RunNode(ctx, square, len(in))
	})
	wf, _ := graph.New(graph.Config{Name: "dynamic", Nodes: []*graph.Node{pick}})

	ctx := context.Background()
	sessions := memsession.NewService()
	sessions.Create(ctx, session.Key{AppName: "docs", UserID: "ada", SessionID: "s1"}, nil)
	r, _ := runner.New(runner.Config{AppName: "docs", Agent: wf, Sessions: sessions})
	for ev := range r.Run(ctx, "ada", "s1", genai.NewContentFromText("abc", genai.RoleUser), nil) {
		if ev.NodeInfo != nil && len(ev.NodeInfo.OutputFor) > 0 {
			fmt.Println(ev.NodeInfo.Path, ev.Output)
		}
	}
	// Output:
	// dynamic/pick@1/square@1 9
	// dynamic/pick@1 9
	// dynamic 9
}

// A parallel worker runs one node over every item of a list, two at a time,
// and a default route catches what no other route names.
func ExampleParallelWorker() {
	split := graph.Func("split", func(_ context.Context, nc *graph.Context, in string) ([]string, error) {
		if in == "" {
			nc.SetRoute("empty")
		}
		return strings.Fields(in), nil
	})
	shout := graph.Func("shout", func(_ context.Context, _ *graph.Context, word string) (string, error) {
		return strings.ToUpper(word) + "!", nil
	})
	nothing := graph.Func("nothing", func(_ context.Context, _ *graph.Context, _ any) (string, error) {
		return "nothing to shout", nil
	})
	wf, err := graph.New(graph.Config{
		Name:  "shouter",
		Nodes: []*graph.Node{split, graph.ParallelWorker(shout, 2), nothing},
		Edges: []graph.Edge{
			{From: "split", To: "nothing", Route: "empty"},
			{From: "split", To: "shout", Route: graph.DefaultRoute},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	sessions := memsession.NewService()
	r, _ := runner.New(runner.Config{AppName: "docs", Agent: wf, Sessions: sessions})
	key := session.Key{AppName: "docs", UserID: "u", SessionID: "s"}
	if _, err := sessions.Create(ctx, key, nil); err != nil {
		fmt.Println(err)
		return
	}
	for ev, err := range r.Run(ctx, "u", "s", genai.NewContentFromText("one two three", genai.RoleUser), nil) {
		if err != nil {
			fmt.Println(err)
			return
		}
		if ev.Author == "shouter" && ev.Actions.EndOfAgent && ev.Output != nil {
			fmt.Println(ev.Output)
		}
	}
	// Output: [ONE! TWO! THREE!]
}

// A plugin's node callbacks see every attempt of every node: here a lookup
// that fails once is tried again, and the route of a node is reported.
func ExampleRetry_nodeCallbacks() {
	tries := 0
	classify := graph.Func("classify", func(_ context.Context, nc *graph.Context, in string) (string, error) {
		nc.SetRoute("refund")
		return in, nil
	})
	lookup := graph.Func("lookup", func(_ context.Context, _ *graph.Context, in string) (string, error) {
		if tries++; tries == 1 {
			return "", errors.New("service unavailable")
		}
		return "order 77", nil
	}).With(graph.NodeOptions{Retry: graph.Retry{MaxAttempts: 3}})
	wf, err := graph.New(graph.Config{Name: "support", Nodes: []*graph.Node{classify, lookup},
		Edges: []graph.Edge{{From: "classify", To: "lookup", Route: "refund"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	watch := &plugin.Plugin{Name: "watch", Callbacks: agent.Callbacks{
		AfterNode: []agent.AfterNodeCallback{func(_ context.Context, _ *agent.Invocation, a agent.NodeAttempt, o agent.NodeOutcome) {
			fmt.Printf("%s attempt %d/%d: route %q, error %v\n", a.Path, a.Attempt, a.MaxAttempts, o.Route, o.Err)
		}},
	}}
	r, _ := runner.New(runner.Config{AppName: "docs", Agent: wf, Sessions: memsession.NewService(),
		Plugins: []*plugin.Plugin{watch}, AutoCreateSession: true})
	if _, err := r.RunSync(context.Background(), "ann", "s", genai.NewContentFromText("refund", genai.RoleUser), nil); err != nil {
		fmt.Println(err)
	}
	// Output:
	// support/classify@1 attempt 1/1: route "refund", error <nil>
	// support/lookup@1 attempt 1/3: route "", error service unavailable
	// support/lookup@1 attempt 2/3: route "", error <nil>
}
