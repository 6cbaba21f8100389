// Package agenttool lets an agent call another agent as a tool.
//
// Unlike a transfer, which hands the conversation over, an agent tool runs
// the other agent on one request and returns its answer to the calling
// agent's model, which stays in charge:
//
//	researcher, _ := llmagent.New(llmagent.Config{Name: "researcher", ...})
//	rt, _ := agenttool.New(researcher, nil)
//	writer, _ := llmagent.New(llmagent.Config{Name: "writer", Tools: []tool.Tool{rt}, ...})
//
// The model calls the tool with {"request": "..."}. The agent runs to
// completion in a child session of its own, kept in memory and discarded
// afterwards: the child's events never enter the caller's session. The
// child session starts with a copy of the caller's state as the caller sees
// it (temp: keys and uncommitted writes included, since the child works for
// the caller's invocation); the state changes the child commits (except
// temp: keys, and values written back unchanged) are staged into the
// caller's function-response event, so they become part of the caller's
// session when that event is committed.
// The child shares the caller's memory and credential services (a token a
// user grants to a tool inside the child is kept for that user, as if the
// caller's own tool had asked), and its artifacts are the caller's: loads read the caller's session's artifacts and saves land there,
// recorded in the function response's artifact delta. The tool's result is
// {"result": "<the child's last final answer>"}. An error of the child, or
// a model error with no answer, is the tool's error.
//
// A child that pauses (a graph workflow node asking for input, a
// confirmation or a long-running call inside it, a remote agent waiting for
// input) pauses the caller's call: the tool asks for a confirmation of its
// call, whose hint is the child's question and whose payload holds the
// child's log; the client approves with the answer as the payload
// ({"confirmed": true, "payload": {"response": "yes"}}), and the child
// resumes once from that log, in this process or after a restart. See
// [PauseKey]. The child runs resumable when the caller's application is; a
// child that is not, and that answers after a long-running call's interim
// result, has answered and does not pause.
package agenttool

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/credential"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/memory"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
)

// ErrInvalidRequest reports a call whose "request" argument is missing or
// not a string.
var ErrInvalidRequest = errors.New(`agenttool: the "request" argument must be a string`)

// Config configures an agent tool. The zero value is the default.
type Config struct {
	// SkipSummarization makes the child agent's answer the calling agent's
	// final response: the caller's model is not asked to restate it.
	SkipSummarization bool
}

// Tool runs an agent as a tool. Create it with New. It is immutable and
// safe for concurrent use; every call runs in its own child session.
type Tool struct {
	agent agent.Agent
	cfg   Config
}

var _ tool.Function = (*Tool)(nil)

// New returns a tool running a. cfg may be nil. a and its sub-agents must
// form a valid agent tree.
func New(a agent.Agent, cfg *Config) (*Tool, error) {
	if a == nil {
		return nil, errors.New("agenttool: nil agent")
	}
	if _, err := agent.NewTree(a); err != nil {
		return nil, fmt.Errorf("agenttool: %w", err)
	}
	t := &Tool{agent: a}
	if cfg != nil {
		t.cfg = *cfg
	}
	return t, nil
}

// Name implements tool.Tool: the agent's name.
func (t *Tool) Name() string { return t.agent.Name() }

// Description implements tool.Tool: the agent's description.
func (t *Tool) Description() string {
	if d := t.agent.Description(); d != "" {
		return d
	}
	return fmt.Sprintf("Sends a request to the %s agent and returns its answer.", t.agent.Name())
}

// Agent returns the agent the tool runs.
func (t *Tool) Agent() agent.Agent { return t.agent }

// Declaration implements tool.Function: one required string parameter,
// "request", and a string result, declared as ADK declares an agent tool.
func (t *Tool) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{
		Name:        t.Name(),
		Description: t.Description(),
		Parameters: &genai.Schema{
			Type:       genai.TypeObject,
			Properties: map[string]*genai.Schema{"request": {Type: genai.TypeString}},
			Required:   []string{"request"},
		},
		Response: &genai.Schema{Type: genai.TypeString},
	}
}

