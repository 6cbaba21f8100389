package telemetry

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/loomkit/loom/cost"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
)

// Metric names.
const (
	MetricTokenUsage         = "gen_ai.client.token.usage"
	MetricOperationDuration  = "gen_ai.client.operation.duration"
	MetricToolDuration       = "loom.tool.duration"
	MetricInvocationCount    = "loom.invocation.count"
	MetricInvocationDuration = "loom.invocation.duration"
	MetricTokens             = "loom.model.tokens"
	MetricCost               = "loom.model.cost"
	MetricInvocationTokens   = "loom.invocation.tokens"
	MetricInvocationCost     = "loom.invocation.cost"
)

// instruments are the metric instruments of a Telemetry.
type instruments struct {
	tokens      metric.Int64Histogram
	modelDur    metric.Float64Histogram
	toolDur     metric.Float64Histogram
	invocations metric.Int64Counter
	invDur      metric.Float64Histogram
	tokenCount  metric.Int64Counter
	cost        metric.Float64Counter
	invTokens   metric.Int64Histogram
	invCost     metric.Float64Histogram
	sets        *attrSets
	usage       *usageSets
}

// attrSets caches the attribute sets of measurements, which repeat (the
// same model, tool or agent, with or without an error type): a cached set
// costs a measurement no allocation. At most maxAttrSets are kept.
type attrSets struct {
	mu sync.Mutex
	m  map[attrKey]*measureOpts
}

// measureOpts holds the option that attaches one attribute set, as the
// argument lists of Record and Add, so that passing it builds no slice.
type measureOpts struct {
	rec []metric.RecordOption
	add []metric.AddOption
}

// attrKey names an attribute set: its kind and up to three values.
type attrKey struct{ kind, a, b, c string }

const maxAttrSets = 1024

// option returns the measurement options of the set k names, built by kvs
// the first time.
func (s *attrSets) option(k attrKey, kvs func() []attribute.KeyValue) *measureOpts {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.m[k]; ok {
		return o
	}
	opt := metric.WithAttributeSet(attribute.NewSet(kvs()...))
	o := &measureOpts{rec: []metric.RecordOption{opt}, add: []metric.AddOption{opt}}
	if len(s.m) < maxAttrSets {
		if s.m == nil {
			s.m = map[attrKey]*measureOpts{}
		}
		s.m[k] = o
	}
	return o
}

func newInstruments(m metric.Meter) (instruments, error) {
	in := instruments{sets: &attrSets{}, usage: &usageSets{}}
	var errs [9]error
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
	in.tokenCount, errs[5] = m.Int64Counter(MetricTokens,
		metric.WithDescription("Tokens of model responses, by gen_ai.token.type (input, output, cached, total)."), metric.WithUnit("{token}"))
	in.cost, errs[6] = m.Float64Counter(MetricCost,
		metric.WithDescription("Cost of model responses of priced models, in the prices' currency."), metric.WithUnit("{currency}"))
	in.invTokens, errs[7] = m.Int64Histogram(MetricInvocationTokens,
		metric.WithDescription("Tokens of the model responses of an invocation, in total."), metric.WithUnit("{token}"),
		metric.WithExplicitBucketBoundaries(256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216))
	in.invCost, errs[8] = m.Float64Histogram(MetricInvocationCost,
		metric.WithDescription("Cost of the model responses of an invocation whose models all have a price."), metric.WithUnit("{currency}"),
		metric.WithExplicitBucketBoundaries(0.0001, 0.001, 0.01, 0.1, 1, 10, 100))
	return in, errors.Join(errs[:]...)
}

// modelAttrs are the attributes of a model call's measurements, with a
// last one if it is set.
func modelAttrs(model string, last attribute.KeyValue) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.String(keyOperationName, opGenerateContent),
		attribute.String(keySystem, systemName),
		attribute.String(keyRequestModel, model),
	}
	if last.Valid() {
		attrs = append(attrs, last)
	}
	return attrs
}

// recordModelDuration records how long a model call took.
func (in *instruments) recordModelDuration(ctx context.Context, c *call, err error) {
	var etype string
	if err != nil {
		etype = errorType(err)
	}
	opt := in.sets.option(attrKey{"model", c.model, etype, ""}, func() []attribute.KeyValue {
		var last attribute.KeyValue
		if err != nil {
			last = attribute.String(keyErrorType, etype)
		}
		return modelAttrs(c.model, last)
	})
	in.modelDur.Record(ctx, time.Since(c.start).Seconds(), opt.rec...)
}

// usageKey names the attribute sets of a model response's usage.
type usageKey struct{ app, agent, model, node string }

// usageOpts are the measurement options of one usageKey: the semantic
// conventions' histogram by token type (input, output), the token counter
// by token type (input, output, cached, total) and the cost counter.
type usageOpts struct {
	hist  [2][]metric.RecordOption
	count [4][]metric.AddOption
	cost  []metric.AddOption
}

