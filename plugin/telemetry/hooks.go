package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/cost"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/tool"
)

// Attribute keys and values, as ADK names them.
const (
	keySystem         = "gen_ai.system"
	keyOperationName  = "gen_ai.operation.name"
	keyRequestModel   = "gen_ai.request.model"
	keyResponseModel  = "gen_ai.response.model"
	keyInputTokens    = "gen_ai.usage.input_tokens"
	keyOutputTokens   = "gen_ai.usage.output_tokens"
	keyCachedTokens   = "gen_ai.usage.cache_read.input_tokens"
	keyFinishReasons  = "gen_ai.response.finish_reasons"
	keyTopP           = "gen_ai.request.top_p"
	keyMaxTokens      = "gen_ai.request.max_tokens"
	keyTokenType      = "gen_ai.token.type"
	keyAgentName      = "gen_ai.agent.name"
	keyAgentDesc      = "gen_ai.agent.description"
	keyConversationID = "gen_ai.conversation.id"
	keyToolName       = "gen_ai.tool.name"
	keyToolDesc       = "gen_ai.tool.description"
	keyToolCallID     = "gen_ai.tool.call.id"
	keyErrorType      = "error.type"
	keyInvocationID   = "gcp.vertex.agent.invocation_id"
	keySessionID      = "gcp.vertex.agent.session_id"
	keyEventID        = "gcp.vertex.agent.event_id"
	keyAppName        = "loom.app_name"
	keyUserID         = "loom.user_id"
	keyBranch         = "gcp.vertex.agent.branch"
	keyLLMRequest     = "gcp.vertex.agent.llm_request"
	keyLLMResponse    = "gcp.vertex.agent.llm_response"
	keyToolArgs       = "gcp.vertex.agent.tool_call_args"
	keyToolResponse   = "gcp.vertex.agent.tool_response"
	keyResumed        = "loom.resumed"
	keyNodeName       = "loom.node.name"
	keyNodeKind       = "loom.node.kind"
	keyNodePath       = "loom.node.path"
	keyNodeWorkflow   = "loom.node.workflow"
	keyNodeAttempt    = "loom.node.attempt"
	keyNodeMax        = "loom.node.max_attempts"
	keyNodeRoute      = "loom.node.route"
	keyNodePaused     = "loom.node.paused"
	keyWorkflowNode   = "loom.workflow.node"

	systemName        = "gcp.vertex.agent"
	opInvokeAgent     = "invoke_agent"
	opGenerateContent = "generate_content"
	opExecuteTool     = "execute_tool"
)

// Span names.
const (
	SpanInvocation  = "invocation"
	SpanInvokeAgent = "invoke_agent" // followed by a space and the agent name
	SpanCallLLM     = "call_llm"
	SpanExecuteTool = "execute_tool" // followed by a space and the tool name
	SpanExecuteNode = "execute_node" // followed by a space and the node name
)

// invState is the open spans of one invocation. Agents' spans are matched
// by (branch, agent name): before- and after-agent hooks get different
// contexts. A model call is matched by its callback context, which its
// before- and after-model hooks share, and a tool call by its call id.
type invState struct {
	span      trace.Span
	ctx       context.Context // the context holding span, for its children
	invID     string
	start     time.Time
	appName   string
	userID    string
	sessionID string
	rootAgent string

	mu      sync.Mutex
	agents  []*call    // open agent and node spans, in start order
	models  []*call    // model calls without a response yet, by call.cc
	pending []*call    // model calls answered, waiting for their event
	tools   []*call    // tool calls waiting for their event, by call.id
	usage   cost.Usage // of the committed model responses
	// buf holds the attributes of a span as they are set, under mu, with
	// the plugin's own provider (see attrList and ownState).
	buf []attribute.KeyValue
	// The calls of an invocation, and the lists above, start in these
	// arrays, so that an invocation of one agent, two model calls and a
	// tool call allocates none of them.
	slab  [4]call
	used  int // calls of slab handed out
	lists [8]*call
}

// ownState is the state of an invocation recorded by the provider New
// created, with the room for its attribute buffer.
type ownState struct {
	invState
	attrs [20]attribute.KeyValue
}

// newInvState returns the state of a new invocation; own: of the plugin's
// own provider.
func newInvState(own bool) *invState {
	var st *invState
	if own {
		o := &ownState{}
		o.buf = o.attrs[:0]
		st = &o.invState
	} else {
		st = &invState{}
	}
	st.start = time.Now()
	st.agents, st.models = st.lists[0:0:2], st.lists[2:2:4]
	st.pending, st.tools = st.lists[4:4:6], st.lists[6:6:8]
	return st
}

