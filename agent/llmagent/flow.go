package llmagent

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/tool"
)

// This file is the model ↔ tool loop.

// run is the agent's body: steps until a final answer, a transfer, a pause
// or an error.
func (a *Agent) run(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
	return func(yield func(*event.Event, error) bool) {
		var next agent.Agent
		ok := true
		if inv.Resuming() { // continue from this invocation's log (resume.go)
			next, ok = a.resume(ctx, inv, yield)
			inv = inv.Fresh()
		} else if ans := inv.Answers(); len(ans) > 0 {
			// Run afresh by a parent that does not resume from the log,
			// with answers to its paused calls: continue from the first.
			next, ok = a.resume(ctx, inv.ResumeFrom(ans[0].CallIndex), yield)
		}
		if !ok {
			return
		}
		files := &fileCache{} // the model calls of this run share their loads
		for next == nil && !inv.Ended() {
			next, ok = a.step(ctx, inv, files, yield)
			if !ok {
				return
			}
		}
		if next == nil || next == a {
			return // final answer, pause, or ended
		}
		// Transfer: the target answers in the same invocation.
		for ev, err := range next.Run(ctx, inv.For(next)) {
			if !yield(ev, err) || err != nil {
				return
			}
		}
	}
}

// step makes one model call and runs its function calls. It returns the
// agent to continue with: nil to call the model again, a itself to stop, or
// a transfer target. ok is false when the caller must stop at once.
func (a *Agent) step(ctx context.Context, inv *agent.Invocation, files *fileCache, yield func(*event.Event, error) bool) (next agent.Agent, ok bool) {
	tools, order, err := a.resolveTools(ctx, inv)
	if err != nil {
		yield(nil, err)
		return nil, false
	}
	cc := agent.NewCallbackContext(inv)
	req, err := a.buildRequest(ctx, inv, cc, tools, order, files)
	if err != nil {
		yield(nil, err)
		return nil, false
	}
	// One id for the model call, as in ADK: its partial events and the
	// complete event that ends it share it, so clients can tell the chunks
	// of one response from the next.
	callEventID := event.NewID()
	resp, called, ok := a.callModel(ctx, inv, cc, req, callEventID, yield)
	if !ok {
		return nil, false
	}
	ev := inv.NewEvent()
	ev.ID = callEventID
	ev.Response = *resp
	ev.Partial = false
	if called {
		ev.LLMCall = true // counted again when the invocation resumes
	}
	if a.cfg.Planner != nil && resp.Content != nil {
		if parts := a.cfg.Planner.ProcessResponse(ctx, cc, resp.Content.Parts); parts != nil {
			ev.Content = &genai.Content{Role: resp.Content.Role, Parts: parts}
		}
	}
	ev.Actions = cc.TakeActions()
	if exec := a.localExecutor(); exec != nil && len(ev.FunctionCalls()) == 0 && ev.ErrorCode == "" {
		if content, code, found := extractCode(ev.Content); found && a.codeRetriesLeft(inv) {
			ev.Content = content
			if !yield(ev, nil) {
				return nil, false
			}
			resEv, err := a.runCode(ctx, inv, exec, code)
			if err != nil {
				yield(nil, err)
				return nil, false
			}
			return nil, yield(resEv, nil)
		}
	}
	calls := ev.FunctionCalls()
	for _, fc := range calls {
		if fc.ID == "" {
			fc.ID = event.NewCallID()
		}
		if t, ok := tools[fc.Name]; ok {
			if lr, ok := t.(tool.LongRunning); ok && lr.IsLongRunning() {
				ev.LongRunningToolIDs = append(ev.LongRunningToolIDs, fc.ID)
			}
		}
	}
	if len(calls) == 0 && ev.ErrorCode == "" {
		if err := a.setOutput(ev); err != nil {
			yield(nil, err)
			return nil, false
		}
	}
	if !yield(ev, nil) {
		return nil, false
	}
	if len(calls) == 0 {
		return a, true
	}
	// A long-running call pauses the invocation once its tool ran: in a
	// resumable application always, as ADK pauses there; otherwise only
	// while its tool has given no result (afterCalls), and an interim
	// result goes back to the model, as in ADK's loop. Either way the call
	// stays pending until the client's answer (agent.Pending).
	return a.afterCalls(ctx, inv, calls, nil, tools, len(ev.LongRunningToolIDs) > 0 && inv.Resumable(), yield)
}

