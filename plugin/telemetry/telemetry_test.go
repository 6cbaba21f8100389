package telemetry_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/plugin/telemetry"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

type addResult struct {
	Sum int `json:"sum"`
}

var errNegative = errors.New("negative numbers are not supported")

func addTool(t testing.TB) tool.Tool {
	t.Helper()
	add, err := functiontool.New(functiontool.Config{Name: "add", Description: "Adds two integers."},
		func(_ context.Context, _ tool.Context, in addArgs) (addResult, error) {
			if in.A < 0 || in.B < 0 {
				return addResult{}, errNegative
			}
			return addResult{Sum: in.A + in.B}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return add
}

// s1Model answers like the S1 scenario: a call to add, then the sum as text,
// with token usage on every response.
func s1Model(a, b int) *scripted.Model {
	return scripted.New("scripted-s1", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		usage := &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 10, CandidatesTokenCount: 3}
		if frs := scripted.LastFunctionResponse(req); len(frs) > 0 {
			if e, ok := frs[0].Response["error"]; ok {
				return scripted.Turn{Text: fmt.Sprint("failed: ", e), Usage: usage}, nil
			}
			// The second call reads its prefix from a context cache.
			cached := &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 10, CandidatesTokenCount: 3, CachedContentTokenCount: 8}
			return scripted.Turn{Text: fmt.Sprint(frs[0].Response["sum"]), Usage: cached}, nil
		}
		turn := scripted.Call("add", map[string]any{"a": a, "b": b})
		turn.Usage = usage
		return turn, nil
	})
}

type fixture struct {
	tel    *telemetry.Telemetry
	runner *runner.Runner
	reader *sdkmetric.ManualReader
}

func newFixture(t testing.TB, cfg telemetry.Config, root agent.Agent) *fixture {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	if cfg.MeterProvider == nil {
		cfg.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	}
	tel, err := telemetry.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "app", Agent: root, Sessions: newSessions(),
		Plugins: []*plugin.Plugin{tel.Plugin()}, AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{tel: tel, runner: r, reader: reader}
}

func newSessions() *session.Service { return memsession.NewService() }

