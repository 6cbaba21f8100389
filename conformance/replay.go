package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/agenttool"
)

// ErrReplay is wrapped by the errors of a replayed run that departs from
// its recordings: a request that differs, or one more than recorded.
var ErrReplay = errors.New("conformance: replay mismatch")

// Options restrict the case directories the plugins read and write.
type Options struct {
	// Roots are the directories case directories must lie in; a request
	// naming another directory fails. A relative directory in a request
	// is relative to the working directory, as ADK's servers read it.
	// Empty: the working directory.
	Roots []string
}

// config is the value of _adk_replay_config or _adk_recordings_config.
type config struct {
	dir       string
	index     int
	streaming string
}

// readConfig reads a protocol config from state; ok is false when the key
// is absent or does not name a directory and a message index.
func readConfig(st tool.State, keys ...string) (config, bool, error) {
	for _, key := range keys {
		v, ok := st.Get(key)
		if !ok || v == nil {
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return config{}, false, fmt.Errorf("conformance: %s is not an object", key)
		}
		dir, _ := m["dir"].(string)
		idx, ok := number(m["user_message_index"])
		if dir == "" || !ok {
			return config{}, false, nil
		}
		streaming, _ := m["streaming_mode"].(string)
		if streaming == "" {
			streaming = StreamingNone
		}
		if streaming != StreamingNone && streaming != StreamingSSE {
			return config{}, false, fmt.Errorf("conformance: %s: unsupported streaming mode %q", key, streaming)
		}
		return config{dir: dir, index: idx, streaming: streaming}, true, nil
	}
	return config{}, false, nil
}

func number(v any) (int, bool) {
	switch x := v.(type) {
	case float64:
		if x == float64(int(x)) && x >= 0 {
			return int(x), true
		}
	case int:
		return x, x >= 0
	case int64:
		return int(x), x >= 0
	case json.Number:
		n, err := x.Int64()
		return int(n), err == nil && n >= 0
	}
	return 0, false
}

// resolve checks that dir lies in one of the roots and returns it
// absolute.
func (o *Options) resolve(dir string) (string, error) {
	roots := o.Roots
	if len(roots) == 0 {
		roots = []string{"."}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	for _, r := range roots {
		ra, err := filepath.Abs(r)
		if err != nil {
			continue
		}
		if real, err := filepath.EvalSymlinks(ra); err == nil {
			ra = real
		}
		if rel, err := filepath.Rel(ra, abs); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return abs, nil
		}
	}
	return "", fmt.Errorf("conformance: case directory %s is outside the allowed directories", dir)
}

// replayState is the replay of one invocation.
type replayState struct {
	mu    sync.Mutex
	cfg   config
	recs  *Recordings
	llm   map[string]int // next model recording, by agent
	tools map[string]int // next tool recording, by agent
	calls map[string]int // first tool recording of a response's calls, by event id

	// Model answers go out in the order of the recordings, which is the
	// order ADK committed them: an agent running beside others (a
	// Parallel branch) waits until the events of the answers recorded
	// before its own are committed. answered and committed count, by
	// agent, the answers given and the model events committed after them.
	turn      *sync.Cond // on mu
	answered  map[string]int
	committed map[string]int
	late      bool // a wait timed out: the run departs from the recordings, nobody waits any more
}

// inTurnWait bounds the wait for earlier recordings: a run that departs
// from them does not hang, it fails on its own mismatch.
const inTurnWait = 5 * time.Second