// afterCalls runs function calls (with the confirmation answers, if any),
// commits their responses, asks for confirmations the calls need, and
// decides how the agent goes on. longRunning says that a pausing call of
// the agent waits for the client; a long-running call whose tool returned
// nothing among calls makes it so.
func (a *Agent) afterCalls(ctx context.Context, inv *agent.Invocation, calls []*genai.FunctionCall, answers []agent.ToolResume,
	tools map[string]tool.Tool, longRunning bool, yield func(*event.Event, error) bool) (next agent.Agent, ok bool) {
	resEv := a.runCalls(ctx, inv, calls, answers, tools)
	if resEv != nil && !yield(resEv, nil) {
		return nil, false
	}
	if resEv != nil && len(resEv.StartedCalls()) > 0 {
		longRunning = true
	}
	if final, err := a.structuredAnswer(inv, tools, resEv); err != nil || final != nil {
		if err != nil {
			yield(nil, err)
			return nil, false
		}
		if !yield(final, nil) {
			return nil, false
		}
		return a, true
	}
	if resEv != nil && (len(resEv.Actions.RequestedToolConfirmations) > 0 || len(resEv.Actions.RequestedAuthConfigs) > 0) {
		if !yield(clientRequests(inv, calls, &resEv.Actions), nil) {
			return nil, false
		}
		longRunning = true
	}
	if longRunning {
		// Paused until the client answers the long-running call or the
		// confirmation: the whole invocation stops, so enclosing workflows
		// do not run ahead.
		inv.End()
		return a, true
	}
	if resEv == nil {
		return a, true
	}
	if target := resEv.Actions.TransferToAgent; target != "" {
		t, err := a.transferTarget(inv, target)
		if err != nil {
			yield(nil, err)
			return nil, false
		}
		return t, true
	}
	if resEv.Actions.SkipSummarization {
		return a, true
	}
	return nil, true
}

// callModel runs the before-model callbacks, the model (streaming partial
// events through yield) and the after-model callbacks, and returns the
// complete response. called reports that the model was called (counted by
// CountLLMCall): false when a before-model callback answered instead.
// Partial events get the id eventID.
func (a *Agent) callModel(ctx context.Context, inv *agent.Invocation, cc *agent.CallbackContext, req *model.Request, eventID string,
	yield func(*event.Event, error) bool) (resp *model.Response, called, ok bool) {
	if a.callbacksMayEdit(inv) {
		req.Contents = cloneContents(req.Contents)
	}
	for _, cb := range chain(inv.Callbacks().BeforeModel, a.cfg.BeforeModel) {
		resp, err := cb(ctx, cc, req)
		if err != nil {
			yield(nil, fmt.Errorf("llmagent: %s: before-model callback: %w", a.Name(), err))
			return nil, false, false
		}
		if resp != nil {
			resp, ok := a.afterModel(ctx, inv, cc, resp, yield)
			return resp, false, ok
		}
	}
	if err := inv.CountLLMCall(); err != nil {
		yield(nil, err)
		return nil, false, false
	}
	resp, ok = a.generate(ctx, inv, cc, req, eventID, yield)
	return resp, true, ok
}

// callbacksMayEdit reports whether callbacks that may change a model
// request in place will see it: the agent's own before-model and
// model-error callbacks, and the global ones unless they are read-only
// (agent.Callbacks.ReadOnlyModelHooks).
func (a *Agent) callbacksMayEdit(inv *agent.Invocation) bool {
	global := inv.Callbacks()
	return len(a.cfg.BeforeModel) > 0 || len(a.cfg.OnModelError) > 0 ||
		!global.ReadOnlyModelHooks && (len(global.BeforeModel) > 0 || len(global.OnModelError) > 0)
}

