package telemetry_test

import (
	"context"
	"math"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/agent/workflowagent"
	"github.com/loomkit/loom/cost"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin/telemetry"
	"github.com/loomkit/loom/session"
)

// costApp is a sequence of an LLM agent, planner (model "fast"), and a
// graph workflow, support, whose agent node is the LLM agent writer (model
// "big"). Each agent answers once per turn, for two turns, with the usage
// given: the second answers read part of their prompt from a cache, and
// the writer's names the release that answered ("big-002").
func costApp(t *testing.T) agent.Agent {
	t.Helper()
	use := func(prompt, out, cached int32) *genai.GenerateContentResponseUsageMetadata {
		return &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: prompt, CandidatesTokenCount: out,
			CachedContentTokenCount: cached, TotalTokenCount: prompt + out}
	}
	planner, err := llmagent.New(llmagent.Config{Name: "planner", Model: scripted.NewSequence("fast",
		scripted.Turn{Text: "plan one", Usage: use(100, 10, 0)},
		scripted.Turn{Text: "plan two", Usage: use(120, 12, 100)})})
	if err != nil {
		t.Fatal(err)
	}
	writer, err := llmagent.New(llmagent.Config{Name: "writer", Model: scripted.NewSequence("big",
		scripted.Turn{Text: "draft one", Usage: use(1000, 200, 0)},
		scripted.Turn{Text: "draft two", Usage: use(1100, 300, 800), ModelVersion: "big-002"})})
	if err != nil {
		t.Fatal(err)
	}
	wf, err := graph.New(graph.Config{Name: "support", Nodes: []*graph.Node{graph.FromAgent(writer)}})
	if err != nil {
		t.Fatal(err)
	}
	root, err := workflowagent.NewSequential(workflowagent.Config{Name: "root", SubAgents: []agent.Agent{planner, wf}})
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestR14TokenAndCostMetrics runs two turns of an LLM agent and a graph
// workflow's agent node, and collects the metrics with the SDK's manual
// reader: the semantic conventions' token histogram and Loom's token and
// cost counters hold the exact sums, per app, agent, model and workflow
// node, the cost priced per model, each invocation's total and cost are
// recorded once, and the totals over the stored session agree with them.
// (CONFORMANCE R14)
func TestR14TokenAndCostMetrics(t *testing.T) {
	prices := cost.Prices{"fast": {Input: 1, Output: 4, CachedInput: 0.25}, "big": {Input: 3, Output: 15}}
	reader := sdkmetric.NewManualReader()
	f := newFixture(t, telemetry.Config{MaxPayloadBytes: -1, Prices: prices,
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))}, costApp(t))
	f.run(t, context.Background(), "s", "first")
	f.run(t, context.Background(), "s", "second")

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	type series struct{ agent, model, node, typ string }
	hist, ok := find(rm, telemetry.MetricTokenUsage).Data.(metricdata.Histogram[int64])
	if !ok {
		t.Fatal("no token usage histogram")
	}
	histSums := map[series]int64{}
	for _, p := range hist.DataPoints {
		if attrOf(p.Attributes, "loom.app_name") != "app" || attrOf(p.Attributes, "gen_ai.operation.name") != "generate_content" {
			t.Errorf("histogram point attributes %v", p.Attributes)
		}
		histSums[series{attrOf(p.Attributes, "gen_ai.agent.name"), attrOf(p.Attributes, "gen_ai.request.model"),
			attrOf(p.Attributes, "loom.workflow.node"), attrOf(p.Attributes, "gen_ai.token.type")}] += p.Sum
		if p.Count != 2 {
			t.Errorf("histogram point %v counts %d responses, want 2", p.Attributes, p.Count)
		}
	}
	wantHist := map[series]int64{
		{"planner", "fast", "", "input"}: 220, {"planner", "fast", "", "output"}: 22,
		{"writer", "big", "support/writer", "input"}: 2100, {"writer", "big", "support/writer", "output"}: 500,
	}
	if !equalMaps(histSums, wantHist) {
		t.Errorf("histogram sums %v, want %v", histSums, wantHist)
	}

	counter, ok := find(rm, telemetry.MetricTokens).Data.(metricdata.Sum[int64])
	if !ok || !counter.IsMonotonic {
		t.Fatalf("no monotonic token counter: %+v", find(rm, telemetry.MetricTokens).Data)
	}
	counts := map[series]int64{}
	for _, p := range counter.DataPoints {
		counts[series{attrOf(p.Attributes, "gen_ai.agent.name"), attrOf(p.Attributes, "gen_ai.request.model"),
			attrOf(p.Attributes, "loom.workflow.node"), attrOf(p.Attributes, "gen_ai.token.type")}] += p.Value
	}
	wantCounts := map[series]int64{
		{"planner", "fast", "", "input"}: 220, {"planner", "fast", "", "output"}: 22,
		{"planner", "fast", "", "cached"}: 100, {"planner", "fast", "", "total"}: 242,
		{"writer", "big", "support/writer", "input"}: 2100, {"writer", "big", "support/writer", "output"}: 500,
		{"writer", "big", "support/writer", "cached"}: 800, {"writer", "big", "support/writer", "total"}: 2600,
	}
	if !equalMaps(counts, wantCounts) {
		t.Errorf("token counts %v, want %v", counts, wantCounts)
	}

	costs, ok := find(rm, telemetry.MetricCost).Data.(metricdata.Sum[float64])
	if !ok {
		t.Fatal("no cost counter")
	}
	gotCost := map[string]float64{}
	for _, p := range costs.DataPoints {
		gotCost[attrOf(p.Attributes, "gen_ai.agent.name")+"/"+attrOf(p.Attributes, "loom.workflow.node")] += p.Value
	}
	// planner: (100·1 + 10·4) + (20·1 + 100·0.25 + 12·4); writer: (1000·3 + 200·15) + (1100·3 + 300·15), the cached
	// input at the input price.
	wantPlanner, wantWriter := (140+20+25+48)/1e6, (6000+3300+4500)/1e6
	if len(gotCost) != 2 || math.Abs(gotCost["planner/"]-wantPlanner) > 1e-12 || math.Abs(gotCost["writer/support/writer"]-wantWriter) > 1e-12 {
		t.Errorf("costs %v, want planner %v, writer %v", gotCost, wantPlanner, wantWriter)
	}

	// Per invocation: turn one 110 + 1200 tokens, turn two 132 + 1400.
	invTokens, ok := find(rm, telemetry.MetricInvocationTokens).Data.(metricdata.Histogram[int64])
	if !ok || len(invTokens.DataPoints) != 1 || invTokens.DataPoints[0].Count != 2 || invTokens.DataPoints[0].Sum != 2842 ||
		attrOf(invTokens.DataPoints[0].Attributes, "gen_ai.agent.name") != "root" || attrOf(invTokens.DataPoints[0].Attributes, "loom.app_name") != "app" {
		t.Errorf("invocation tokens %+v", find(rm, telemetry.MetricInvocationTokens).Data)
	}
	invCost, ok := find(rm, telemetry.MetricInvocationCost).Data.(metricdata.Histogram[float64])
	if !ok || len(invCost.DataPoints) != 1 || invCost.DataPoints[0].Count != 2 || math.Abs(invCost.DataPoints[0].Sum-(wantPlanner+wantWriter)) > 1e-12 {
		t.Errorf("invocation costs %+v", find(rm, telemetry.MetricInvocationCost).Data)
	}

	// The stored session sums to the same tokens; it prices responses by
	// their model version only, which the writer's second names.
	sess, err := f.runner.Sessions().Get(context.Background(), session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	total := cost.Session(sess.Events(), prices).Total
	if total.Prompt != 2320 || total.Candidates != 522 || total.Cached != 900 || total.Total != 2842 || total.Responses != 4 ||
		total.Unpriced != 3 || math.Abs(total.Cost-7800/1e6) > 1e-12 {
		t.Errorf("session totals %+v", total)
	}
}

func equalMaps[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