// waitTurn waits until the model events of the recordings before the
// i-th model recording of agentName at this user message are committed,
// then counts its answer as given.
func (s *replayState) waitTurn(agentName string, i int) {
	var before []struct {
		agent string
		n     int
	}
	seen := map[string]int{}
	for _, r := range s.recs.Recordings {
		if r.UserMessageIndex != s.cfg.index || r.LLM == nil {
			continue
		}
		n := seen[r.AgentName]
		seen[r.AgentName] = n + 1
		if r.AgentName == agentName {
			if n == i {
				break
			}
			continue
		}
		before = append(before, struct {
			agent string
			n     int
		}{r.AgentName, n})
	}
	timer := time.AfterFunc(inTurnWait, func() {
		s.mu.Lock()
		s.late = true
		s.turn.Broadcast()
		s.mu.Unlock()
	})
	defer timer.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.late {
		ready := true
		for _, b := range before {
			if s.committed[b.agent] <= b.n {
				ready = false
				break
			}
		}
		if ready {
			break
		}
		s.turn.Wait()
	}
	s.answered[agentName]++
}

// committedEvent counts a committed event of an agent whose model answer
// was given and whose event is not yet counted.
func (s *replayState) committedEvent(author string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.answered[author] > s.committed[author] {
		s.committed[author]++
		s.turn.Broadcast()
	}
}

// Replay returns the replay plugin: for an invocation whose state holds
// _adk_replay_config, it answers model and tool calls from the case's
// recordings (see the package documentation). Invocations without it run
// as usual. A nil o is the zero Options.
func Replay(o *Options) *plugin.Plugin {
	if o == nil {
		o = &Options{}
	}
	r := &replayer{o: o}
	p := &plugin.Plugin{Name: "adk_replay"}
	p.ReadOnlyModelHooks = true
	p.BeforeRun = r.beforeRun
	p.OnEvent = r.onEvent
	p.AfterRun = r.afterRun
	p.BeforeModel = []agent.BeforeModelCallback{r.beforeModel}
	p.BeforeTool = []agent.BeforeToolCallback{r.beforeTool}
	return p
}

// replayer is the replay plugin's state: the recordings each replayed
// invocation answers from, and how far it got.
type replayer struct {
	o *Options
	byInvocation[replayState]
}

// beforeRun loads the recordings of an invocation whose state asks for a
// replay.
func (r *replayer) beforeRun(ctx context.Context, cc *agent.CallbackContext) (*genai.Content, error) {
	cfg, ok, err := readConfig(cc.State(), ReplayConfigKey)
	if err != nil || !ok {
		return nil, err
	}
	dir, err := r.o.resolve(cfg.dir)
	if err != nil {
		return nil, err
	}
	recs, err := LoadRecordings(dir, cfg.streaming)
	if err != nil {
		return nil, err
	}
	st := &replayState{cfg: cfg, recs: recs, llm: map[string]int{}, tools: map[string]int{}, calls: map[string]int{},
		answered: map[string]int{}, committed: map[string]int{}}
	st.turn = sync.NewCond(&st.mu)
	r.put(cc.InvocationID(), st)
	return nil, nil
}

// onEvent counts the committed events of a replayed invocation.
func (r *replayer) onEvent(_ context.Context, inv *agent.Invocation, ev *event.Event) (*event.Event, error) {
	if st := r.get(inv.ID()); st != nil && !ev.Partial {
		st.committedEvent(ev.Author)
	}
	return nil, nil
}

// afterRun forgets an invocation that ends, and the model calls it left
// unanswered.
func (r *replayer) afterRun(_ context.Context, inv *agent.Invocation) {
	r.take(inv.ID())
	pending.Range(func(k, v any) bool {
		if v.(pendingCall).invocation == inv.ID() {
			pending.Delete(k)
		}
		return true
	})
}

// beforeModel answers an agent's model call from the recordings, or
// marks it for the replay model that wraps the agent's model.
func (r *replayer) beforeModel(ctx context.Context, cc *agent.CallbackContext, req *model.Request) (*model.Response, error) {
	st := r.get(cc.InvocationID())
	if st == nil {
		return nil, nil
	}
	if m, ok := cc.Invocation().Agent().(interface{ Model() model.LLM }); ok {
		if _, swapped := m.Model().(*replayModel); swapped {
			// The model answers, from the recordings, when it is
			// called with this request (see ReplayModel).
			pending.Store(req, pendingCall{st: st, invocation: cc.InvocationID(), agent: cc.AgentName()})
			return nil, nil
		}
	}
	// A model that ReplayModel does not wrap is never called: the
	// recorded answer is given here.
	resps, err := st.model(cc.AgentName(), req)
	if err != nil {
		return nil, err
	}
	return finalResponse(resps), nil
}

