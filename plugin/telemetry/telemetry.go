// Package telemetry traces and measures Loom invocations with OpenTelemetry.
// It is a plugin: add [Telemetry.Plugin] to a runner and every invocation is
// recorded, whatever its agents, models and tools.
//
//	tel, err := telemetry.New(telemetry.Config{})
//	if err != nil { ... }
//	r, err := runner.New(runner.Config{..., Plugins: []*plugin.Plugin{tel.Plugin()}})
//	spans, err := tel.SessionSpans(ctx, telemetry.Owner{AppName: app, UserID: user, SessionID: sessionID}) // what the dev UI's trace view shows
//
// # Spans
//
// Span names and attributes follow ADK's conventions, so ADK tooling reads
// them:
//
//	invocation                 one per invocation, from the user message to the end of the run
//	  invoke_agent <agent>     one per agent run, under the invocation or the agent that ran it
//	    call_llm               one per model call
//	    execute_tool <tool>    one per tool call
//	    execute_node <node>    one per attempt of a graph workflow's node, under the workflow
//	      invoke_agent <agent> an agent node's agent
//
// call_llm carries gen_ai.system ("gcp.vertex.agent"), gen_ai.request.model,
// gen_ai.operation.name, token usage (gen_ai.usage.input_tokens and
// output_tokens), gen_ai.response.finish_reasons, the invocation, session
// and event ids (gcp.vertex.agent.invocation_id, session_id, event_id: the
// id of the committed model-response event) and the request and response as
// JSON (gcp.vertex.agent.llm_request and llm_response, truncated to
// [Config.MaxPayloadBytes]). execute_tool carries gen_ai.tool.name,
// gen_ai.tool.call.id, the arguments and response as JSON and the id of the
// function-response event. Model and tool failures are recorded on their
// span, whose status becomes Error.
//
// execute_node is Loom's (ADK has no node spans): loom.node.name, kind,
// path, workflow, attempt and max_attempts, and, as the attempt ended, the
// route it chose (loom.node.route), its failure (status Error, error.type,
// an exception event) or loom.node.paused. A failed attempt that is tried
// again is one span, the next attempt another.
//
// An agent that continues a resumed invocation (its before-agent hook ran
// before the pause and does not run again) has its span all the same,
// marked loom.resumed.
//
// An agent span ends in the after-agent hook. A call_llm or execute_tool
// span ends when the runner commits the event carrying its result, so that
// it can record that event's id, with the time the call finished as its end
// time. Whatever is still open when the invocation ends (it was cancelled,
// failed or paused) is ended then, so no span outlives its invocation;
// spans cut short by a cancelled context are marked with its error.
//
// A plugin hook cannot hand a new context to the code it wraps, so the spans
// are linked to their parents by the plugin itself: a span started in a
// model's or tool's own code is a child of the span current in the run's
// context, not of call_llm or execute_tool.
//
// # Metrics
//
//	gen_ai.client.token.usage         histogram, {token}, by gen_ai.token.type (input, output)
//	loom.model.tokens                 counter, {token}, by gen_ai.token.type (input, output, cached, total)
//	loom.model.cost                   counter, {currency}, for models with a price in Config.Prices
//	gen_ai.client.operation.duration  histogram, s, per model call
//	loom.tool.duration                histogram, s, per tool call
//	loom.invocation.count             counter, {invocation}
//	loom.invocation.duration          histogram, s
//	loom.invocation.tokens            histogram, {token}, an invocation's total, when its models reported usage
//	loom.invocation.cost              histogram, {currency}, an invocation's cost, when all its models have a price
//
// Failed calls carry an error.type attribute. The three usage metrics are
// recorded once per model response, when the runner commits its event,
// from the event's usage metadata (so they agree with [cost.Session] over
// the stored session), with gen_ai.request.model, gen_ai.agent.name,
// loom.app_name and, for a response of an agent that runs as a graph
// workflow's node, loom.workflow.node (the node's path without its run
// numbers, "support/writer"). Input counts every prompt token, cached
// ones included; output leaves the model's thoughts out, which total and
// the cost count. A response is priced as the model that answered (its
// modelVersion) or, when it names none, the model requested; see package
// cost for the lookup.
//
// # Trace routes
//
// Without a TracerProvider in its Config, a Telemetry records spans in an
// in-memory [Exporter] that keeps the most recent spans, at most
// [Config.MaxSpans] of them in at most [Config.MaxSpanBytes] of memory.
// [Telemetry.SessionSpans] and [Telemetry.EventAttributes] read it: they
// answer the HTTP server's debug trace routes (the cli package connects
// them), giving a session's spans and the attributes of the span that
// produced an event. Both are scoped by an [Owner]: every span of an
// invocation records its app name and user id (loom.app_name,
// loom.user_id), and a query sees only the traces of its own user's
// sessions.
package telemetry

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/cost"
	"github.com/loomkit/loom/plugin"
)