// cloneContents returns a deep copy of contents, in a slice of its own.
func cloneContents(contents []*genai.Content) []*genai.Content {
	out := make([]*genai.Content, len(contents))
	for i, c := range contents {
		out[i] = event.CloneContent(c)
	}
	return out
}

// generate calls the model, streaming partial events (with the id
// eventID) through yield, and runs the model-error or after-model
// callbacks on what it returned.
func (a *Agent) generate(ctx context.Context, inv *agent.Invocation, cc *agent.CallbackContext, req *model.Request, eventID string,
	yield func(*event.Event, error) bool) (*model.Response, bool) {
	// The loop body sets only st and leaves by break: every variable it
	// captured or returned from would take an allocation of its own.
	var st struct {
		final *model.Response
		plan  *planReActStream // marks streamed plan text as thought
		agg   *aggregator
		done  bool // the body decided the outcome: out and ok
		out   *model.Response
		ok    bool
	}
	for resp, err := range a.cfg.Model.Generate(ctx, req, inv.RunConfig().Streaming) {
		if err != nil {
			st.out, st.ok = a.modelError(ctx, inv, cc, req, err, yield)
			st.done = true
			break
		}
		if resp == nil {
			continue
		}
		if resp.Partial {
			if st.agg == nil {
				st.agg = &aggregator{}
			}
			st.agg.add(resp)
			pe := inv.NewEvent()
			pe.ID = eventID
			pe.Response = *resp
			if _, ok := a.cfg.Planner.(PlanReActPlanner); ok {
				if st.plan == nil {
					st.plan = &planReActStream{}
				}
				pe.Content = st.plan.process(resp.Content)
			}
			if !yield(pe, nil) {
				st.done = true // out, ok = nil, false
				break
			}
			continue
		}
		st.final = resp
	}
	if st.done {
		return st.out, st.ok
	}
	final := st.final
	if final == nil && st.agg != nil {
		final = st.agg.response()
	}
	if final == nil {
		yield(nil, fmt.Errorf("llmagent: %s: %w", a.Name(), model.ErrNoResponse))
		return nil, false
	}
	return a.afterModel(ctx, inv, cc, final, yield)
}

// modelError runs the model-error callbacks on err: the first response one
// returns replaces the model's; without one, err ends the step.
func (a *Agent) modelError(ctx context.Context, inv *agent.Invocation, cc *agent.CallbackContext, req *model.Request, err error,
	yield func(*event.Event, error) bool) (*model.Response, bool) {
	for _, cb := range chain(inv.Callbacks().OnModelError, a.cfg.OnModelError) {
		r, cbErr := cb(ctx, cc, req, err)
		if cbErr != nil {
			yield(nil, fmt.Errorf("llmagent: %s: model-error callback: %w", a.Name(), cbErr))
			return nil, false
		}
		if r != nil {
			return a.afterModel(ctx, inv, cc, r, yield)
		}
	}
	yield(nil, fmt.Errorf("llmagent: %s: model %s: %w", a.Name(), a.cfg.Model.Name(), err))
	return nil, false
}

func (a *Agent) afterModel(ctx context.Context, inv *agent.Invocation, cc *agent.CallbackContext, resp *model.Response, yield func(*event.Event, error) bool) (*model.Response, bool) {
	for _, cb := range chain(inv.Callbacks().AfterModel, a.cfg.AfterModel) {
		r, err := cb(ctx, cc, resp)
		if err != nil {
			yield(nil, fmt.Errorf("llmagent: %s: after-model callback: %w", a.Name(), err))
			return nil, false
		}
		if r != nil {
			return r, true
		}
	}
	return resp, true
}

// aggregator joins streamed chunks for models that end a stream without an
// aggregated response. It is linear in the size of the output.
type aggregator struct {
	text, thought strings.Builder
	calls         []*genai.Part
	last          *model.Response
}