// beforeTool answers a tool call with its recorded result.
func (r *replayer) beforeTool(ctx context.Context, tc tool.Context, t tool.Tool, args map[string]any) (map[string]any, error) {
	st := r.get(tc.InvocationID())
	if st == nil {
		return nil, nil
	}
	rec, err := st.tool(tc, t.Name(), args)
	if err != nil {
		return nil, err
	}
	if _, isAgent := t.(*agenttool.Tool); !isAgent {
		// The tool runs for its effects (state, artifacts); the
		// recorded result is what the model gets. An agent used as a
		// tool does not run: its own calls are not replayed.
		if _, err := t.(tool.Function).Run(ctx, tc, args); err != nil {
			return nil, err
		}
	}
	if rec.Response == nil || rec.Response.Response == nil {
		return map[string]any{}, nil
	}
	return rec.Response.Response, nil
}

// pending holds the model calls the replay plugin has seen and the
// replay model will answer, by request.
var pending sync.Map // *model.Request → pendingCall

type pendingCall struct {
	st         *replayState
	invocation string
	agent      string
}

// replayModel answers the calls the replay plugin marked from the
// recordings, and passes the others to the model it wraps.
type replayModel struct{ model.LLM }

// ReplayModel wraps llm so that, in an invocation the Replay plugin
// replays, its calls are answered from the recordings, partial responses
// included, after the request it is called with is checked against the
// recorded one; in any other invocation llm answers.
func ReplayModel(llm model.LLM) model.LLM {
	if _, ok := llm.(*replayModel); ok || llm == nil {
		return llm
	}
	return &replayModel{llm}
}