// DefaultMaxPayloadBytes is the length to which request, response and tool
// payloads recorded on spans are truncated when Config.MaxPayloadBytes is
// zero.
const DefaultMaxPayloadBytes = 8 << 10

// instrumentationName names the tracer and meter.
const instrumentationName = "github.com/loomkit/loom/plugin/telemetry"

// Config configures a Telemetry. The zero value records spans in memory and
// metrics with the global MeterProvider.
type Config struct {
	// TracerProvider creates the spans. If nil, an SDK TracerProvider is
	// created whose only span processor is an in-memory Exporter.
	TracerProvider trace.TracerProvider
	// Exporter answers the trace routes when TracerProvider is set; register
	// it with that provider (sdktrace.WithSpanProcessor, or
	// sdktrace.WithSyncer). Without a TracerProvider
	// it is the exporter of the created provider (a new one if nil).
	Exporter *Exporter
	// MeterProvider records the metrics; otel.GetMeterProvider() if nil.
	MeterProvider metric.MeterProvider
	// MaxSpans bounds the number of spans a created Exporter keeps
	// (DefaultMaxSpans if zero or negative).
	MaxSpans int
	// MaxSpanBytes bounds the estimated memory of the spans a created
	// Exporter keeps, payloads included (DefaultMaxSpanBytes if zero;
	// negative: bounded by MaxSpans only). A quarter of it (up to 8 MiB)
	// bounds the encodings of model history contents kept to record
	// payloads without encoding a content again at every model call.
	MaxSpanBytes int64
	// MaxPayloadBytes truncates the JSON payloads recorded on spans (model
	// requests and responses, tool arguments and results), marking the
	// cut: DefaultMaxPayloadBytes if zero; negative records none. A model
	// request records its newest contents first.
	MaxPayloadBytes int
	// Prices price the tokens of model responses for the loom.model.cost
	// metric; a model without a price has its tokens counted and no cost.
	Prices cost.Prices
}

// Telemetry records traces and metrics of invocations through its plugin.
// It is safe for concurrent use.
type Telemetry struct {
	tracer     trace.Tracer
	owned      *sdktrace.TracerProvider // created by New, shut down by Shutdown
	exp        *Exporter
	m          instruments
	maxPayload int
	prices     cost.Prices
	contents   contentCache // encoded history contents (contentjson.go)
	agentNames spanNames    // invoke_agent span names
	toolNames  spanNames    // execute_tool span names
	plugin     *plugin.Plugin

	mu   sync.Mutex
	invs map[string]*invState // open invocations by id
}

