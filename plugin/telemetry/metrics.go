package telemetry

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/loomkit/loom/model"
)

// Metric names.
const (
	MetricTokenUsage         = "gen_ai.client.token.usage"
	MetricOperationDuration  = "gen_ai.client.operation.duration"
	MetricToolDuration       = "loom.tool.duration"
	MetricInvocationCount    = "loom.invocation.count"
	MetricInvocationDuration = "loom.invocation.duration"
)

// instruments are the metric instruments of a Telemetry.
type instruments struct {
	tokens      metric.Int64Histogram
	modelDur    metric.Float64Histogram
	toolDur     metric.Float64Histogram
	invocations metric.Int64Counter
	invDur      metric.Float64Histogram
}

func newInstruments(m metric.Meter) (instruments, error) {
	var in instruments
	var errs [5]error
	in.tokens, errs[0] = m.Int64Histogram(MetricTokenUsage,
		metric.WithDescription("Tokens used per model call, by token type."), metric.WithUnit("{token}"),
		metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304))
	in.modelDur, errs[1] = m.Float64Histogram(MetricOperationDuration,
		metric.WithDescription("Duration of model calls."), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92))
	in.toolDur, errs[2] = m.Float64Histogram(MetricToolDuration,
		metric.WithDescription("Duration of tool calls."), metric.WithUnit("s"))
	in.invocations, errs[3] = m.Int64Counter(MetricInvocationCount,
		metric.WithDescription("Invocations run."), metric.WithUnit("{invocation}"))
	in.invDur, errs[4] = m.Float64Histogram(MetricInvocationDuration,
		metric.WithDescription("Duration of invocations, from the user message to the end of the run."), metric.WithUnit("s"))
	return in, errors.Join(errs[:]...)
}

// modelAttrs are the attributes of a model call's measurements.
func modelAttrs(c *call) []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String(keyOperationName, opGenerateContent),
		attribute.String(keySystem, systemName),
		attribute.String(keyRequestModel, c.model),
	}
}

// recordModelDuration records how long a model call took.
func (in *instruments) recordModelDuration(ctx context.Context, c *call, err error) {
	attrs := modelAttrs(c)
	if err != nil {
		attrs = append(attrs, attribute.String(keyErrorType, errorType(err)))
	}
	in.modelDur.Record(ctx, time.Since(c.start).Seconds(), metric.WithAttributes(attrs...))
}

// recordTokens records a model response's token usage.
func (in *instruments) recordTokens(ctx context.Context, c *call, resp *model.Response) {
	u := resp.UsageMetadata
	if u == nil {
		return
	}
	attrs := append(modelAttrs(c), attribute.String(keyTokenType, "input"))
	in.tokens.Record(ctx, int64(u.PromptTokenCount), metric.WithAttributes(attrs...))
	attrs[len(attrs)-1] = attribute.String(keyTokenType, "output")
	in.tokens.Record(ctx, int64(u.CandidatesTokenCount), metric.WithAttributes(attrs...))
}

// recordTool records a tool call's duration.
func (in *instruments) recordTool(ctx context.Context, c *call, err error) {
	attrs := []attribute.KeyValue{
		attribute.String(keyOperationName, opExecuteTool),
		attribute.String(keyToolName, c.tool),
	}
	if err != nil {
		attrs = append(attrs, attribute.String(keyErrorType, errorType(err)))
	}
	in.toolDur.Record(ctx, time.Since(c.start).Seconds(), metric.WithAttributes(attrs...))
}

// errorType is the error.type of an error: the provider's code of a model
// error, the context's error for a cancelled call, else "_OTHER".
func errorType(err error) string {
	var me *model.Error
	switch {
	case errors.As(err, &me) && me.Code != "":
		return me.Code
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline_exceeded"
	}
	return "_OTHER"
}
