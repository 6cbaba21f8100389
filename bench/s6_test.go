package bench_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// s6Workflow builds the S6 graph, 10 nodes: start → classify (LLM) →
// fan-out to a, b, c (LLM), d → join → summarize (LLM) → format → final.
// Function nodes transform strings; LLM nodes answer with one scripted
// text and no tool call.
func s6Workflow() (agent.Agent, error) {
	text := func(name string) func(context.Context, *model.Request) (scripted.Turn, error) {
		return func(context.Context, *model.Request) (scripted.Turn, error) {
			return scripted.Text(name + " says ok"), nil
		}
	}
	llm := func(name string) (*graph.Node, error) {
		a, err := llmagent.New(llmagent.Config{Name: name, Model: scripted.New(name+"-model", text(name)), IncludeContents: llmagent.IncludeNone})
		if err != nil {
			return nil, err
		}
		return graph.FromAgent(a), nil
	}
	fn := func(name string) *graph.Node {
		return graph.Func(name, func(_ context.Context, _ *graph.Context, in any) (string, error) {
			return name + ":" + fmt.Sprint(in)[:min(8, len(fmt.Sprint(in)))], nil
		})
	}
	classify, err := llm("classify")
	if err != nil {
		return nil, err
	}
	c, err := llm("c")
	if err != nil {
		return nil, err
	}
	summarize, err := llm("summarize")
	if err != nil {
		return nil, err
	}
	return graph.New(graph.Config{
		Name: "s6",
		Nodes: []*graph.Node{fn("start"), classify, fn("a"), fn("b"), c, fn("d"), graph.Join("join"),
			summarize, fn("format"), fn("final")},
		Edges: []graph.Edge{
			{From: "start", To: "classify"},
			{From: "classify", To: "a"}, {From: "classify", To: "b"}, {From: "classify", To: "c"}, {From: "classify", To: "d"},
			{From: "a", To: "join"}, {From: "b", To: "join"}, {From: "c", To: "join"}, {From: "d", To: "join"},
			{From: "join", To: "summarize"}, {From: "summarize", To: "format"}, {From: "format", To: "final"},
		},
	})
}

// s6OneNode is the fixed cost S6's per-node figure is measured against: a
// workflow of one function node.
func s6OneNode() (agent.Agent, error) {
	return graph.New(graph.Config{Name: "s6one", Nodes: []*graph.Node{
		graph.Func("only", func(_ context.Context, _ *graph.Context, in string) (string, error) {
			return strings.ToUpper(in), nil
		}),
	}})
}

func benchWorkflow(b *testing.B, build func() (agent.Agent, error), nodes int) {
	root, err := build()
	if err != nil {
		b.Fatal(err)
	}
	svc := memsession.NewService()
	r := newRunner(b, root, svc)
	const sessions = 100
	for i := range sessions {
		if _, err := svc.Create(context.Background(), session.Key{AppName: "bench", UserID: "user", SessionID: fmt.Sprint("s", i)}, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		done := false
		for ev, err := range r.Run(context.Background(), "user", fmt.Sprint("s", i%sessions), s1Message, nil) {
			if err != nil {
				b.Fatal(err)
			}
			if ev.ErrorCode != "" {
				b.Fatal(ev.ErrorMessage)
			}
			done = done || (ev.Author == root.Name() && ev.Actions.EndOfAgent)
		}
		if !done {
			b.Fatal("the workflow did not finish")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nodes), "ns/node")
}

// BenchmarkS6Workflow is S6: one invocation of a 10-node graph workflow
// (7 function and join nodes, 3 scripted LLM nodes, one fan-out of 4 and its
// join), round-robin over 100 in-memory sessions; run it as
// -benchtime=2000x. It reports ns and allocs per invocation and ns/node.
func BenchmarkS6Workflow(b *testing.B) { benchWorkflow(b, s6Workflow, 10) }

// BenchmarkS6WorkflowOneNode is a one-function-node workflow: the per-node
// overhead of S6 is (S6 - this) / 9.
func BenchmarkS6WorkflowOneNode(b *testing.B) { benchWorkflow(b, s6OneNode, 1) }