// newCall returns a new zero call of st, from its slab while it lasts.
// st.mu is held.
func (st *invState) newCall() *call {
	if st.used == len(st.slab) {
		return new(call)
	}
	st.used++
	return &st.slab[st.used-1]
}

// modelLocked returns the index in st.models of the model call of cc, or -1.
func (st *invState) modelLocked(cc *agent.CallbackContext) int {
	for i, c := range st.models {
		if c.cc == cc {
			return i
		}
	}
	return -1
}

// toolLocked returns the index in st.tools of the tool call id, or -1.
func (st *invState) toolLocked(id string) int {
	for i, c := range st.tools {
		if c.id == id {
			return i
		}
	}
	return -1
}

// without returns list without its element i, in order.
func without(list []*call, i int) []*call {
	n := copy(list[i:], list[i+1:])
	list[i+n] = nil
	return list[:i+n]
}

// attrList returns an empty list for the attributes of one span of st,
// filled and handed to start or SetAttributes under st.mu. The spans of
// the provider New created copy the attributes they are given, so they
// share st's buffer; another provider's spans may keep the list, so each
// of them gets its own, with room for the n attributes a span usually
// gets at once and its payload, if any.
func (t *Telemetry) attrList(st *invState, n int) []attribute.KeyValue {
	if t.owned != nil {
		return st.buf[:0]
	}
	if t.maxPayload > 0 {
		n++
	}
	return make([]attribute.KeyValue, 0, n)
}

// start starts a span named name with attrs, the child of parent (of the
// span in ctx if parent is nil), and returns it with the context holding
// it, for its own children.
//
// The provider New created gets the attributes once the span has
// started, and only if it records: its sampler does not read them and its
// processor does nothing as a span starts, and a start option would be
// allocated and copied for every span. It also starts a child in the
// context its parent started (pctx) rather than in a new one made of the
// hook's context and the parent: it reads nothing of that context but the
// parent span. Another provider's sampler may read the attributes, and
// its processors the context, so there the attributes are a start option
// and the context is the hook's.
func (t *Telemetry) start(ctx context.Context, parent trace.Span, pctx context.Context, name string, attrs []attribute.KeyValue) (trace.Span, context.Context) {
	if t.owned == nil {
		if parent != nil {
			ctx = trace.ContextWithSpan(ctx, parent)
		}
		ctx, span := t.tracer.Start(ctx, name, trace.WithAttributes(attrs...))
		return span, ctx
	}
	switch {
	case pctx != nil:
		ctx = pctx
	case parent != nil:
		ctx = trace.ContextWithSpan(ctx, parent)
	}
	ctx, span := t.tracer.Start(ctx, name)
	if span.IsRecording() {
		span.SetAttributes(attrs...)
	}
	return span, ctx
}

// call is one open span below the invocation.
type call struct {
	span   trace.Span
	ctx    context.Context // the context holding an agent or node span, for its children
	start  time.Time
	end    time.Time // when the call finished, if it has; the span ends later
	agent  string
	branch string
	model  string
	tool   string
	node   string                 // the path of a workflow node's run: a node span
	cc     *agent.CallbackContext // a model call's, shared by its hooks
	id     string                 // a tool call's id
	// deferred: the span of a model or tool call of the provider New
	// created gets all its attributes as it ends, in one list, so that
	// it stores them once, at their final size; what they are made of is
	// kept until then (see callAttrs).
	deferred  bool
	desc      string // a tool's description
	topP      float64
	hasTopP   bool
	maxTokens int64
	payload   string // a model call's request or a tool call's arguments, as JSON
	answer    answer // a model's response
	eventID   string // of the committed event carrying the result
	response  string // a tool's response, as JSON
	failed    bool   // the failure has been recorded (metrics included)
	// result is a tool's result, recorded as its payload when the span
	// ends unless a committed function response replaced it.
	result map[string]any
}

// answer is what a call_llm span records of a model's response.
type answer struct {
	ok                  bool // the model answered
	usage               bool // with token counts
	in, out, cached     int64
	finish              genai.FinishReason
	version, llmPayload string
}