// Run implements tool.Function: it runs the agent on the request in a child
// session and returns {"result": answer}.
func (t *Tool) Run(ctx context.Context, tc tool.Context, args map[string]any) (map[string]any, error) {
	request, ok := args["request"].(string)
	if !ok {
		return nil, fmt.Errorf("%w, got %s", ErrInvalidRequest, typeName(args["request"]))
	}
	// At run time the context is the caller's *agent.CallbackContext, which
	// gives the caller's state, services and run settings. Any other
	// tool.Context still works, without them.
	var parent *agent.Invocation
	if cc, ok := tc.(*agent.CallbackContext); ok {
		parent = cc.Invocation()
	}
	var (
		seed      map[string]any
		artifacts *artifact.Service
		mem       *memory.Service
		creds     *credential.Service
		opts      = &runner.RunOptions{}
	)
	if parent != nil {
		if s := parent.Session(); s != nil {
			seed = s.State()
		}
		mem = parent.Memory()
		// Credentials users grant inside the child are theirs in the
		// caller's application: kept where the caller keeps them.
		creds = parent.CredentialService()
		opts.MaxLLMCalls = parent.RunConfig().MaxLLMCalls
	}
	if parent == nil || parent.Artifacts() != nil {
		artifacts = artifact.NewService(&forwardStore{tc: tc, parent: parent})
	}
	opts.StateDelta = seed

	sessions := memsession.NewService()
	key := session.Key{AppName: tc.AppName(), UserID: tc.UserID(), SessionID: event.NewID()}
	childMsg := genai.NewContentFromText(request, genai.RoleUser)
	if conf := tc.ToolConfirmation(); conf != nil && conf.Confirmed {
		// Approved after the child paused: resume it from its log with the
		// client's answer (pause.go).
		if rec, evs, ok := storedPause(parent, tc.FunctionCallID()); ok {
			if err := restore(ctx, sessions, key, evs); err != nil {
				return nil, fmt.Errorf("agenttool %s: restore the paused agent: %w", t.Name(), err)
			}
			childMsg = answerMessage(rec.Waiting[0], conf.Payload)
			opts.InvocationID = rec.InvocationID
			opts.StateDelta = nil // the child's session has its state
		}
	}

	r, err := runner.New(runner.Config{
		AppName:           tc.AppName(),
		Agent:             t.agent,
		Sessions:          sessions,
		Artifacts:         artifacts,
		Memory:            mem,
		Credentials:       creds,
		AutoCreateSession: true,
		SessionCacheSize:  -1,
		Resumable:         parent != nil && parent.Resumable(),
	})
	if err != nil {
		return nil, fmt.Errorf("agenttool %s: %w", t.Name(), err)
	}

	var (
		answer  string
		failure *event.Event
	)
	for ev, err := range r.Run(ctx, key.UserID, key.SessionID, childMsg, opts) {
		if err != nil {
			return nil, fmt.Errorf("agenttool %s: %w", t.Name(), err)
		}
		if ev.Partial {
			continue
		}
		if ev.ErrorCode != "" || ev.ErrorMessage != "" {
			failure = ev
			continue
		}
		if ev.IsFinalResponse() {
			if text := model.Text(ev.Content, ""); text != "" {
				answer, failure = text, nil
			}
		}
	}
	if answer == "" && failure != nil {
		return nil, fmt.Errorf("agenttool %s: agent failed: %s", t.Name(), strings.TrimSpace(failure.ErrorCode+" "+failure.ErrorMessage))
	}
	sess, err := sessions.Get(ctx, key, nil)
	if err != nil {
		return nil, fmt.Errorf("agenttool %s: %w", t.Name(), err)
	}
	var (
		evs     = make([]*event.Event, 0, sess.Len())
		changes = map[string]any{}
	)
	for i := range sess.Len() {
		ev := sess.At(i)
		evs = append(evs, ev)
		// Committed events carry their delta without temp: keys.
		for k, v := range ev.Actions.StateDelta {
			changes[k] = v
		}
	}
	if calls, inv := waiting(evs); len(calls) > 0 {
		// The child paused: so does the call, until the client answers.
		payload, err := pausePayload(evs, calls, inv)
		if err != nil {
			return nil, fmt.Errorf("agenttool %s: record the paused agent: %w", t.Name(), err)
		}
		tc.RequestConfirmation(pauseHint(t.Name(), calls[0]), payload)
		return nil, nil
	}
	forwardState(tc, seed, changes)
	if t.cfg.SkipSummarization {
		tc.Actions().SkipSummarization = true
	}
	return map[string]any{"result": answer}, nil
}

