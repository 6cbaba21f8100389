package telemetry_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/loomkit/loom/plugin/telemetry"
)

// TestExporterBoundedInBytes runs invocations whose model calls record
// large payloads into an exporter bounded in bytes: it never holds more
// than its bound, drops the oldest spans first and still answers for the
// newest.
func TestExporterBoundedInBytes(t *testing.T) {
	const max = 96 << 10
	f := newFixture(t, telemetry.Config{MaxSpanBytes: max}, s1Agent(t, s1Model(1, 2)))
	exp := f.tel.Exporter()
	big := strings.Repeat("z", 64<<10) // recorded truncated to the payload bound
	var last string
	for i := range 20 {
		evs := f.run(t, context.Background(), fmt.Sprint("s", i), big)
		last = evs[2].ID
		if exp.Bytes() > max {
			t.Fatalf("after %d runs the exporter holds %d bytes, over its bound of %d", i+1, exp.Bytes(), max)
		}
	}
	if exp.Exported() != 100 || exp.Len() >= 50 || exp.Len() < 5 {
		t.Fatalf("exported %d, held %d spans; want 100 exported and fewer held", exp.Exported(), exp.Len())
	}
	if spans, _ := f.tel.SessionSpans(context.Background(), own("s19")); len(spans) != 5 {
		t.Errorf("newest session spans %v", names(spans))
	}
	if spans, _ := f.tel.SessionSpans(context.Background(), own("s0")); len(spans) != 0 {
		t.Errorf("oldest session still has spans %v", names(spans))
	}
	attrs, _ := f.tel.EventAttributes(context.Background(), own(""), last)
	if req, _ := attrs["gcp.vertex.agent.llm_request"].(string); len(req) > telemetry.DefaultMaxPayloadBytes || !strings.HasSuffix(req, "...(truncated)") {
		t.Errorf("newest model request recorded as %d bytes, want truncated to %d with a mark", len(req), telemetry.DefaultMaxPayloadBytes)
	}
}

// TestExporterTruncatesAttributes exports spans of another instrumentation
// with long string attributes: each is cut to the bound, with a mark, and
// the estimate of the held memory follows the heap they take.
func TestExporterTruncatesAttributes(t *testing.T) {
	exp := telemetry.NewExporterWith(telemetry.ExporterOptions{MaxAttributeBytes: 1000, MaxBytes: -1})
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())
	tr := tp.Tracer("test")
	long := strings.Repeat("é", 2000) // 4000 bytes; cut on a rune boundary
	before := heapAlloc()
	for i := range 2000 {
		_, s := tr.Start(context.Background(), "op", trace.WithAttributes(
			attribute.String("gcp.vertex.agent.session_id", fmt.Sprint("s", i)),
			attribute.String("loom.app_name", "app"), attribute.String("loom.user_id", "u"),
			attribute.String("long", long),
			attribute.StringSlice("list", []string{long, "short"}),
			attribute.Int("n", i)))
		s.End()
	}
	held := int64(heapAlloc()) - int64(before)
	spans, _ := exp.SessionSpans(context.Background(), own("s7"))
	if len(spans) != 1 {
		t.Fatalf("session spans %v", spans)
	}
	a := spans[0].Attributes
	s, _ := a["long"].(string)
	list, _ := a["list"].([]string)
	if len(s) > 1000 || len(s) < 990 || !strings.HasSuffix(s, "...(truncated)") || !strings.HasPrefix(s, "éé") {
		t.Errorf("long attribute kept as %d bytes %.20q...", len(s), s)
	}
	if len(list) != 2 || len(list[0]) > 1000 || list[1] != "short" {
		t.Errorf("list attribute kept as %d elements", len(list))
	}
	if a["n"] != int64(7) {
		t.Errorf("n = %v", a["n"])
	}
	// The estimate counts what the held spans take, give or take the
	// allocator's rounding.
	ratio := float64(exp.Bytes()) / float64(held)
	t.Logf("estimate %d B, heap %d B, ratio %.2f", exp.Bytes(), held, ratio)
	if ratio < 0.6 || ratio > 1.5 {
		t.Errorf("estimate %d B for %d B of heap: ratio %.2f", exp.Bytes(), held, ratio)
	}
	runtime.KeepAlive(exp)
}

func heapAlloc() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// recordOnly samples every span except those named "unsampled", which it
// records without sampling.
type recordOnly struct{}

func (recordOnly) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if p.Name == "unsampled" {
		return sdktrace.SamplingResult{Decision: sdktrace.RecordOnly}
	}
	return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample}
}

func (recordOnly) Description() string { return "recordOnly" }

// TestExporterAsSpanProcessor registers one exporter as a span processor
// and another behind a synchronous processor: both keep the same sampled
// spans, and neither keeps a span that was recorded but not sampled.
func TestExporterAsSpanProcessor(t *testing.T) {
	direct, synced := telemetry.NewExporter(0), telemetry.NewExporter(0)
	for _, opt := range []sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(direct), sdktrace.WithSyncer(synced)} {
		tp := sdktrace.NewTracerProvider(opt, sdktrace.WithSampler(recordOnly{}))
		tr := tp.Tracer("test")
		for i, name := range []string{"first", "unsampled", "second"} {
			_, s := tr.Start(context.Background(), name, trace.WithAttributes(
				attribute.String("gcp.vertex.agent.session_id", "s"),
				attribute.String("loom.app_name", "app"), attribute.String("loom.user_id", "u"),
				attribute.Int("n", i)))
			s.End()
		}
		if err := tp.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, exp := range []*telemetry.Exporter{direct, synced} {
		spans, err := exp.SessionSpans(context.Background(), own("s"))
		if err != nil {
			t.Fatal(err)
		}
		if got := names(spans); exp.Exported() != 2 || len(got) != 2 || got[0] != "first" || got[1] != "second" {
			t.Errorf("kept %v (%d exported), want the two sampled spans", got, exp.Exported())
		}
		if spans[1].Attributes["n"] != int64(2) {
			t.Errorf("second span attributes %v", spans[1].Attributes)
		}
	}
	if err := direct.ForceFlush(context.Background()); err != nil {
		t.Errorf("ForceFlush: %v", err)
	}
}

// TestOwnProviderWithExporter gives Telemetry a tracer provider of its own
// on which an Exporter is a span processor beside another one: the trace
// routes' queries answer from that exporter, and both processors see every
// span of the invocation.
func TestOwnProviderWithExporter(t *testing.T) {
	exp := telemetry.NewExporter(0)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(exp), sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	f := newFixture(t, telemetry.Config{TracerProvider: tp, Exporter: exp}, s1Agent(t, s1Model(1, 2)))
	f.run(t, context.Background(), "s", "1+2?")
	spans, err := f.tel.SessionSpans(context.Background(), own("s"))
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 5 || len(rec.Ended()) != 5 {
		t.Errorf("exporter holds %v, the other processor saw %d spans; want 5 each", names(spans), len(rec.Ended()))
	}
	if f.tel.Exporter() != exp {
		t.Error("Exporter is not the configured one")
	}
}