// finish ends the span at the time the call finished, or now. st.mu is
// held.
func (c *call) finish(t *Telemetry, st *invState) {
	if c.result != nil {
		if c.span.IsRecording() {
			if c.deferred {
				c.response = t.payload(c.result)
			} else {
				c.span.SetAttributes(attribute.String(keyToolResponse, t.payload(c.result)))
			}
		}
		c.result = nil
	}
	if c.deferred && c.span.IsRecording() {
		c.span.SetAttributes(t.callAttrs(st, c, t.attrList(st, 20))...)
	}
	if c.end.IsZero() {
		c.span.End()
		return
	}
	c.span.End(trace.WithTimestamp(c.end))
}

func (t *Telemetry) state(id string) *invState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.invs[id]
}

// begin starts the invocation span, once per invocation.
func (t *Telemetry) begin(ctx context.Context, inv *agent.Invocation) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.invs[inv.ID()]; ok {
		return
	}
	st := newInvState(t.owned != nil)
	st.invID, st.sessionID = inv.ID(), sessionID(inv)
	if s := inv.Session(); s != nil {
		st.appName, st.userID = s.AppName(), s.UserID()
	}
	if a := inv.Agent(); a != nil {
		st.rootAgent = a.Name()
	}
	st.span, st.ctx = t.start(ctx, nil, nil, SpanInvocation, append(t.attrList(st, 5),
		attribute.String(keyInvocationID, inv.ID()),
		attribute.String(keySessionID, st.sessionID),
		attribute.String(keyConversationID, st.sessionID),
		attribute.String(keyAppName, st.appName),
		attribute.String(keyUserID, st.userID),
	))
	t.invs[inv.ID()] = st
}

func sessionID(inv *agent.Invocation) string {
	if s := inv.Session(); s != nil {
		return s.ID()
	}
	return ""
}

func (t *Telemetry) onUserMessage(ctx context.Context, cc *agent.CallbackContext, _ *genai.Content) (*genai.Content, error) {
	t.begin(ctx, cc.Invocation())
	return nil, nil
}

// beforeRun starts the invocation span if an earlier plugin replaced the
// user message, so that this plugin's hook did not run.
func (t *Telemetry) beforeRun(ctx context.Context, cc *agent.CallbackContext) (*genai.Content, error) {
	t.begin(ctx, cc.Invocation())
	return nil, nil
}

// parentLocked returns the span a new span should be a child of. For a
// model or tool call (name set) it is the newest open span of that agent on
// that branch. Otherwise, or if there is none, it is the newest open agent
// or node span on the branch or an enclosing one (the agent that
// transferred to this one, the workflow node running it, the workflow),
// else the invocation span.
//
// It also returns the context that span started (see Telemetry.start).
func (st *invState) parentLocked(branch, name string) (trace.Span, context.Context) {
	if name != "" {
		for i := len(st.agents) - 1; i >= 0; i-- {
			if a := st.agents[i]; a.node == "" && a.agent == name && a.branch == branch {
				return a.span, a.ctx
			}
		}
	}
	for i := len(st.agents) - 1; i >= 0; i-- {
		a := st.agents[i]
		if a.branch == branch || a.branch == "" || len(branch) > len(a.branch) && branch[len(a.branch)] == '.' && strings.HasPrefix(branch, a.branch) {
			return a.span, a.ctx
		}
	}
	return st.span, st.ctx
}

func (t *Telemetry) beforeAgent(ctx context.Context, cc *agent.CallbackContext) (*genai.Content, error) {
	t.startAgent(ctx, cc.Invocation(), false)
	return nil, nil
}

// resumeAgent starts the span of an agent that continues a resumed
// invocation: its before-agent hook ran in the run that paused.
func (t *Telemetry) resumeAgent(ctx context.Context, cc *agent.CallbackContext) {
	t.startAgent(ctx, cc.Invocation(), true)
}

// startAgent starts an agent's span; resumed marks an agent that continues
// a resumed invocation.
func (t *Telemetry) startAgent(ctx context.Context, inv *agent.Invocation, resumed bool) {
	st := t.state(inv.ID())
	if st == nil {
		return
	}
	a := inv.Agent()
	st.mu.Lock()
	defer st.mu.Unlock()
	c := st.newCall()
	*c = call{start: time.Now(), agent: a.Name(), branch: inv.Branch()}
	attrs := append(t.attrList(st, 7),
		attribute.String(keyOperationName, opInvokeAgent),
		attribute.String(keyAgentName, a.Name()),
		attribute.String(keyAgentDesc, a.Description()),
		attribute.String(keyConversationID, st.sessionID),
		attribute.String(keyInvocationID, inv.ID()),
	)
	if c.branch != "" {
		attrs = append(attrs, attribute.String(keyBranch, c.branch))
	}
	if resumed {
		attrs = append(attrs, attribute.Bool(keyResumed, true))
	}
	parent, pctx := st.parentLocked(c.branch, "")
	c.span, c.ctx = t.start(ctx, parent, pctx, t.agentNames.of(a.Name()), attrs)
	st.agents = append(st.agents, c)
}