func (g *aggregator) add(r *model.Response) {
	g.last = r
	if r.Content == nil {
		return
	}
	for _, p := range r.Content.Parts {
		switch {
		case p == nil:
		case p.FunctionCall != nil || p.Text == "":
			g.calls = append(g.calls, p) // calls and non-text parts (code, its result, data), in order
		case p.Thought:
			g.thought.WriteString(p.Text)
		default:
			g.text.WriteString(p.Text)
		}
	}
}

func (g *aggregator) response() *model.Response {
	r := *g.last
	r.Partial = false
	c := &genai.Content{Role: genai.RoleModel}
	if g.thought.Len() > 0 {
		c.Parts = append(c.Parts, &genai.Part{Text: g.thought.String(), Thought: true})
	}
	if g.text.Len() > 0 {
		c.Parts = append(c.Parts, &genai.Part{Text: g.text.String()})
	}
	c.Parts = append(c.Parts, g.calls...)
	r.Content = c
	return &r
}

// setOutput stores the final answer under the output key, validating it
// against the output schema if there is one.
func (a *Agent) setOutput(ev *event.Event) error {
	if a.cfg.OutputKey == "" && a.schema == nil {
		return nil
	}
	text := ev.Text()
	var value any = text
	if a.schema != nil {
		var v any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			return fmt.Errorf("llmagent: %s: output is not valid JSON: %w", a.Name(), err)
		}
		if err := a.schema.Validate(v); err != nil {
			return fmt.Errorf("llmagent: %s: output does not match the output schema: %w", a.Name(), err)
		}
		value = v
	}
	if a.cfg.OutputKey == "" || (text == "" && ev.Content == nil) {
		return nil
	}
	if ev.Actions.StateDelta == nil {
		ev.Actions.StateDelta = map[string]any{}
	}
	ev.Actions.StateDelta[a.cfg.OutputKey] = value
	return nil
}

// callResult is the outcome of one function call.
type callResult struct {
	part    *genai.Part
	actions event.Actions
	started bool // a long-running tool ran and returned nothing yet
}

// runCalls runs the function calls of one model response, concurrently when
// there are several, and merges their responses into one event in call
// order. Long-running tools that ran and returned nothing are recorded in
// the event's custom metadata (event.MetadataStartedCalls). It returns nil
// when there is nothing to commit.
func (a *Agent) runCalls(ctx context.Context, inv *agent.Invocation, calls []*genai.FunctionCall, answers []agent.ToolResume, tools map[string]tool.Tool) *event.Event {
	// One call (the usual case) runs without the goroutine, whose captures
	// would move the result and its slice to the heap.
	var one [1]callResult
	var results []callResult
	if len(calls) == 1 {
		one[0] = a.runCall(ctx, inv, calls[0], answerAt(answers, 0), tools)
		results = one[:]
	} else {
		many := make([]callResult, len(calls))
		panics := agent.Concurrently(len(calls), func(i int) {
			many[i] = a.runCall(ctx, inv, calls[i], answerAt(answers, i), tools)
		})
		for i, p := range panics {
			// A panic of a callback, which would end the process on its
			// goroutine, becomes the call's error response, as a tool's
			// own panic does.
			if p != nil {
				fc := calls[i]
				many[i] = callResult{part: &genai.Part{FunctionResponse: &genai.FunctionResponse{
					ID: fc.ID, Name: fc.Name, Response: errorResult(fmt.Errorf("tool %q: a callback panicked: %v", fc.Name, p.Value))}}}
			}
		}
		results = many
	}
	ev := inv.NewEvent()
	if len(results) == 1 {
		c := &struct {
			content genai.Content
			parts   [1]*genai.Part
		}{content: genai.Content{Role: genai.RoleUser}}
		c.content.Parts = c.parts[:0]
		ev.Content = &c.content
	} else {
		ev.Content = &genai.Content{Role: genai.RoleUser}
	}
	var started []string
	for i, r := range results {
		if r.part != nil {
			ev.Content.Parts = append(ev.Content.Parts, r.part)
		}
		if r.started {
			started = append(started, calls[i].ID)
		}
		ev.Actions.Merge(&r.actions)
	}
	if started != nil {
		// Recorded so that resuming after a crash does not start them again.
		ev.CustomMetadata = map[string]any{event.MetadataStartedCalls: started}
	}
	if len(ev.Content.Parts) == 0 {
		if ev.Actions.IsZero() && started == nil {
			return nil
		}
		ev.Content = nil
	}
	return ev
}

