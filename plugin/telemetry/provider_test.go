package telemetry_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/loomkit/loom/plugin/telemetry"
)

// TestOwnProviderSpansMatchGivenProvider: the spans a Telemetry records
// with the provider it creates (whose model and tool spans get their
// attributes as they end) have the names, parents and attributes of those
// it records with a provider it is given (whose spans get them as they
// happen), with payloads and without. Values that name what differs
// between two runs (ids, and payloads holding them) are compared by
// presence only.
func TestOwnProviderSpansMatchGivenProvider(t *testing.T) {
	ids := map[string]bool{
		"gcp.vertex.agent.invocation_id": true, "gcp.vertex.agent.event_id": true, "gen_ai.tool.call.id": true,
		"gcp.vertex.agent.llm_request": true, "gcp.vertex.agent.llm_response": true,
	}
	// shape describes spans by name, parent name and attributes.
	shape := func(spans []telemetry.Span) []string {
		names := map[string]string{}
		for _, s := range spans {
			names[s.SpanID] = s.Name
		}
		var out []string
		for _, s := range spans {
			attrs := map[string]any{}
			for k, v := range s.Attributes {
				if ids[k] {
					v = fmt.Sprintf("present:%T", v)
				}
				attrs[k] = v
			}
			out = append(out, fmt.Sprintf("%s < %s %v", s.Name, names[s.ParentSpanID], attrs))
		}
		slices.Sort(out)
		return out
	}
	record := func(t *testing.T, cfg telemetry.Config) []string {
		f := newFixture(t, cfg, s1Agent(t, s1Model(1, 2)))
		f.run(t, context.Background(), "s", "1+2")
		spans, err := f.tel.SessionSpans(context.Background(), telemetry.Owner{AppName: "app", UserID: "u", SessionID: "s"})
		if err != nil {
			t.Fatal(err)
		}
		if len(spans) != 5 {
			t.Fatalf("%d spans, want 5 (invocation, agent, two model calls, a tool call)", len(spans))
		}
		return shape(spans)
	}
	for _, payload := range []int{-1, 0} {
		t.Run(fmt.Sprint("MaxPayloadBytes=", payload), func(t *testing.T) {
			own := record(t, telemetry.Config{MaxPayloadBytes: payload})
			exp := telemetry.NewExporter(0)
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp))
			defer tp.Shutdown(context.Background())
			given := record(t, telemetry.Config{MaxPayloadBytes: payload, TracerProvider: tp, Exporter: exp})
			if !reflect.DeepEqual(own, given) {
				t.Errorf("spans of the own provider:\n%v\nof a given provider:\n%v", own, given)
			}
		})
	}
}