// beforeNode starts the span of a workflow node's attempt, under the
// newest open span of its branch (the workflow's agent span, or the node
// that runs it as a dynamic child).
func (t *Telemetry) beforeNode(ctx context.Context, inv *agent.Invocation, a agent.NodeAttempt) {
	st := t.state(inv.ID())
	if st == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	c := st.newCall()
	*c = call{start: time.Now(), agent: a.Node, branch: inv.Branch(), node: a.Path}
	attrs := append(t.attrList(st, 11),
		attribute.String(keyNodeName, a.Node),
		attribute.String(keyNodeKind, a.Kind),
		attribute.String(keyNodePath, a.Path),
		attribute.String(keyNodeWorkflow, a.Workflow),
		attribute.Int(keyNodeAttempt, a.Attempt),
		attribute.Int(keyNodeMax, a.MaxAttempts),
		attribute.String(keyInvocationID, inv.ID()),
		attribute.String(keySessionID, st.sessionID),
		attribute.String(keyAppName, st.appName),
		attribute.String(keyUserID, st.userID),
	)
	if c.branch != "" {
		attrs = append(attrs, attribute.String(keyBranch, c.branch))
	}
	parent, pctx := st.parentLocked(c.branch, "")
	c.span, c.ctx = t.start(ctx, parent, pctx, SpanExecuteNode+" "+a.Node, attrs)
	st.agents = append(st.agents, c)
}

// afterNode ends a node attempt's span with its route, or its failure.
func (t *Telemetry) afterNode(_ context.Context, inv *agent.Invocation, a agent.NodeAttempt, o agent.NodeOutcome) {
	st := t.state(inv.ID())
	if st == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	for i := len(st.agents) - 1; i >= 0; i-- {
		c := st.agents[i]
		if c.node != a.Path || c.branch != inv.Branch() {
			continue
		}
		switch {
		case o.Err != nil:
			c.span.RecordError(o.Err)
			c.span.SetStatus(codes.Error, o.Err.Error())
			c.span.SetAttributes(attribute.String(keyErrorType, errorType(o.Err)))
		case o.Paused:
			c.span.SetAttributes(attribute.Bool(keyNodePaused, true))
		case o.Route != "":
			c.span.SetAttributes(attribute.String(keyNodeRoute, o.Route))
		}
		c.span.End()
		st.agents = without(st.agents, i)
		return
	}
}

func (t *Telemetry) afterAgent(_ context.Context, cc *agent.CallbackContext) (*genai.Content, error) {
	inv := cc.Invocation()
	st := t.state(inv.ID())
	if st == nil {
		return nil, nil
	}
	name, branch := inv.Agent().Name(), inv.Branch()
	st.mu.Lock()
	defer st.mu.Unlock()
	for i := len(st.agents) - 1; i >= 0; i-- {
		if c := st.agents[i]; c.node == "" && c.agent == name && c.branch == branch {
			c.span.End()
			st.agents = without(st.agents, i)
			break
		}
	}
	return nil, nil
}