// answerAt returns the answer to call i, if there are answers.
func answerAt(answers []agent.ToolResume, i int) agent.ToolResume {
	if answers == nil {
		return agent.ToolResume{}
	}
	return answers[i]
}

// RejectedMessage is the error a model receives for a tool call a person
// rejected.
const RejectedMessage = "This tool call is rejected."

// PendingConfirmationMessage is the error that answers a call while it
// waits for a person's approval, as ADK answers it. Once the call has run
// (or been rejected), the model sees only that final response.
const PendingConfirmationMessage = "This tool call requires confirmation, please approve or reject."

// runCall runs one function call with its callbacks. Unknown tools, tool
// errors and panics become error responses the model can read. A call that
// needs a confirmation it does not have records the request in the actions
// and is answered, for now, by PendingConfirmationMessage (or by the result
// of a tool that asked from inside Run), as in ADK; one that needs a
// credential records the request and produces no response. resume carries
// the client's answer when the call runs again after such a request.
func (a *Agent) runCall(ctx context.Context, inv *agent.Invocation, fc *genai.FunctionCall, resume agent.ToolResume, tools map[string]tool.Tool) callResult {
	tc := agent.NewResumedToolContext(inv, fc.ID, resume)
	answer := resume.Confirmation
	// The call's arguments are its own: callbacks and the tool may change
	// them, and the committed call (the event its caller received, and the
	// model history built from it) stays as the model made it.
	args := event.CloneMap(fc.Args)
	if args == nil {
		args = map[string]any{}
	}
	respond := func(result map[string]any) callResult {
		p := &struct { // one allocation for the part and its response
			part genai.Part
			resp genai.FunctionResponse
		}{resp: genai.FunctionResponse{ID: fc.ID, Name: fc.Name, Response: result}}
		p.part.FunctionResponse = &p.resp
		return callResult{part: &p.part, actions: tc.TakeActions()}
	}
	held, ok := tools[fc.Name]
	if !ok {
		return respond(errorResult(fmt.Errorf("tool %q not found; available tools: %s", fc.Name, toolNames(tools))))
	}
	t, ok := held.(tool.Function)
	if !ok {
		return respond(errorResult(fmt.Errorf("tool %q is not a function and cannot be called", fc.Name)))
	}
	pending := func() callResult { return callResult{actions: tc.TakeActions()} }
	switch {
	case answer != nil && !answer.Confirmed:
		return respond(map[string]any{"error": RejectedMessage})
	case answer == nil:
		if c, ok := t.(tool.Confirmable); ok {
			if required, hint := c.ConfirmationRequired(ctx, args); required {
				tc.RequestConfirmation(hint, nil)
				return respond(map[string]any{"error": PendingConfirmationMessage}) // fails closed: the tool does not run
			}
		}
	}
	for _, cb := range chain(inv.Callbacks().BeforeTool, a.cfg.BeforeTool) {
		res, err := cb(ctx, tc, t, args)
		if err != nil {
			return respond(errorResult(fmt.Errorf("before-tool callback: %w", err)))
		}
		if res != nil {
			return respond(res)
		}
	}
	res, media, err := safeRun(ctx, t, tc, args)
	if err != nil {
		media = nil
	}
	if answer == nil && tc.ConfirmationRequested() {
		// The tool asked for approval: what it returned is the interim
		// response; it runs again once approved.
		if err != nil || res == nil {
			res = map[string]any{"error": PendingConfirmationMessage}
		}
		return respond(res)
	}
	if resume.Credential == nil && tc.CredentialRequested() {
		return pending() // the tool asked the client for credentials: its result waits
	}
	if err != nil {
		for _, cb := range chain(inv.Callbacks().OnToolError, a.cfg.OnToolError) {
			r, cbErr := cb(ctx, tc, t, args, err)
			if cbErr != nil {
				err = fmt.Errorf("tool-error callback: %w", cbErr)
				break
			}
			if r != nil {
				res, err = r, nil
				break
			}
		}
		if err != nil {
			return respond(errorResult(err))
		}
	}
	for _, cb := range chain(inv.Callbacks().AfterTool, a.cfg.AfterTool) {
		r, err := cb(ctx, tc, t, args, res)
		if err != nil {
			return respond(errorResult(fmt.Errorf("after-tool callback: %w", err)))
		}
		if r != nil {
			res = r
			break
		}
	}
	if res == nil && media == nil {
		if lr, ok := t.(tool.LongRunning); ok && lr.IsLongRunning() {
			// A long-running tool with nothing to say yet: the client sends
			// the response later.
			return callResult{actions: tc.TakeActions(), started: true}
		}
		res = map[string]any{}
	}
	r := respond(res)
	r.part.FunctionResponse.Parts = media // the tool's media, whatever the callbacks made of its JSON
	return r
}