// forwardState stages in the caller's context the state the child changed:
// keys it wrote, unless it wrote back the value it was given.
func forwardState(tc tool.Context, seed, changes map[string]any) {
	keys := make([]string, 0, len(changes))
	for k := range changes {
		keys = append(keys, k)
	}
	slices.Sort(keys) // deterministic staging order
	for _, k := range keys {
		v := changes[k]
		if scope, _ := session.ScopeOf(k); scope == session.ScopeTemp {
			continue
		}
		old, had := seed[k]
		if (v == nil && !had) || (had && reflect.DeepEqual(old, v)) {
			continue
		}
		tc.State().Set(k, v)
	}
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "nothing"
	case float64, int, int64:
		return "a number"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}

// forwardStore is the child's artifact store: it reads and writes the
// caller's artifacts through the caller's tool context, so that saves are
// recorded in the caller's function-response event. The child session's id
// is ignored; names are all it needs.
type forwardStore struct {
	tc     tool.Context
	parent *agent.Invocation // nil when the context is not an agent's

	mu    sync.Mutex
	saved map[forwarded]bool // versions saved through the caller's context
}

type forwarded struct {
	name    string
	version int64
}

func (s *forwardStore) Save(ctx context.Context, key artifact.Key, part *genai.Part) (int64, error) {
	v, err := s.tc.SaveArtifact(ctx, key.Name, part)
	if err == nil {
		s.mu.Lock()
		if s.saved == nil {
			s.saved = map[forwarded]bool{}
		}
		s.saved[forwarded{key.Name, v}] = true
		s.mu.Unlock()
	}
	return v, err
}

func (s *forwardStore) Load(ctx context.Context, key artifact.Key, version int64) (*genai.Part, error) {
	return s.tc.LoadArtifact(ctx, key.Name, version)
}

// List answers for the session with the caller's names, session and user
// scoped together; the service merges and deduplicates.
func (s *forwardStore) List(ctx context.Context, _, _, session string) ([]string, error) {
	if session == "" {
		return nil, nil
	}
	return s.tc.ListArtifacts(ctx)
}

func (s *forwardStore) ref(name string) artifact.Ref {
	return artifact.Ref{AppName: s.tc.AppName(), UserID: s.tc.UserID(), SessionID: s.tc.SessionID(), Name: name}
}

func (s *forwardStore) service() (*artifact.Service, error) {
	if s.parent == nil || s.parent.Artifacts() == nil {
		return nil, fmt.Errorf("agenttool: %w", errors.ErrUnsupported)
	}
	return s.parent.Artifacts(), nil
}

func (s *forwardStore) Versions(ctx context.Context, key artifact.Key) ([]int64, error) {
	svc, err := s.service()
	if err != nil {
		return nil, err
	}
	return svc.Versions(ctx, s.ref(key.Name))
}

func (s *forwardStore) Delete(ctx context.Context, key artifact.Key) error {
	svc, err := s.service()
	if err != nil {
		return err
	}
	return svc.Delete(ctx, s.ref(key.Name))
}

// DeleteVersion leaves alone the versions the child saved: they are
// recorded in the caller's artifact delta and belong to the caller's
// commit, which removes them if it fails. So the child runner dropping the
// versions of a child event it did not commit does not take back what the
// caller records.
func (s *forwardStore) DeleteVersion(ctx context.Context, key artifact.Key, version int64) error {
	s.mu.Lock()
	mine := s.saved[forwarded{key.Name, version}]
	s.mu.Unlock()
	if mine {
		return nil
	}
	svc, err := s.service()
	if err != nil {
		return err
	}
	return svc.DeleteVersion(ctx, s.ref(key.Name), version)
}

// DeleteSession refuses: the child's session is not the caller's, and the
// caller's artifacts are not the child's to delete.
func (s *forwardStore) DeleteSession(context.Context, string, string, string) error {
	return fmt.Errorf("agenttool: delete session artifacts: %w", errors.ErrUnsupported)
}

// Close does nothing: the caller's store outlives the child.
func (s *forwardStore) Close() error { return nil }
