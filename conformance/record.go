package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/tool"
)

// recordState is the recording of one invocation.
type recordState struct {
	mu      sync.Mutex
	cfg     config
	dir     string
	order   []*Recording
	llm     map[string]*Recording // pending model call, by agent
	pending map[string]*Recording // pending tool call, by call id
	slots   map[string]int        // first place in order of a response's tool calls, by event id
}

// Record returns the recording plugin: for an invocation whose state
// holds _adk_recordings_config (or temp:_adk_recordings_config), it
// appends every model call and tool call of every agent to the case's
// recordings file when the invocation ends, in ADK's current schema
// (llm_responses). A nil o is the zero Options.
func Record(o *Options) *plugin.Plugin {
	if o == nil {
		o = &Options{}
	}
	r := &recorder{o: o}
	p := &plugin.Plugin{Name: "adk_recordings"}
	p.ReadOnlyModelHooks = true
	p.BeforeRun = r.beforeRun
	p.BeforeModel = []agent.BeforeModelCallback{r.beforeModel}
	p.AfterModel = []agent.AfterModelCallback{r.afterModel}
	p.BeforeTool = []agent.BeforeToolCallback{r.beforeTool}
	p.AfterTool = []agent.AfterToolCallback{r.afterTool}
	p.AfterRun = r.afterRun
	return p
}

// recorder is the recording plugin's state: what each recorded
// invocation has recorded so far.
type recorder struct {
	o *Options
	byInvocation[recordState]
}

// beforeRun starts recording an invocation whose state asks for it.
func (r *recorder) beforeRun(ctx context.Context, cc *agent.CallbackContext) (*genai.Content, error) {
	cfg, ok, err := readConfig(cc.State(), "temp:"+RecordingConfigKey, RecordingConfigKey)
	if err != nil || !ok {
		return nil, err
	}
	dir, err := r.o.resolve(cfg.dir)
	if err != nil {
		return nil, err
	}
	r.put(cc.InvocationID(), &recordState{cfg: cfg, dir: dir, llm: map[string]*Recording{}, pending: map[string]*Recording{}, slots: map[string]int{}})
	return nil, nil
}

// beforeModel records the request of an agent's model call.
func (r *recorder) beforeModel(ctx context.Context, cc *agent.CallbackContext, req *model.Request) (*model.Response, error) {
	st := r.get(cc.InvocationID())
	if st == nil {
		return nil, nil
	}
	tree, err := RequestTree(req)
	if err != nil {
		return nil, err
	}
	rec := &Recording{UserMessageIndex: st.cfg.index, AgentName: cc.AgentName(), LLM: &LLMRecording{Request: tree}}
	st.mu.Lock()
	st.llm[cc.AgentName()] = rec
	st.mu.Unlock()
	return nil, nil
}

// afterModel records a response of the agent's model call; the complete
// response ends the call's recording.
func (r *recorder) afterModel(ctx context.Context, cc *agent.CallbackContext, resp *model.Response) (*model.Response, error) {
	st := r.get(cc.InvocationID())
	if st == nil {
		return nil, nil
	}
	tree, err := responseTree(resp)
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	if rec := st.llm[cc.AgentName()]; rec != nil {
		rec.LLM.Responses = append(rec.LLM.Responses, tree)
		if !resp.Partial {
			// In the order the complete responses came, which is the
			// order their events are committed, and the replay's.
			delete(st.llm, cc.AgentName())
			st.order = append(st.order, rec)
		}
	}
	st.mu.Unlock()
	return nil, nil
}

// beforeTool records a tool call, in its place among the calls of its
// model response.
func (r *recorder) beforeTool(ctx context.Context, tc tool.Context, t tool.Tool, args map[string]any) (map[string]any, error) {
	st := r.get(tc.InvocationID())
	if st == nil || tc.FunctionCallID() == "" {
		return nil, nil
	}
	rec := &Recording{UserMessageIndex: st.cfg.index, AgentName: tc.AgentName(),
		Tool: &ToolRecording{Call: &genai.FunctionCall{ID: tc.FunctionCallID(), Name: t.Name(), Args: args}}}
	evID, pos, n, placed := callPlace(tc)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.pending[tc.FunctionCallID()] = rec
	if !placed {
		st.order = append(st.order, rec)
		return nil, nil
	}
	// In call order (see callPlace); places of calls that never reach the
	// tool stay empty.
	base, ok := st.slots[evID]
	if !ok {
		base = len(st.order)
		st.slots[evID] = base
		st.order = append(st.order, make([]*Recording, n)...)
	}
	st.order[base+pos] = rec
	return nil, nil
}

// afterTool records the result of a tool call.
func (r *recorder) afterTool(ctx context.Context, tc tool.Context, t tool.Tool, args, result map[string]any) (map[string]any, error) {
	st := r.get(tc.InvocationID())
	if st == nil {
		return nil, nil
	}
	st.mu.Lock()
	if rec := st.pending[tc.FunctionCallID()]; rec != nil {
		rec.Tool.Response = &genai.FunctionResponse{ID: tc.FunctionCallID(), Name: t.Name(), Response: result}
		delete(st.pending, tc.FunctionCallID())
	}
	st.mu.Unlock()
	return nil, nil
}

// afterRun saves the recordings of an invocation that ends.
func (r *recorder) afterRun(_ context.Context, inv *agent.Invocation) {
	st := r.take(inv.ID())
	if st == nil {
		return
	}
	if err := st.save(); err != nil {
		slog.Error("conformance: saving recordings", "dir", st.dir, "err", err)
	}
}

// save appends the complete recordings of the invocation to the case's
// recordings file.
func (s *recordState) save() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var all Recordings
	if _, err := os.Stat(RecordingsPath(s.dir, s.cfg.streaming)); err == nil {
		old, err := LoadRecordings(s.dir, s.cfg.streaming)
		if err != nil {
			return err
		}
		all = *old
	}
	for _, r := range s.order {
		switch {
		case r == nil:
		case r.LLM != nil && len(r.LLM.Responses) > 0, r.Tool != nil && r.Tool.Response != nil:
			all.Recordings = append(all.Recordings, *r)
		}
	}
	return WriteYAML(RecordingsPath(s.dir, s.cfg.streaming), all)
}

func responseTree(resp *model.Response) (map[string]any, error) {
	b, err := json.Marshal(resp)
	if err != nil {
		return nil, fmt.Errorf("conformance: model response: %w", err)
	}
	var tree map[string]any
	if err := json.Unmarshal(b, &tree); err != nil {
		return nil, err
	}
	m, _ := Normalize(tree).(map[string]any)
	return m, nil
}

// byInvocation holds a plugin's state of each invocation it follows, by
// invocation id; the zero value is empty and ready.
type byInvocation[T any] struct {
	mu     sync.Mutex
	states map[string]*T
}

// get returns the state of the invocation id, or nil when the plugin
// follows nothing there.
func (b *byInvocation[T]) get(id string) *T {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.states[id]
}

// put starts following the invocation id with st.
func (b *byInvocation[T]) put(id string, st *T) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.states == nil {
		b.states = map[string]*T{}
	}
	b.states[id] = st
}

// take stops following the invocation id and returns its state, or nil.
func (b *byInvocation[T]) take(id string) *T {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.states[id]
	delete(b.states, id)
	return st
}
