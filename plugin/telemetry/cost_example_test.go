package telemetry_test

import (
	"context"
	"fmt"
	"log"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/cost"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/plugin/telemetry"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// Prices from a file price the model responses of a run: the
// loom.model.cost metric counts the cost as the run goes, and the stored
// session sums to the same tokens and cost afterwards.
func Example_cost() {
	ctx := context.Background()
	root, err := llmagent.New(llmagent.Config{Name: "assistant", Model: scripted.NewSequence("gemini-2.5-flash",
		scripted.Turn{Text: "Hello!", ModelVersion: "gemini-2.5-flash", Usage: &genai.GenerateContentResponseUsageMetadata{
			PromptTokenCount: 12000, CachedContentTokenCount: 10000, CandidatesTokenCount: 800, TotalTokenCount: 12800}})})
	if err != nil {
		log.Fatal(err)
	}
	sessions := memsession.NewService()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))

	prices, err := cost.Load("testdata/prices.yaml") // or cost.Parse(data)
	if err != nil {
		log.Fatal(err)
	}
	tel, _ := telemetry.New(telemetry.Config{MeterProvider: mp, Prices: prices})
	r, _ := runner.New(runner.Config{AppName: "app", Agent: root, Sessions: sessions,
		Plugins: []*plugin.Plugin{tel.Plugin()}, AutoCreateSession: true})
	if _, err := r.RunSync(ctx, "ann", "s1", genai.NewContentFromText("hi", genai.RoleUser), nil); err != nil {
		log.Fatal(err)
	}
	sess, _ := sessions.Get(ctx, session.Key{AppName: "app", UserID: "ann", SessionID: "s1"}, nil)
	usage := cost.Session(sess.Events(), prices) // what GET /apps/app/users/ann/sessions/s1/usage answers
	fmt.Printf("session: %d tokens, $%.4f\n", usage.Total.Total, usage.Total.Cost)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[float64]); ok && m.Name == telemetry.MetricCost {
			fmt.Printf("%s: $%.4f\n", m.Name, sum.DataPoints[0].Value)
		}
	}
	// Output:
	// session: 12800 tokens, $0.0029
	// loom.model.cost: $0.0029
}