// New returns a Telemetry.
func New(cfg Config) (*Telemetry, error) {
	t := &Telemetry{exp: cfg.Exporter, maxPayload: cfg.MaxPayloadBytes, prices: cfg.Prices, invs: map[string]*invState{}}
	if t.maxPayload == 0 {
		t.maxPayload = DefaultMaxPayloadBytes
	}
	t.contents.max = maxCachedJSON
	t.agentNames.prefix, t.toolNames.prefix = SpanInvokeAgent, SpanExecuteTool
	if cfg.MaxSpanBytes > 0 {
		t.contents.max = int(min(cfg.MaxSpanBytes/4, maxCachedJSON))
	}
	tp := cfg.TracerProvider
	if tp == nil {
		if t.exp == nil {
			t.exp = NewExporterWith(ExporterOptions{MaxSpans: cfg.MaxSpans, MaxBytes: cfg.MaxSpanBytes})
		}
		t.owned = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(t.exp))
		tp = t.owned
	}
	t.tracer = tp.Tracer(instrumentationName)
	mp := cfg.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m, err := newInstruments(mp.Meter(instrumentationName))
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	t.m = m
	t.plugin = t.newPlugin()
	return t, nil
}

// Plugin returns the plugin that records the runner's invocations. Add it
// to a runner's Config.Plugins, first so that it sees every hook before
// another plugin can skip the rest.
func (t *Telemetry) Plugin() *plugin.Plugin { return t.plugin }

// Exporter returns the in-memory exporter answering the trace routes, or nil.
func (t *Telemetry) Exporter() *Exporter { return t.exp }

// Shutdown ends every open span and shuts down the TracerProvider New
// created, if any; a provider given in the Config is left to its owner.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	t.mu.Lock()
	invs := t.invs
	t.invs = map[string]*invState{}
	t.mu.Unlock()
	for _, st := range invs {
		st.endAll(ctx, t)
	}
	if t.owned != nil {
		if err := t.owned.Shutdown(ctx); err != nil {
			return fmt.Errorf("telemetry: shutdown: %w", err)
		}
	}
	return nil
}

// SessionSpans returns the recorded spans of the invocations of the
// owner's session (app, user and session id; an empty AppName matches any
// app), ordered by start time.
func (t *Telemetry) SessionSpans(ctx context.Context, owner Owner) ([]Span, error) {
	if t.exp == nil {
		return nil, nil
	}
	return t.exp.SessionSpans(ctx, owner)
}

// EventAttributes returns the attributes of the span that produced an event
// (its model call, or its tool call for a function-response event) of the
// owner's user and app, or nil.
func (t *Telemetry) EventAttributes(ctx context.Context, owner Owner, eventID string) (map[string]any, error) {
	if t.exp == nil {
		return nil, nil
	}
	return t.exp.EventAttributes(ctx, owner, eventID)
}

// newPlugin builds the plugin over t's hooks.
func (t *Telemetry) newPlugin() *plugin.Plugin {
	return &plugin.Plugin{
		Name:          "telemetry",
		OnUserMessage: t.onUserMessage,
		BeforeRun:     t.beforeRun,
		OnEvent:       t.onEvent,
		AfterRun:      t.afterRun,
		Callbacks: agent.Callbacks{
			BeforeAgent:  []agent.BeforeAgentCallback{t.beforeAgent},
			AfterAgent:   []agent.AfterAgentCallback{t.afterAgent},
			BeforeModel:  []agent.BeforeModelCallback{t.beforeModel},
			AfterModel:   []agent.AfterModelCallback{t.afterModel},
			OnModelError: []agent.OnModelErrorCallback{t.onModelError},
			BeforeTool:   []agent.BeforeToolCallback{t.beforeTool},
			AfterTool:    []agent.AfterToolCallback{t.afterTool},
			OnToolError:  []agent.OnToolErrorCallback{t.onToolError},
			ResumeAgent:  []agent.ResumeAgentCallback{t.resumeAgent},
			BeforeNode:   []agent.BeforeNodeCallback{t.beforeNode},
			AfterNode:    []agent.AfterNodeCallback{t.afterNode},
			// The model hooks record the request; they never change it.
			ReadOnlyModelHooks: true,
		},
	}
}