func s1Agent(t testing.TB, m model.LLM) agent.Agent {
	t.Helper()
	a, err := llmagent.New(llmagent.Config{Name: "calc", Description: "Adds numbers.", Model: m, Tools: []tool.Tool{addTool(t)}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func (f *fixture) run(t testing.TB, ctx context.Context, session, text string) []*event.Event {
	t.Helper()
	evs, err := f.runner.RunSync(ctx, "u", session, genai.NewContentFromText(text, genai.RoleUser), nil)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// byName indexes spans by name; it fails on duplicates.
func byName(t *testing.T, spans []telemetry.Span) map[string]telemetry.Span {
	t.Helper()
	m := map[string]telemetry.Span{}
	for _, s := range spans {
		if _, dup := m[s.Name]; dup {
			t.Fatalf("two spans named %q in %v", s.Name, names(spans))
		}
		m[s.Name] = s
	}
	return m
}

func names(spans []telemetry.Span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// TestS1SpanTree checks the span tree of an S1 invocation (an LLM agent, a
// tool call, a final answer): one trace, rooted at invocation, with the
// agent under it and two model calls and the tool call under the agent.
func TestS1SpanTree(t *testing.T) {
	f := newFixture(t, telemetry.Config{}, s1Agent(t, s1Model(1, 2)))
	evs := f.run(t, context.Background(), "s1", "what is 1+2?")
	if len(evs) != 3 || evs[2].Text() != "3" {
		t.Fatalf("events: %d, last %q", len(evs), evs[len(evs)-1].Text())
	}
	spans, err := f.tel.SessionSpans(context.Background(), own("s1"))
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 5 {
		t.Fatalf("spans %v, want invocation, agent, 2 model calls, 1 tool call", names(spans))
	}
	var llm []telemetry.Span
	var rest []telemetry.Span
	for _, s := range spans {
		if s.Name == "call_llm" {
			llm = append(llm, s)
		} else {
			rest = append(rest, s)
		}
	}
	m := byName(t, rest)
	inv, ag, tl := m["invocation"], m["invoke_agent calc"], m["execute_tool add"]
	if inv.SpanID == "" || ag.SpanID == "" || tl.SpanID == "" || len(llm) != 2 {
		t.Fatalf("spans %v", names(spans))
	}
	if spans[0].Name != "invocation" {
		t.Errorf("first span %q, want the invocation (ordered by start)", spans[0].Name)
	}
	if inv.ParentSpanID != "" {
		t.Errorf("invocation has parent %s", inv.ParentSpanID)
	}
	if ag.ParentSpanID != inv.SpanID {
		t.Errorf("agent parent %s, want invocation %s", ag.ParentSpanID, inv.SpanID)
	}
	for _, s := range append(llm, tl) {
		if s.ParentSpanID != ag.SpanID {
			t.Errorf("%s parent %s, want agent %s", s.Name, s.ParentSpanID, ag.SpanID)
		}
		if s.TraceID != inv.TraceID {
			t.Errorf("%s in trace %s, want %s", s.Name, s.TraceID, inv.TraceID)
		}
		if s.StartTime < ag.StartTime || s.EndTime > ag.EndTime || s.EndTime < s.StartTime {
			t.Errorf("%s [%d, %d] not within agent [%d, %d]", s.Name, s.StartTime, s.EndTime, ag.StartTime, ag.EndTime)
		}
	}
	if ag.EndTime > inv.EndTime {
		t.Errorf("agent ends after the invocation")
	}
	if !(llm[0].EndTime <= tl.StartTime && tl.EndTime <= llm[1].StartTime) {
		t.Errorf("model, tool, model calls overlap: %v %v %v", llm[0], tl, llm[1])
	}

	// Attributes, as ADK names them.
	call, final := evs[0], evs[2]
	wantLLM := map[string]any{
		"gen_ai.system":                  "gcp.vertex.agent",
		"gen_ai.request.model":           "scripted-s1",
		"gen_ai.operation.name":          "generate_content",
		"gen_ai.usage.input_tokens":      int64(10),
		"gen_ai.usage.output_tokens":     int64(3),
		"gcp.vertex.agent.invocation_id": call.InvocationID,
		"gcp.vertex.agent.session_id":    "s1",
		"gcp.vertex.agent.event_id":      call.ID,
	}
	for k, want := range wantLLM {
		if got := llm[0].Attributes[k]; got != want {
			t.Errorf("call_llm %s = %v (%T), want %v", k, got, got, want)
		}
	}
	if got, ok := llm[0].Attributes["gen_ai.usage.cache_read.input_tokens"]; ok {
		t.Errorf("first call reports %v cached tokens", got)
	}
	if got := llm[1].Attributes["gen_ai.usage.cache_read.input_tokens"]; got != int64(8) {
		t.Errorf("cache hits = %v (%T), want 8", got, got)
	}
	if got := llm[1].Attributes["gcp.vertex.agent.event_id"]; got != final.ID {
		t.Errorf("second call_llm event id %v, want %v", got, final.ID)
	}
	if req, _ := llm[0].Attributes["gcp.vertex.agent.llm_request"].(string); !strings.Contains(req, "what is 1+2?") {
		t.Errorf("llm_request %q lacks the user message", req)
	}
	if resp, _ := llm[0].Attributes["gcp.vertex.agent.llm_response"].(string); !strings.Contains(resp, `"add"`) {
		t.Errorf("llm_response %q lacks the function call", resp)
	}
	fc := call.FunctionCalls()[0]
	wantTool := map[string]any{
		"gen_ai.operation.name":           "execute_tool",
		"gen_ai.tool.name":                "add",
		"gen_ai.tool.call.id":             fc.ID,
		"gcp.vertex.agent.event_id":       evs[1].ID,
		"gcp.vertex.agent.tool_call_args": `{"a":1,"b":2}`,
		"gcp.vertex.agent.tool_response":  `{"sum":3}`,
	}
	for k, want := range wantTool {
		if got := tl.Attributes[k]; got != want {
			t.Errorf("execute_tool %s = %v, want %v", k, got, want)
		}
	}
	if got := ag.Attributes["gen_ai.agent.name"]; got != "calc" {
		t.Errorf("agent name attribute %v", got)
	}
}

// TestEventAttributes checks the event lookup of the trace routes: a model
// event maps to its call_llm span, a function-response event to its tool
// span, an unknown id to nothing.
func TestEventAttributes(t *testing.T) {
	f := newFixture(t, telemetry.Config{}, s1Agent(t, s1Model(2, 2)))
	evs := f.run(t, context.Background(), "s", "2+2?")
	ctx := context.Background()
	for i, want := range []string{"generate_content", "execute_tool", "generate_content"} {
		attrs, err := f.tel.EventAttributes(ctx, own(""), evs[i].ID)
		if err != nil {
			t.Fatal(err)
		}
		if attrs["gen_ai.operation.name"] != want || attrs["gcp.vertex.agent.event_id"] != evs[i].ID {
			t.Errorf("event %d: attributes %v, want operation %s", i, attrs, want)
		}
	}
	if attrs, err := f.tel.EventAttributes(ctx, own(""), "no-such-event"); err != nil || attrs != nil {
		t.Errorf("unknown event: %v, %v", attrs, err)
	}
	if spans, err := f.tel.SessionSpans(ctx, own("other")); err != nil || len(spans) != 0 {
		t.Errorf("other session: %v, %v", names(spans), err)
	}
	// The caller may modify what it gets.
	attrs, _ := f.tel.EventAttributes(ctx, own(""), evs[0].ID)
	clear(attrs)
	if again, _ := f.tel.EventAttributes(ctx, own(""), evs[0].ID); len(again) == 0 {
		t.Error("modifying a returned map changed the stored span")
	}
}

// TestToolErrorSpan checks that a failing tool marks its span as an error
// and records the error, while the invocation goes on.
func TestToolErrorSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	f := newFixture(t, telemetry.Config{TracerProvider: tp}, s1Agent(t, s1Model(-1, 2)))
	evs := f.run(t, context.Background(), "s", "-1+2?")
	if got := evs[len(evs)-1].Text(); !strings.Contains(got, "negative") {
		t.Fatalf("final answer %q", got)
	}
	var found bool
	for _, s := range rec.Ended() {
		if s.Name() != "execute_tool add" {
			if s.Status().Code == codes.Error {
				t.Errorf("span %s has error status", s.Name())
			}
			continue
		}
		found = true
		if s.Status().Code != codes.Error || !strings.Contains(s.Status().Description, "negative") {
			t.Errorf("tool status %v", s.Status())
		}
		if !hasExceptionEvent(s) {
			t.Error("tool error not recorded as an exception event")
		}
		if v := attr(s, "gcp.vertex.agent.tool_response"); !strings.Contains(v.AsString(), "negative") {
			t.Errorf("tool response %q", v.AsString())
		}
	}
	if !found {
		t.Fatal("no tool span")
	}
	// A Telemetry with a provider of its own has no exporter to answer from.
	if spans, _ := f.tel.SessionSpans(context.Background(), own("s")); len(spans) != 0 {
		t.Errorf("spans without exporter: %v", names(spans))
	}
	if f.tel.Exporter() != nil {
		t.Error("exporter without Config.Exporter")
	}
	assertNoOpenSpans(t, rec)
}

// TestModelErrorSpan checks that a failing model call marks call_llm as an
// error and that every span is ended although the invocation failed.
func TestModelErrorSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	boom := &model.Error{Provider: "test", Code: "RESOURCE_EXHAUSTED", Message: "quota"}
	m := scripted.NewSequence("m", scripted.Turn{Err: boom})
	f := newFixture(t, telemetry.Config{TracerProvider: tp}, s1Agent(t, m))
	_, err := f.runner.RunSync(context.Background(), "u", "s", genai.NewContentFromText("hi", genai.RoleUser), nil)
	if !errors.As(err, new(*model.Error)) {
		t.Fatalf("run error %v, want the model error", err)
	}
	var llm sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "call_llm" {
			llm = s
		}
	}
	if llm == nil {
		t.Fatalf("no call_llm span among %d", len(rec.Ended()))
	}
	if llm.Status().Code != codes.Error || !hasExceptionEvent(llm) {
		t.Errorf("call_llm status %v, events %v", llm.Status(), llm.Events())
	}
	if got := attr(llm, "error.type").AsString(); got != "RESOURCE_EXHAUSTED" {
		t.Errorf("error.type %q", got)
	}
	assertNoOpenSpans(t, rec)
	dur := histogram(t, f.reader, telemetry.MetricOperationDuration)
	if len(dur) != 1 || dur[0].Count != 1 || attrOf(dur[0].Attributes, "error.type") != "RESOURCE_EXHAUSTED" {
		t.Errorf("operation duration points %+v", dur)
	}
}

// TestCancelEndsSpans cancels an invocation while its tool runs: every span
// is still ended, those cut short carry the context's error, and the tool's
// span records the result no event committed.
func TestCancelEndsSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	slow, err := functiontool.New(functiontool.Config{Name: "slow"},
		func(ctx context.Context, _ tool.Context, _ struct{}) (map[string]any, error) {
			cancel()
			<-ctx.Done()
			return map[string]any{"late": true}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.NewSequence("m", scripted.Call("slow", nil), scripted.Text("never"))
	a, err := llmagent.New(llmagent.Config{Name: "a", Model: m, Tools: []tool.Tool{slow}})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, telemetry.Config{TracerProvider: tp}, a)
	// Stop at the first error, as a cancelled client does.
	for _, err := range f.runner.Run(ctx, "u", "s", genai.NewContentFromText("go", genai.RoleUser), nil) {
		if err != nil {
			break
		}
	}
	assertNoOpenSpans(t, rec)
	var inv, slowSpan sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "invocation":
			inv = s
		case "execute_tool slow":
			slowSpan = s
		}
	}
	// The tool's result was never committed: its span records the result
	// the tool returned.
	if slowSpan == nil || attr(slowSpan, "gcp.vertex.agent.tool_response").AsString() != `{"late":true}` {
		t.Errorf("tool span %v", slowSpan)
	}
	if inv == nil || inv.Status().Code != codes.Error || !strings.Contains(inv.Status().Description, "canceled") {
		t.Fatalf("invocation span %v", inv)
	}
}

