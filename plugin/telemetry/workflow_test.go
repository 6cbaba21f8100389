package telemetry_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/plugin/telemetry"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// flakyWorkflow routes from classify to a lookup node that fails its first
// attempt, then to an LLM agent node.
func flakyWorkflow(t *testing.T) *graph.Workflow {
	t.Helper()
	var tries atomic.Int32
	classify := graph.Func("classify", func(_ context.Context, c *graph.Context, in string) (string, error) {
		c.SetRoute("refund")
		return in, nil
	})
	lookup := graph.Func("lookup", func(_ context.Context, _ *graph.Context, in string) (string, error) {
		if tries.Add(1) == 1 {
			return "", errors.New("lookup service unavailable")
		}
		return "order 77", nil
	}).With(graph.NodeOptions{Retry: graph.Retry{MaxAttempts: 3}})
	writer, err := llmagent.New(llmagent.Config{Name: "writer", Model: scripted.NewSequence("m", scripted.Text("refund approved"))})
	if err != nil {
		t.Fatal(err)
	}
	w, err := graph.New(graph.Config{Name: "support",
		Nodes: []*graph.Node{classify, lookup, graph.FromAgent(writer)},
		Edges: []graph.Edge{{From: "classify", To: "lookup", Route: "refund"}, {From: "lookup", To: "writer"}}})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestNodeSpans checks that every attempt of a workflow node is a span
// under the workflow's agent span, with its path, kind and attempt number,
// the failed attempt marked with its error, the route a node chose
// recorded, and an agent node's agent span under its node span.
func TestNodeSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	exp := telemetry.NewExporter(0)
	tp.RegisterSpanProcessor(exp)
	f := newFixture(t, telemetry.Config{TracerProvider: tp, Exporter: exp}, flakyWorkflow(t))
	evs := f.run(t, context.Background(), "s", "I want a refund")
	if got := evs[len(evs)-1]; got.ErrorCode != "" {
		t.Fatalf("workflow failed: %s", got.ErrorMessage)
	}
	spans, err := f.tel.SessionSpans(context.Background(), own("s"))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]telemetry.Span{}
	for _, s := range spans {
		ids[s.SpanID] = s
	}
	parent := func(s telemetry.Span) string { return ids[s.ParentSpanID].Name }
	var lookups []telemetry.Span
	seen := map[string]bool{}
	for _, s := range spans {
		seen[s.Name] = true
		switch s.Name {
		case "execute_node classify":
			if s.Attributes["loom.node.route"] != "refund" || s.Attributes["loom.node.path"] != "support/classify@1" ||
				s.Attributes["loom.node.kind"] != "function" {
				t.Errorf("classify attributes %v", s.Attributes)
			}
		case "execute_node lookup":
			lookups = append(lookups, s)
		case "invoke_agent writer":
			if p := parent(s); p != "execute_node writer" {
				t.Errorf("writer's agent span under %q, want its node span", p)
			}
		}
		if strings.HasPrefix(s.Name, "execute_node ") && parent(s) != "invoke_agent support" {
			t.Errorf("%s under %q, want the workflow's agent span", s.Name, parent(s))
		}
	}
	for _, name := range []string{"invoke_agent support", "execute_node classify", "execute_node writer", "invoke_agent writer", "call_llm"} {
		if !seen[name] {
			t.Errorf("no %s span in %v", name, names(spans))
		}
	}
	if len(lookups) != 2 {
		t.Fatalf("%d lookup spans, want one per attempt (2)", len(lookups))
	}
	for i, s := range lookups {
		if got, _ := s.Attributes["loom.node.attempt"].(int64); got != int64(i+1) {
			t.Errorf("lookup span %d: attempt %v", i, s.Attributes["loom.node.attempt"])
		}
	}
	if lookups[0].Attributes["error.type"] == nil || lookups[1].Attributes["error.type"] != nil {
		t.Errorf("error.type on the attempts: %v, %v", lookups[0].Attributes["error.type"], lookups[1].Attributes["error.type"])
	}
	var failed int
	for _, s := range rec.Ended() {
		if s.Name() != "execute_node lookup" || s.Status().Code != codes.Error {
			continue
		}
		failed++
		if !strings.Contains(s.Status().Description, "unavailable") || !hasExceptionEvent(s) {
			t.Errorf("failed attempt: status %v, exception event %v", s.Status(), hasExceptionEvent(s))
		}
	}
	if failed != 1 {
		t.Errorf("%d failed lookup attempts, want 1", failed)
	}
	assertNoOpenSpans(t, rec)
}