// Generate implements model.LLM.
func (m *replayModel) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	v, ok := pending.LoadAndDelete(req)
	if !ok {
		return m.LLM.Generate(ctx, req, stream)
	}
	call := v.(pendingCall)
	return func(yield func(*model.Response, error) bool) {
		resps, err := call.st.model(call.agent, req)
		if err != nil {
			yield(nil, err)
			return
		}
		if !stream {
			yield(finalResponse(resps), nil)
			return
		}
		for _, r := range resps {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// finalResponse is the complete response among recorded ones: the last
// one not partial, or the last one.
func finalResponse(resps []*model.Response) *model.Response {
	var final *model.Response
	for _, r := range resps {
		if !r.Partial || final == nil {
			final = r
		}
	}
	out := *final
	out.Partial = false
	return &out
}

// model checks the next model call of agentName and returns its recorded
// responses.
func (s *replayState) model(agentName string, req *model.Request) ([]*model.Response, error) {
	s.mu.Lock()
	i := s.llm[agentName]
	s.llm[agentName] = i + 1
	s.mu.Unlock()
	var rec *LLMRecording
	n := 0
	for _, r := range s.recs.Recordings {
		if r.AgentName != agentName || r.UserMessageIndex != s.cfg.index || r.LLM == nil {
			continue
		}
		if n == i {
			rec = r.LLM
		}
		n++
	}
	if rec == nil {
		return nil, fmt.Errorf("%w: agent %s sent more model requests than recorded at user message %d: %d recorded, got request %d",
			ErrReplay, agentName, s.cfg.index, n, i)
	}
	got, err := RequestTree(req)
	if err != nil {
		return nil, err
	}
	if d := Diff("llm_request", comparableRequest(rec.Request), comparableRequest(got)); len(d) > 0 {
		m := &Mismatch{What: fmt.Sprintf("model request %d of agent %s at user message %d", i, agentName, s.cfg.index), Differences: d}
		return nil, fmt.Errorf("%w: %s", ErrReplay, m.Error())
	}
	resps, err := rec.ModelResponses()
	if err != nil {
		return nil, err
	}
	s.waitTurn(agentName, i)
	if len(resps) == 0 {
		return nil, fmt.Errorf("%w: model request %d of agent %s has no recorded response", ErrReplay, i, agentName)
	}
	return resps, nil
}

// tool returns the tool recording of the call tc answers, checking the
// call: the agent's next one, in call order among the calls of one model
// response (see callPlace).
func (s *replayState) tool(tc tool.Context, name string, args map[string]any) (*ToolRecording, error) {
	agentName := tc.AgentName()
	evID, pos, size, placed := callPlace(tc)
	s.mu.Lock()
	i := s.tools[agentName]
	if placed {
		base, ok := s.calls[evID]
		if !ok {
			base = i
			s.calls[evID] = base
			s.tools[agentName] = base + size
		}
		i = base + pos
	} else {
		s.tools[agentName] = i + 1
	}
	s.mu.Unlock()
	var rec *ToolRecording
	n := 0
	for _, r := range s.recs.Recordings {
		if r.AgentName != agentName || r.UserMessageIndex != s.cfg.index || r.Tool == nil {
			continue
		}
		if n == i {
			rec = r.Tool
		}
		n++
	}
	if rec == nil || rec.Call == nil {
		return nil, fmt.Errorf("%w: agent %s made more tool calls than recorded at user message %d: %d recorded, got call %d (%s)",
			ErrReplay, agentName, s.cfg.index, n, i, name)
	}
	if rec.Call.Name != name {
		return nil, fmt.Errorf("%w: tool call %d of agent %s: want %s, got %s", ErrReplay, i, agentName, rec.Call.Name, name)
	}
	want := rec.Call.Args
	if len(args) == 0 {
		args = nil // no arguments: absent or {}, recorded either way
	}
	if len(want) == 0 {
		want = nil
	}
	if d := Diff("args", normalizeData(anyMap(want)), normalizeData(anyMap(args))); len(d) > 0 {
		m := &Mismatch{What: fmt.Sprintf("tool call %d (%s) of agent %s", i, name, agentName), Differences: d}
		return nil, fmt.Errorf("%w: %s", ErrReplay, m.Error())
	}
	return rec, nil
}

// RequestTree returns a model request in the normalized form of the
// recordings' llm_request.
func RequestTree(req *model.Request) (map[string]any, error) {
	b, err := json.Marshal(struct {
		Model    string                       `json:"model,omitempty"`
		Contents []*genai.Content             `json:"contents,omitempty"`
		Config   *genai.GenerateContentConfig `json:"config,omitempty"`
	}{req.Model, req.Contents, req.Config})
	if err != nil {
		return nil, fmt.Errorf("conformance: model request: %w", err)
	}
	var tree map[string]any
	if err := json.Unmarshal(b, &tree); err != nil {
		return nil, err
	}
	m, _ := Normalize(tree).(map[string]any)
	return m, nil
}

// comparableRequest leaves out of a normalized request the fields that
// vary between runs: live_connect_config, config.http_options and
// config.labels.
func comparableRequest(req map[string]any) map[string]any {
	out := make(map[string]any, len(req))
	for k, v := range req {
		if k == "live_connect_config" {
			continue
		}
		if k == "config" {
			if c, ok := v.(map[string]any); ok {
				cc := make(map[string]any, len(c))
				for ck, cv := range c {
					if ck != "http_options" && ck != "labels" {
						cc[ck] = cv
					}
				}
				if len(cc) == 0 {
					continue
				}
				v = cc
			}
		}
		out[k] = v
	}
	return out
}

// anyMap makes a map an any holding map[string]any, through JSON for
// values of other types.
func anyMap(m map[string]any) any {
	b, err := json.Marshal(m)
	if err != nil {
		return m
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return m
	}
	return out
}