// safeRun runs a tool, turning a panic into an error.
// A tool.MediaTool runs through RunMedia, and its media come back too.
func safeRun(ctx context.Context, t tool.Function, tc tool.Context, args map[string]any) (res map[string]any, media []*genai.FunctionResponsePart, err error) {
	run := func() { res, err = t.Run(ctx, tc, args) }
	if mt, ok := t.(tool.MediaTool); ok {
		run = func() { res, media, err = mt.RunMedia(ctx, tc, args) }
	}
	if p := agent.Safely(run); p != nil {
		return nil, nil, fmt.Errorf("tool %q panicked: %v", t.Name(), p.Value)
	}
	return res, media, err
}

func errorResult(err error) map[string]any { return map[string]any{"error": err.Error()} }

func toolNames(tools map[string]tool.Tool) string {
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sortStrings(names)
	return strings.Join(names, ", ")
}

// chain returns the global callbacks followed by the agent's own, without
// allocating when there are no global ones.
func chain[T any](global, own []T) []T {
	if len(global) == 0 {
		return own
	}
	return append(slices.Clip(global), own...)
}

// clientRequests builds the event that asks the client to confirm tool calls
// or to supply credentials: one adk_request_confirmation or
// adk_request_credential call per waiting call, in call order, each
// long-running so that the invocation pauses.
func clientRequests(inv *agent.Invocation, calls []*genai.FunctionCall, actions *event.Actions) *event.Event {
	ev := inv.NewEvent()
	ev.Content = &genai.Content{Role: genai.RoleModel}
	add := func(name string, args map[string]any) {
		id := event.NewCallID()
		ev.Content.Parts = append(ev.Content.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{ID: id, Name: name, Args: args}})
		ev.LongRunningToolIDs = append(ev.LongRunningToolIDs, id)
	}
	for _, fc := range calls {
		orig := map[string]any{"id": fc.ID, "name": fc.Name, "args": event.CloneMap(fc.Args)}
		if conf, ok := actions.RequestedToolConfirmations[fc.ID]; ok {
			confJSON := map[string]any{"hint": conf.Hint, "confirmed": false}
			if conf.Payload != nil {
				confJSON["payload"] = conf.Payload
			}
			add(event.FunctionRequestConfirmation, map[string]any{agent.ArgOriginalCall: orig, "toolConfirmation": confJSON})
		}
		if cfg, ok := actions.RequestedAuthConfigs[fc.ID]; ok {
			add(event.FunctionRequestCredential, map[string]any{agent.ArgOriginalCall: orig, "authConfig": cfg})
		}
	}
	return ev
}