// TestConcurrentNodeSpans checks that nodes running at once on branches of
// their own each get a span under the workflow, and an agent node's agent
// span stays under its own node.
func TestConcurrentNodeSpans(t *testing.T) {
	mk := func(name string) *llmagent.Agent {
		a, err := llmagent.New(llmagent.Config{Name: name, Model: scripted.NewSequence(name+"m", scripted.Text(name+" done"))})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	start := graph.Func("start", func(_ context.Context, _ *graph.Context, in string) (string, error) { return in, nil })
	w, err := graph.New(graph.Config{Name: "fan",
		Nodes: []*graph.Node{start, graph.FromAgent(mk("a")), graph.FromAgent(mk("b")), graph.Join("both")},
		Edges: []graph.Edge{{From: "start", To: "a"}, {From: "start", To: "b"}, {From: "a", To: "both"}, {From: "b", To: "both"}}})
	if err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	exp := telemetry.NewExporter(0)
	tp.RegisterSpanProcessor(exp)
	f := newFixture(t, telemetry.Config{TracerProvider: tp, Exporter: exp}, w)
	f.run(t, context.Background(), "s", "go")
	spans, _ := f.tel.SessionSpans(context.Background(), own("s"))
	ids := map[string]telemetry.Span{}
	for _, s := range spans {
		ids[s.SpanID] = s
	}
	want := map[string]string{
		"execute_node start": "invoke_agent fan", "execute_node a": "invoke_agent fan", "execute_node b": "invoke_agent fan",
		"execute_node both": "invoke_agent fan", "invoke_agent a": "execute_node a", "invoke_agent b": "execute_node b",
	}
	got := map[string]string{}
	for _, s := range spans {
		if _, ok := want[s.Name]; ok {
			got[s.Name] = ids[s.ParentSpanID].Name
		}
	}
	for name, p := range want {
		if got[name] != p {
			t.Errorf("%s under %q, want %q (spans %v)", name, got[name], p, names(spans))
		}
	}
	assertNoOpenSpans(t, rec)
}

// TestResumedInvocationAgentSpan checks that an invocation resumed by an
// answer (a confirmation) has the span of the agent that continues, under
// its invocation span, with the confirmed tool call under it.
func TestResumedInvocationAgentSpan(t *testing.T) {
	pay, err := functiontool.New(functiontool.Config{Name: "pay", RequireConfirmation: true},
		func(context.Context, tool.Context, struct{}) (map[string]any, error) {
			return map[string]any{"paid": true}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	a, err := llmagent.New(llmagent.Config{Name: "cashier", Model: scripted.NewSequence("m", scripted.Call("pay", nil), scripted.Text("paid")),
		Tools: []tool.Tool{pay}})
	if err != nil {
		t.Fatal(err)
	}
	tel, err := telemetry.New(telemetry.Config{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "app", Agent: a, Sessions: newSessions(), Resumable: true,
		Plugins: []*plugin.Plugin{tel.Plugin()}, AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	evs, err := r.RunSync(ctx, "u", "s", genai.NewContentFromText("pay", genai.RoleUser), nil)
	if err != nil {
		t.Fatal(err)
	}
	var reqID string
	for _, ev := range evs {
		for _, fc := range ev.FunctionCalls() {
			if fc.Name == event.FunctionRequestConfirmation {
				reqID = fc.ID
			}
		}
	}
	if reqID == "" {
		t.Fatal("no confirmation request")
	}
	yes := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
		ID: reqID, Name: event.FunctionRequestConfirmation, Response: map[string]any{"confirmed": true}}}}}
	evs, err = r.RunSync(ctx, "u", "s", yes, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := evs[len(evs)-1].Text(); got != "paid" {
		t.Fatalf("resumed answer %q", got)
	}
	spans, _ := tel.SessionSpans(ctx, own("s"))
	ids := map[string]telemetry.Span{}
	for _, s := range spans {
		ids[s.SpanID] = s
	}
	// The invocation has two invocation spans: the run that paused and
	// the resumed one; each has the agent's span under it.
	agentsUnder := map[string]int{}
	var resumed bool
	for _, s := range spans {
		if s.Name == "invoke_agent cashier" && ids[s.ParentSpanID].Name == "invocation" {
			agentsUnder[s.ParentSpanID]++
			if s.Attributes["loom.resumed"] == true {
				resumed = true
			}
		}
		if s.Name == "execute_tool pay" && ids[s.ParentSpanID].Name != "invoke_agent cashier" {
			t.Errorf("tool span under %q", ids[s.ParentSpanID].Name)
		}
	}
	var invocations int
	for _, s := range spans {
		if s.Name == "invocation" {
			invocations++
			if agentsUnder[s.SpanID] != 1 {
				t.Errorf("invocation span %s has %d agent spans, want 1 (spans %v)", s.SpanID, agentsUnder[s.SpanID], names(spans))
			}
		}
	}
	if invocations != 2 || !resumed {
		t.Errorf("%d invocation spans, resumed agent span marked: %v", invocations, resumed)
	}
}