// TestBreakEndsSpans stops reading after the first event: AfterRun ends
// the agent span that its after-agent hook never closed.
func TestBreakEndsSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	f := newFixture(t, telemetry.Config{TracerProvider: tp}, s1Agent(t, s1Model(1, 1)))
	for range f.runner.Run(context.Background(), "u", "s", genai.NewContentFromText("1+1", genai.RoleUser), nil) {
		break
	}
	assertNoOpenSpans(t, rec)
	got := map[string]bool{}
	for _, s := range rec.Ended() {
		got[s.Name()] = true
	}
	if !got["invocation"] || !got["invoke_agent calc"] || !got["call_llm"] {
		t.Errorf("ended spans %v", got)
	}
}

// TestExporterBounded runs many invocations into a small exporter: it never
// holds more than its capacity, keeps the newest spans, and still answers.
func TestExporterBounded(t *testing.T) {
	const max = 12
	f := newFixture(t, telemetry.Config{MaxSpans: max}, s1Agent(t, s1Model(1, 2)))
	exp := f.tel.Exporter()
	if exp.Cap() != max {
		t.Fatalf("cap %d", exp.Cap())
	}
	var last []*event.Event
	for i := range 10 {
		last = f.run(t, context.Background(), fmt.Sprint("s", i), "1+2")
		if exp.Len() > max {
			t.Fatalf("after %d runs the exporter holds %d spans, more than %d", i+1, exp.Len(), max)
		}
	}
	if exp.Len() != max || exp.Exported() != 50 {
		t.Errorf("len %d, exported %d; want %d, 50", exp.Len(), exp.Exported(), max)
	}
	// The newest invocation is complete, the oldest gone.
	if spans, _ := f.tel.SessionSpans(context.Background(), own("s9")); len(spans) != 5 {
		t.Errorf("newest session spans %v", names(spans))
	}
	if spans, _ := f.tel.SessionSpans(context.Background(), own("s0")); len(spans) != 0 {
		t.Errorf("oldest session still has spans %v", names(spans))
	}
	if attrs, _ := f.tel.EventAttributes(context.Background(), own(""), last[2].ID); attrs == nil {
		t.Error("newest event not found")
	}
	if telemetry.NewExporter(0).Cap() != telemetry.DefaultMaxSpans {
		t.Error("default capacity")
	}
}