// usageSets caches usageOpts, as attrSets does attribute sets: one lookup
// per response, at most maxAttrSets kept.
type usageSets struct {
	mu sync.Mutex
	m  map[usageKey]*usageOpts
}

// tokenTypes are the values of gen_ai.token.type, the first two those of
// the semantic conventions.
var tokenTypes = [4]string{"input", "output", "cached", "total"}

func (s *usageSets) option(k usageKey) *usageOpts {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.m[k]; ok {
		return o
	}
	base := modelAttrs(k.model, attribute.KeyValue{})
	base = append(base, attribute.String(keyAppName, k.app), attribute.String(keyAgentName, k.agent))
	if k.node != "" {
		base = append(base, attribute.String(keyWorkflowNode, k.node))
	}
	with := func(kv attribute.KeyValue) metric.MeasurementOption {
		return metric.WithAttributeSet(attribute.NewSet(append(base[:len(base):len(base)], kv)...))
	}
	o := &usageOpts{cost: []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(base...))}}
	for i, typ := range tokenTypes {
		opt := with(attribute.String(keyTokenType, typ))
		o.count[i] = []metric.AddOption{opt}
		if i < len(o.hist) {
			o.hist[i] = []metric.RecordOption{opt}
		}
	}
	if len(s.m) < maxAttrSets {
		if s.m == nil {
			s.m = map[usageKey]*usageOpts{}
		}
		s.m[k] = o
	}
	return o
}

// recordUsage records the token usage of a committed model response, ev,
// of the call c in app, and its cost if prices has the model's price. The
// response is priced as the model that answered (its modelVersion) or,
// when it names none, the model requested. It returns the usage, for the
// invocation's sums.
func (in *instruments) recordUsage(ctx context.Context, app string, c *call, ev *event.Event, prices cost.Prices) cost.Usage {
	if ev.UsageMetadata == nil {
		return cost.Usage{}
	}
	priced := ev.ModelVersion
	if priced == "" {
		priced = c.model
	}
	u := cost.Of(ev.UsageMetadata, priced, prices)
	var node string
	if ev.NodeInfo != nil {
		node = nodeOf(ev.NodeInfo.Path)
	}
	o := in.usage.option(usageKey{app, c.agent, c.model, node})
	in.tokens.Record(ctx, u.Prompt, o.hist[0]...)
	in.tokens.Record(ctx, u.Candidates, o.hist[1]...)
	for i, n := range [4]int64{u.Prompt, u.Candidates, u.Cached, u.Total} {
		if n != 0 {
			in.tokenCount.Add(ctx, n, o.count[i]...)
		}
	}
	if u.Unpriced == 0 {
		in.cost.Add(ctx, u.Cost, o.cost...)
	}
	return u
}

// nodeOf is a workflow node's path without its runs ("triage/classify@2"
// is "triage/classify"), which stays the same from one run to the next.
func nodeOf(path string) string {
	if !strings.Contains(path, "@") {
		return path
	}
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if at := strings.LastIndexByte(p, '@'); at >= 0 {
			parts[i] = p[:at]
		}
	}
	return strings.Join(parts, "/")
}

// recordTool records a tool call's duration.
func (in *instruments) recordTool(ctx context.Context, c *call, err error) {
	var etype string
	if err != nil {
		etype = errorType(err)
	}
	opt := in.sets.option(attrKey{"tool", c.tool, etype, ""}, func() []attribute.KeyValue {
		attrs := []attribute.KeyValue{
			attribute.String(keyOperationName, opExecuteTool),
			attribute.String(keyToolName, c.tool),
		}
		if err != nil {
			attrs = append(attrs, attribute.String(keyErrorType, etype))
		}
		return attrs
	})
	in.toolDur.Record(ctx, time.Since(c.start).Seconds(), opt.rec...)
}

// recordInvocation counts an invocation of the root agent and records how
// long it took and, if its models reported usage, how many tokens it used
// and, if they all have a price, what they cost.
func (in *instruments) recordInvocation(ctx context.Context, app, rootAgent string, d time.Duration, u cost.Usage) {
	opt := in.sets.option(attrKey{"invocation", rootAgent, "", ""}, func() []attribute.KeyValue {
		return []attribute.KeyValue{attribute.String(keyAgentName, rootAgent)}
	})
	in.invocations.Add(ctx, 1, opt.add...)
	in.invDur.Record(ctx, d.Seconds(), opt.rec...)
	if u.Responses == 0 {
		return
	}
	uopt := in.sets.option(attrKey{"invocation usage", rootAgent, app, ""}, func() []attribute.KeyValue {
		return []attribute.KeyValue{attribute.String(keyAgentName, rootAgent), attribute.String(keyAppName, app)}
	})
	in.invTokens.Record(ctx, u.Total, uopt.rec...)
	if u.Unpriced == 0 {
		in.invCost.Record(ctx, u.Cost, uopt.rec...)
	}
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
