package telemetry_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/fallback"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin/telemetry"
)

// TestFallbackOnSpan: a model call answered by a fallback model records on
// its call_llm span the configured model, the one that answered, the error
// code, and an event per failed attempt.
func TestFallbackOnSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	down := scripted.New("primary", func(context.Context, *model.Request) (scripted.Turn, error) {
		return scripted.Turn{Err: &model.Error{Provider: "test", StatusCode: 429, Message: "quota", Retryable: true}}, nil
	})
	llm, err := fallback.New([]model.LLM{down, scripted.NewSequence("backup", scripted.Text("hi"))})
	if err != nil {
		t.Fatal(err)
	}
	a, err := llmagent.New(llmagent.Config{Name: "a", Model: llm})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, telemetry.Config{TracerProvider: tp}, a)
	f.run(t, context.Background(), "s", "hello")
	var span sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "call_llm" {
			span = s
		}
	}
	if span == nil {
		t.Fatal("no call_llm span")
	}
	if attr(span, "loom.fallback.original_model").AsString() != "primary" || attr(span, "loom.fallback.model").AsString() != "backup" ||
		attr(span, "loom.fallback.error_code").AsString() != "429" {
		t.Fatalf("attributes %v", span.Attributes())
	}
	if evs := span.Events(); len(evs) != 1 || evs[0].Name != "model_fallback" {
		t.Fatalf("events %v", evs)
	}
}