// TestMetrics checks the recorded metrics of two S1 invocations.
func TestMetrics(t *testing.T) {
	f := newFixture(t, telemetry.Config{}, s1Agent(t, s1Model(1, 2)))
	f.run(t, context.Background(), "s", "1+2")
	f.run(t, context.Background(), "s", "1+2 again")

	tokens := intHistogram(t, f.reader, telemetry.MetricTokenUsage)
	sums := map[string]int64{}
	for _, p := range tokens {
		sums[attrOf(p.Attributes, "gen_ai.token.type")] += p.Sum
		if attrOf(p.Attributes, "gen_ai.request.model") != "scripted-s1" {
			t.Errorf("token point attributes %v", p.Attributes)
		}
	}
	if sums["input"] != 40 || sums["output"] != 12 {
		t.Errorf("token sums %v, want input 40, output 12 (4 calls)", sums)
	}
	if d := histogram(t, f.reader, telemetry.MetricOperationDuration); len(d) != 1 || d[0].Count != 4 {
		t.Errorf("model durations %+v, want one series of 4", d)
	}
	if d := histogram(t, f.reader, telemetry.MetricToolDuration); len(d) != 1 || d[0].Count != 2 || attrOf(d[0].Attributes, "gen_ai.tool.name") != "add" {
		t.Errorf("tool durations %+v, want one series of 2", d)
	}
	if d := histogram(t, f.reader, telemetry.MetricInvocationDuration); len(d) != 1 || d[0].Count != 2 {
		t.Errorf("invocation durations %+v", d)
	}
	var rm metricdata.ResourceMetrics
	if err := f.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	count := find(rm, telemetry.MetricInvocationCount)
	sum, ok := count.Data.(metricdata.Sum[int64])
	if !ok || len(sum.DataPoints) != 1 || sum.DataPoints[0].Value != 2 {
		t.Errorf("invocation count %+v", count.Data)
	}
}

