package bench_test

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/plugin/telemetry"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// telemetryRounds is the number of rounds BenchmarkS1TelemetryCost takes
// the median of.
const telemetryRounds = 5

// BenchmarkS1TelemetryCost measures what the telemetry plugin with spans on
// and payloads off (MaxPayloadBytes -1) adds to S1, as a share of S1
// without it (target: 25% or less), and what sampling and batching change:
//
//   - NoPayloads: every span recorded in the plugin's in-memory store (as
//     "loom web" and "loom api" record them);
//   - Sampled10: a tracer provider sampling 10% of the traces (parent
//     based), into the same store;
//   - Batched: every span handed to OpenTelemetry's batch span processor,
//     exporting to an exporter that drops them.
//
// Each round runs 2,000 S1 invocations (100 sessions) per configuration,
// in alternating blocks of 20, each block starting with the next
// configuration, so that all run at the same moments of a shared machine;
// each *-% metric is the median over 5 rounds of the configuration's time
// over plain S1's, less 1, in percent.
//
//	go test ./bench -run '^$' -bench S1TelemetryCost -benchtime 1x
func BenchmarkS1TelemetryCost(b *testing.B) {
	type variant struct {
		name string
		tel  func() (*telemetry.Telemetry, func())
	}
	variants := []variant{
		{"NoPayloads", func() (*telemetry.Telemetry, func()) {
			return newTelemetry(b, telemetry.Config{MaxPayloadBytes: -1})
		}},
		{"Sampled10", func() (*telemetry.Telemetry, func()) {
			exp := telemetry.NewExporter(0)
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1))), sdktrace.WithSpanProcessor(exp))
			tel, stop := newTelemetry(b, telemetry.Config{MaxPayloadBytes: -1, TracerProvider: tp, Exporter: exp})
			return tel, func() { stop(); tp.Shutdown(context.Background()) }
		}},
		{"Batched", func() (*telemetry.Telemetry, func()) {
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
			tel, stop := newTelemetry(b, telemetry.Config{MaxPayloadBytes: -1, TracerProvider: tp})
			return tel, func() { stop(); tp.Shutdown(context.Background()) }
		}},
	}
	const invocations, block = 2000, 20
	for b.Loop() {
		ratios := make([][]float64, len(variants))
		for range telemetryRounds {
			type setup struct {
				r    *runner.Runner
				svc  *session.Service
				ids  []string
				stop func()
			}
			setups := make([]setup, len(variants)+1)
			for i := range setups {
				var plugins []*plugin.Plugin
				stop := func() {}
				if i > 0 {
					var tel *telemetry.Telemetry
					tel, stop = variants[i-1].tel()
					plugins = append(plugins, tel.Plugin())
				}
				svc := memsession.NewService()
				r, err := runner.New(runner.Config{AppName: "bench", Agent: newS1Agent(b), Sessions: svc, Plugins: plugins})
				if err != nil {
					b.Fatal(err)
				}
				setups[i] = setup{r: r, svc: svc, ids: createSessions(b, svc, 100), stop: stop}
			}
			runtime.GC()
			times := make([]time.Duration, len(setups))
			for start := 0; start < invocations; start += block {
				// Each block starts with the next configuration, so that
				// none always runs right after another's garbage.
				for j := range setups {
					k := (start/block + j) % len(setups)
					s := setups[k]
					t0 := time.Now()
					for i := start; i < start+block; i++ {
						if n := invoke(b, s.r, s.ids[i%len(s.ids)]); n != 3 {
							b.Fatalf("invocation yielded %d events, want 3", n)
						}
					}
					times[k] += time.Since(t0)
				}
			}
			for k, s := range setups {
				checkS1Sessions(b, s.svc, s.ids, invocations)
				s.stop()
				if k > 0 {
					ratios[k-1] = append(ratios[k-1], float64(times[k])/float64(times[0]))
				}
			}
		}
		for k, v := range variants {
			slices.Sort(ratios[k])
			b.ReportMetric(100*(ratios[k][len(ratios[k])/2]-1), v.name+"-%")
			b.Logf("%s: time over plain S1 per round (sorted) %.2f", v.name, ratios[k])
		}
	}
}

// newTelemetry returns a telemetry plugin of cfg and its shutdown.
func newTelemetry(b *testing.B, cfg telemetry.Config) (*telemetry.Telemetry, func()) {
	tel, err := telemetry.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return tel, func() { tel.Shutdown(context.Background()) }
}