func (t *Telemetry) beforeModel(ctx context.Context, cc *agent.CallbackContext, req *model.Request) (*model.Response, error) {
	inv := cc.Invocation()
	st := t.state(inv.ID())
	if st == nil {
		return nil, nil
	}
	start := time.Now()
	var request string
	if t.maxPayload > 0 {
		request = t.requestPayload(req)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	c := st.newCall()
	*c = call{start: start, agent: cc.AgentName(), branch: inv.Branch(), model: req.Model, cc: cc,
		deferred: t.owned != nil, payload: request}
	if cfg := req.Config; cfg != nil {
		if cfg.TopP != nil {
			c.topP, c.hasTopP = float64(*cfg.TopP), true
		}
		c.maxTokens = int64(cfg.MaxOutputTokens)
	}
	parent, pctx := st.parentLocked(c.branch, c.agent)
	c.span, _ = t.start(ctx, parent, pctx, SpanCallLLM, t.startAttrs(st, c))
	if i := st.modelLocked(cc); i >= 0 {
		st.models[i].finish(t, st) // the same context reused for a second call: close the first
		st.models = without(st.models, i)
	}
	st.models = append(st.models, c)
	return nil, nil
}

// requestPayload is what a call_llm span records of a request: the model,
// the newest contents (without inline data) that fit in half the payload
// budget, so that the cost does not grow with the session, the
// configuration and the names of the declared functions; all of it
// truncated to the budget.
func (t *Telemetry) requestPayload(req *model.Request) string {
	contents := make([][]byte, 0, 32)
	used := 0
	for i := len(req.Contents) - 1; i >= 0 && used < t.maxPayload/2; i-- {
		c := req.Contents[i]
		if c == nil {
			continue
		}
		b, err := t.contents.encode(c)
		if err != nil {
			continue
		}
		contents = append(contents, b)
		used += len(b) + 1
	}
	var buf strings.Builder // its String does not copy
	buf.Grow(used + 1024)   // the contents, the model and most configurations
	buf.WriteString(`{"model":`)
	buf.WriteString(quote(req.Model))
	if omitted := len(req.Contents) - len(contents); omitted > 0 {
		fmt.Fprintf(&buf, `,"omitted_contents":%d`, omitted)
	}
	buf.WriteString(`,"contents":[`)
	for i := len(contents) - 1; i >= 0; i-- {
		buf.Write(contents[i])
		if i > 0 {
			buf.WriteByte(',')
		}
	}
	buf.WriteByte(']')
	if req.Config != nil {
		// Tool declarations are named, not spelled out: their schemas are
		// costly to encode on every call and crowd out the contents.
		cfg := *req.Config
		cfg.Tools = nil
		if b, err := json.Marshal(&cfg); err == nil {
			buf.WriteString(`,"config":`)
			buf.Write(b)
		}
		var tools []string
		for _, tl := range req.Config.Tools {
			if tl == nil {
				continue
			}
			for _, fd := range tl.FunctionDeclarations {
				if fd != nil {
					tools = append(tools, fd.Name)
				}
			}
		}
		if len(tools) > 0 {
			b, _ := json.Marshal(tools)
			buf.WriteString(`,"tools":`)
			buf.Write(b)
		}
	}
	buf.WriteByte('}')
	return truncate(buf.String(), t.maxPayload)
}

func (t *Telemetry) afterModel(ctx context.Context, cc *agent.CallbackContext, resp *model.Response) (*model.Response, error) {
	st := t.state(cc.InvocationID())
	if st == nil {
		return nil, nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	i := st.modelLocked(cc)
	if i < 0 {
		return nil, nil
	}
	c := st.models[i]
	st.models = without(st.models, i)
	if c.span.IsRecording() {
		c.answer = answer{ok: true, finish: resp.FinishReason, version: resp.ModelVersion}
		if u := resp.UsageMetadata; u != nil {
			c.answer.usage = true
			c.answer.in, c.answer.out = int64(u.PromptTokenCount), int64(u.CandidatesTokenCount)
			c.answer.cached = int64(u.CachedContentTokenCount)
		}
		if t.maxPayload > 0 {
			c.answer.llmPayload = t.payload(resp)
		}
		if !c.deferred {
			c.span.SetAttributes(t.answerAttrs(c, t.attrList(st, 3))...)
		}
		fallbackAttrs(c.span, resp)
	}
	if resp.ErrorCode != "" && !c.failed {
		c.span.SetStatus(codes.Error, resp.ErrorCode+": "+resp.ErrorMessage)
		c.span.SetAttributes(attribute.String(keyErrorType, resp.ErrorCode))
	}
	if !c.failed { // a failed call's duration is already recorded
		t.m.recordModelDuration(ctx, c, nil)
	}
	c.end = time.Now()
	st.pending = append(st.pending, c)
	return nil, nil
}

// startAttrs returns the attributes a model or tool call's span starts
// with: none for a deferred one, which gets them all as it ends. st.mu is
// held.
func (t *Telemetry) startAttrs(st *invState, c *call) []attribute.KeyValue {
	if c.deferred {
		return nil
	}
	if c.tool != "" {
		return t.toolAttrs(st, c, t.attrList(st, 8))
	}
	return t.modelAttrs(st, c, t.attrList(st, 7))
}

// modelAttrs appends the attributes of a call_llm span's request.
func (t *Telemetry) modelAttrs(st *invState, c *call, attrs []attribute.KeyValue) []attribute.KeyValue {
	attrs = append(attrs,
		attribute.String(keySystem, systemName),
		attribute.String(keyOperationName, opGenerateContent),
		attribute.String(keyRequestModel, c.model),
		attribute.String(keyInvocationID, st.invID),
		attribute.String(keySessionID, st.sessionID),
		attribute.String(keyAppName, st.appName),
		attribute.String(keyUserID, st.userID),
	)
	if c.hasTopP {
		attrs = append(attrs, attribute.Float64(keyTopP, c.topP))
	}
	if c.maxTokens > 0 {
		attrs = append(attrs, attribute.Int64(keyMaxTokens, c.maxTokens))
	}
	if t.maxPayload > 0 {
		attrs = append(attrs, attribute.String(keyLLMRequest, c.payload))
	}
	return attrs
}

// answerAttrs appends what a call_llm span records of the model's
// response: token usage, finish reason, model version and payload.
func (t *Telemetry) answerAttrs(c *call, attrs []attribute.KeyValue) []attribute.KeyValue {
	a := &c.answer
	if a.usage {
		attrs = append(attrs, attribute.Int64(keyInputTokens, a.in), attribute.Int64(keyOutputTokens, a.out))
		if a.cached > 0 { // input tokens read from a provider's context cache
			attrs = append(attrs, attribute.Int64(keyCachedTokens, a.cached))
		}
	}
	if a.finish != "" {
		attrs = append(attrs, finishReasonAttr(a.finish))
	}
	if a.version != "" {
		attrs = append(attrs, attribute.String(keyResponseModel, a.version))
	}
	if t.maxPayload > 0 {
		attrs = append(attrs, attribute.String(keyLLMResponse, a.llmPayload))
	}
	return attrs
}

// toolAttrs appends the attributes of an execute_tool span's call.
func (t *Telemetry) toolAttrs(st *invState, c *call, attrs []attribute.KeyValue) []attribute.KeyValue {
	attrs = append(attrs,
		attribute.String(keyOperationName, opExecuteTool),
		attribute.String(keyToolName, c.tool),
		attribute.String(keyToolDesc, c.desc),
		attribute.String(keyToolCallID, c.id),
		attribute.String(keyInvocationID, st.invID),
		attribute.String(keySessionID, st.sessionID),
		attribute.String(keyAppName, st.appName),
		attribute.String(keyUserID, st.userID),
	)
	if t.maxPayload > 0 {
		attrs = append(attrs, attribute.String(keyToolArgs, c.payload))
	}
	return attrs
}

// callAttrs appends all the attributes of a deferred call's span, in the
// order a span that is not deferred gets them: the call's, the answer's,
// the committed event's id, the tool's response.
func (t *Telemetry) callAttrs(st *invState, c *call, attrs []attribute.KeyValue) []attribute.KeyValue {
	if c.tool != "" {
		attrs = t.toolAttrs(st, c, attrs)
	} else {
		attrs = t.modelAttrs(st, c, attrs)
		if c.answer.ok {
			attrs = t.answerAttrs(c, attrs)
		}
	}
	if c.eventID != "" {
		attrs = append(attrs, attribute.String(keyEventID, c.eventID))
	}
	if c.response != "" {
		attrs = append(attrs, attribute.String(keyToolResponse, c.response))
	}
	return attrs
}

func (t *Telemetry) onModelError(ctx context.Context, cc *agent.CallbackContext, _ *model.Request, err error) (*model.Response, error) {
	st := t.state(cc.InvocationID())
	if st == nil {
		return nil, nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	i := st.modelLocked(cc)
	if i < 0 || st.models[i].failed {
		return nil, nil
	}
	c := st.models[i]
	// The span stays open in case a later callback recovers with a
	// response; otherwise the end of the invocation ends it.
	c.failed = true
	c.end = time.Now()
	c.span.RecordError(err)
	c.span.SetStatus(codes.Error, err.Error())
	c.span.SetAttributes(attribute.String(keyErrorType, errorType(err)))
	t.m.recordModelDuration(ctx, c, err)
	return nil, nil
}

// branchOf returns the branch of a tool's invocation, when its context
// tells.
func branchOf(tc tool.Context) string {
	if ic, ok := tc.(interface{ Invocation() *agent.Invocation }); ok && ic.Invocation() != nil {
		return ic.Invocation().Branch()
	}
	return ""
}

func (t *Telemetry) beforeTool(ctx context.Context, tc tool.Context, tl tool.Tool, args map[string]any) (map[string]any, error) {
	st := t.state(tc.InvocationID())
	if st == nil {
		return nil, nil
	}
	start := time.Now()
	var toolArgs string
	if t.maxPayload > 0 {
		toolArgs = t.payload(args)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	c := st.newCall()
	*c = call{start: start, agent: tc.AgentName(), branch: branchOf(tc), tool: tl.Name(), id: tc.FunctionCallID(),
		desc: tl.Description(), deferred: t.owned != nil, payload: toolArgs}
	parent, pctx := st.parentLocked(c.branch, c.agent)
	c.span, _ = t.start(ctx, parent, pctx, t.toolNames.of(tl.Name()), t.startAttrs(st, c))
	if i := st.toolLocked(c.id); i >= 0 {
		st.tools[i].finish(t, st)
		st.tools = without(st.tools, i)
	}
	st.tools = append(st.tools, c)
	return nil, nil
}

func (t *Telemetry) afterTool(ctx context.Context, tc tool.Context, _ tool.Tool, _, result map[string]any) (map[string]any, error) {
	st := t.state(tc.InvocationID())
	if st == nil {
		return nil, nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	i := st.toolLocked(tc.FunctionCallID())
	if i < 0 {
		return nil, nil
	}
	c := st.tools[i]
	if !c.failed {
		t.m.recordTool(ctx, c, nil)
	}
	c.end = time.Now()
	if t.maxPayload > 0 {
		c.result = result // unless the committed function response replaces it
	}
	return nil, nil
}

func (t *Telemetry) onToolError(ctx context.Context, tc tool.Context, _ tool.Tool, _ map[string]any, err error) (map[string]any, error) {
	st := t.state(tc.InvocationID())
	if st == nil {
		return nil, nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	i := st.toolLocked(tc.FunctionCallID())
	if i < 0 || st.tools[i].failed {
		return nil, nil
	}
	c := st.tools[i]
	c.failed = true
	c.end = time.Now()
	c.span.RecordError(err)
	c.span.SetStatus(codes.Error, err.Error())
	c.span.SetAttributes(attribute.String(keyErrorType, errorType(err)))
	t.m.recordTool(ctx, c, err)
	return nil, nil
}

// onEvent ends the spans of the model call and tool calls whose results the
// committed event carries, recording the event's id on them.
func (t *Telemetry) onEvent(ctx context.Context, inv *agent.Invocation, ev *event.Event) (*event.Event, error) {
	if ev.Partial {
		return nil, nil
	}
	st := t.state(inv.ID())
	if st == nil {
		return nil, nil
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	// The first event of an agent after its model answered is that answer.
	for i, c := range st.pending {
		if c.agent == ev.Author && c.branch == ev.Branch {
			if c.deferred {
				c.eventID = ev.ID
			} else if c.span.IsRecording() {
				c.span.SetAttributes(append(t.attrList(st, 1), attribute.String(keyEventID, ev.ID))...)
			}
			st.usage.Add(t.m.recordUsage(ctx, st.appName, c, ev, t.prices))
			c.finish(t, st)
			st.pending = without(st.pending, i)
			break
		}
	}
	var parts []*genai.Part
	if ev.Content != nil && len(st.tools) > 0 {
		parts = ev.Content.Parts
	}
	for _, p := range parts {
		if p == nil || p.FunctionResponse == nil {
			continue
		}
		fr := p.FunctionResponse
		i := st.toolLocked(fr.ID)
		if i < 0 {
			continue
		}
		c := st.tools[i]
		st.tools = without(st.tools, i)
		c.result = nil
		switch {
		case !c.span.IsRecording():
		case c.deferred:
			c.eventID = ev.ID
			if t.maxPayload > 0 {
				c.response = t.payload(fr.Response)
			}
		default:
			attrs := append(t.attrList(st, 1), attribute.String(keyEventID, ev.ID))
			if t.maxPayload > 0 {
				attrs = append(attrs, attribute.String(keyToolResponse, t.payload(fr.Response)))
			}
			c.span.SetAttributes(attrs...)
		}
		c.finish(t, st)
	}
	return nil, nil
}

// afterRun ends the invocation and whatever it left open.
func (t *Telemetry) afterRun(ctx context.Context, inv *agent.Invocation) {
	t.mu.Lock()
	st := t.invs[inv.ID()]
	delete(t.invs, inv.ID())
	t.mu.Unlock()
	if st == nil {
		return
	}
	st.endAll(ctx, t)
}

// endAll ends every open span of the invocation, innermost first, and
// records the invocation's metrics. Spans of calls that never finished are
// marked with the context's error when it is done.
func (st *invState) endAll(ctx context.Context, t *Telemetry) {
	cause := ctx.Err()
	unfinished := func(c *call) {
		if c.end.IsZero() && cause != nil && !c.failed {
			c.span.RecordError(cause)
			c.span.SetStatus(codes.Error, cause.Error())
			c.span.SetAttributes(attribute.String(keyErrorType, errorType(cause)))
		}
		c.finish(t, st)
	}
	st.mu.Lock()
	for _, c := range st.tools {
		unfinished(c)
	}
	for _, c := range st.models {
		unfinished(c)
	}
	for _, c := range st.pending {
		c.finish(t, st)
	}
	for i := len(st.agents) - 1; i >= 0; i-- {
		unfinished(st.agents[i])
	}
	st.tools, st.models, st.pending, st.agents = nil, nil, nil, nil
	usage := st.usage
	st.mu.Unlock()
	if cause != nil {
		st.span.RecordError(cause)
		st.span.SetStatus(codes.Error, cause.Error())
	}
	st.span.End()
	mctx := ctx // the metrics are recorded even if the run was cancelled
	if cause != nil {
		mctx = context.WithoutCancel(ctx)
	}
	t.m.recordInvocation(mctx, st.appName, st.rootAgent, time.Since(st.start), usage)
}

// payload returns v as JSON, truncated to the configured length.
func (t *Telemetry) payload(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return `{"error":` + quote(err.Error()) + `}`
	}
	return truncate(unsafe.String(&b[0], len(b)), t.maxPayload) // b is never written again
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// truncateMark ends a truncated payload.
const truncateMark = "...(truncated)"

// truncate cuts s to at most max bytes, on a rune boundary, marking the cut.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max - len(truncateMark)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + truncateMark
}

// commonFinishReasons are the reasons models give most, each as the list
// its attribute holds.
var commonFinishReasons = [][]string{{string(genai.FinishReasonStop)}, {string(genai.FinishReasonMaxTokens)},
	{string(genai.FinishReasonSafety)}, {string(genai.FinishReasonRecitation)},
	{string(genai.FinishReasonMalformedFunctionCall)}, {string(genai.FinishReasonOther)}}

// finishReasons are the finish-reason attributes of commonFinishReasons,
// made once: an attribute's value never changes, so spans share them.
var finishReasons = func() map[genai.FinishReason]attribute.KeyValue {
	m := map[genai.FinishReason]attribute.KeyValue{}
	for _, r := range commonFinishReasons {
		m[genai.FinishReason(r[0])] = attribute.StringSlice(keyFinishReasons, r)
	}
	return m
}()

// sharedFinishReason returns the list of kv if it is one of finishReasons,
// without the copy attribute.Value.AsStringSlice makes.
func sharedFinishReason(kv attribute.KeyValue) ([]string, bool) {
	if kv.Key != keyFinishReasons {
		return nil, false
	}
	for _, r := range commonFinishReasons {
		if kv == finishReasons[genai.FinishReason(r[0])] {
			return r, true
		}
	}
	return nil, false
}

// finishReasonAttr is the attribute recording a model response's finish
// reason, as a one-element list.
func finishReasonAttr(r genai.FinishReason) attribute.KeyValue {
	if kv, ok := finishReasons[r]; ok {
		return kv
	}
	return attribute.StringSlice(keyFinishReasons, []string{string(r)})
}

// maxSpanNames bounds the names a spanNames keeps.
const maxSpanNames = 1024

// spanNames makes the names of the spans of one kind, its prefix, a space
// and an agent's or tool's name, once per name.
type spanNames struct {
	prefix string
	mu     sync.RWMutex
	names  map[string]string // by agent or tool name
}

// of returns the span name for name.
func (n *spanNames) of(name string) string {
	n.mu.RLock()
	s, ok := n.names[name]
	n.mu.RUnlock()
	if ok {
		return s
	}
	s = n.prefix + " " + name
	n.mu.Lock()
	if n.names == nil {
		n.names = map[string]string{}
	}
	if len(n.names) < maxSpanNames {
		n.names[name] = s
	}
	n.mu.Unlock()
	return s
}