// TestConcurrentInvocations runs invocations on many sessions at once (run
// it with -race): each session gets its own complete trace.
func TestConcurrentInvocations(t *testing.T) {
	f := newFixture(t, telemetry.Config{}, s1Agent(t, s1Model(1, 2)))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 3 {
				f.run(t, context.Background(), fmt.Sprintf("s%d", i), fmt.Sprint("run ", j))
			}
		})
	}
	wg.Wait()
	for i := range 8 {
		spans, err := f.tel.SessionSpans(context.Background(), own(fmt.Sprintf("s%d", i)))
		if err != nil || len(spans) != 15 {
			t.Fatalf("session s%d: %d spans, %v", i, len(spans), err)
		}
		ids := map[string]bool{}
		for _, s := range spans {
			ids[s.SpanID] = true
		}
		for _, s := range spans {
			if s.Name != "invocation" && !ids[s.ParentSpanID] {
				t.Errorf("s%d: %s has a parent outside the session's spans", i, s.Name)
			}
		}
	}
}

// TestParallelToolCalls checks two tool calls of one model response: both
// spans are children of the agent and carry the one response event's id.
func TestParallelToolCalls(t *testing.T) {
	m := scripted.NewSequence("m",
		scripted.Turn{Calls: []*genai.FunctionCall{
			{ID: "c1", Name: "add", Args: map[string]any{"a": 1, "b": 1}},
			{ID: "c2", Name: "add", Args: map[string]any{"a": 2, "b": 2}},
		}},
		scripted.Text("done"))
	f := newFixture(t, telemetry.Config{}, s1Agent(t, m))
	evs := f.run(t, context.Background(), "s", "two sums")
	spans, _ := f.tel.SessionSpans(context.Background(), own("s"))
	var agentID string
	var tools []telemetry.Span
	for _, s := range spans {
		switch s.Name {
		case "invoke_agent calc":
			agentID = s.SpanID
		case "execute_tool add":
			tools = append(tools, s)
		}
	}
	if len(tools) != 2 {
		t.Fatalf("tool spans %v", names(spans))
	}
	calls := map[any]bool{}
	for _, s := range tools {
		calls[s.Attributes["gen_ai.tool.call.id"]] = true
		if s.ParentSpanID != agentID || s.Attributes["gcp.vertex.agent.event_id"] != evs[1].ID {
			t.Errorf("tool span %+v", s)
		}
	}
	if !calls["c1"] || !calls["c2"] {
		t.Errorf("call ids %v", calls)
	}
}

// TestTransferNestsAgents checks that an agent reached by transfer is a
// child of the agent that transferred.
func TestTransferNestsAgents(t *testing.T) {
	child, err := llmagent.New(llmagent.Config{Name: "child", Description: "answers", Model: scripted.NewSequence("cm", scripted.Text("hello from child"))})
	if err != nil {
		t.Fatal(err)
	}
	root, err := llmagent.New(llmagent.Config{Name: "root", Model: scripted.NewSequence("rm",
		scripted.Call("transfer_to_agent", map[string]any{"agent_name": "child"})), SubAgents: []agent.Agent{child}})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, telemetry.Config{}, root)
	evs := f.run(t, context.Background(), "s", "hi")
	if evs[len(evs)-1].Text() != "hello from child" {
		t.Fatalf("last event %q", evs[len(evs)-1].Text())
	}
	spans, _ := f.tel.SessionSpans(context.Background(), own("s"))
	ids := map[string]telemetry.Span{}
	for _, s := range spans {
		ids[s.SpanID] = s
	}
	for _, s := range spans {
		if s.Name == "invoke_agent child" {
			if p := ids[s.ParentSpanID]; p.Name != "invoke_agent root" {
				t.Errorf("child agent's parent %q", p.Name)
			}
			return
		}
	}
	t.Fatalf("no child agent span in %v", names(spans))
}

func hasExceptionEvent(s sdktrace.ReadOnlySpan) bool {
	for _, e := range s.Events() {
		if e.Name == "exception" {
			return true
		}
	}
	return false
}

func attr(s sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

func attrOf(set attribute.Set, key string) string {
	v, _ := set.Value(attribute.Key(key))
	return v.AsString()
}

// assertNoOpenSpans checks that every started span has ended.
func assertNoOpenSpans(t *testing.T, rec *tracetest.SpanRecorder) {
	t.Helper()
	ended := map[string]bool{}
	for _, s := range rec.Ended() {
		ended[s.SpanContext().SpanID().String()] = true
	}
	for _, s := range rec.Started() {
		if !ended[s.SpanContext().SpanID().String()] {
			t.Errorf("span %s was never ended", s.Name())
		}
	}
	if len(rec.Started()) == 0 {
		t.Error("no spans started")
	}
}

func find(rm metricdata.ResourceMetrics, name string) metricdata.Metrics {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m
			}
		}
	}
	return metricdata.Metrics{}
}

func histogram(t *testing.T, r *sdkmetric.ManualReader, name string) []metricdata.HistogramDataPoint[float64] {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	h, ok := find(rm, name).Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("no float histogram %s", name)
	}
	return h.DataPoints
}

func intHistogram(t *testing.T, r *sdkmetric.ManualReader, name string) []metricdata.HistogramDataPoint[int64] {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	h, ok := find(rm, name).Data.(metricdata.Histogram[int64])
	if !ok {
		t.Fatalf("no int histogram %s", name)
	}
	return h.DataPoints
}

// reasonModel answers every request with one text response that ends for
// the given reason.
type reasonModel genai.FinishReason

func (m reasonModel) Name() string { return "reasons" }

func (m reasonModel) Generate(context.Context, *model.Request, bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		yield(&model.Response{Content: genai.NewContentFromText("done", genai.RoleModel), FinishReason: genai.FinishReason(m), TurnComplete: true}, nil)
	}
}

// TestFinishReasons checks that a model call's span records the response's
// finish reason as a one-element list, whether it is a reason models give
// often (whose attribute spans share) or any other.
func TestFinishReasons(t *testing.T) {
	for _, reason := range []genai.FinishReason{genai.FinishReasonStop, genai.FinishReasonMaxTokens, "A_REASON_OF_ITS_OWN"} {
		a, err := llmagent.New(llmagent.Config{Name: "a", Model: reasonModel(reason)})
		if err != nil {
			t.Fatal(err)
		}
		f := newFixture(t, telemetry.Config{}, a)
		f.run(t, context.Background(), "s", "hi")
		f.run(t, context.Background(), "s", "again")
		spans, err := f.tel.SessionSpans(context.Background(), own("s"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range spans {
			if s.Name != "call_llm" {
				continue
			}
			n++
			if got, ok := s.Attributes["gen_ai.response.finish_reasons"].([]string); !ok || !slices.Equal(got, []string{string(reason)}) {
				t.Errorf("%s: finish reasons %#v", reason, s.Attributes["gen_ai.response.finish_reasons"])
			}
		}
		if n != 2 {
			t.Errorf("%s: %d model call spans, want 2", reason, n)
		}
	}
}
