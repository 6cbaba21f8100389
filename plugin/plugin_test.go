package plugin_test

import (
	"bytes"
	"context"
	"errors"
	"iter"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/graph"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/artifact/memartifact"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/plugin"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
)

type echoTool struct{}

func (echoTool) Name() string        { return "echo" }
func (echoTool) Description() string { return "echo" }
func (echoTool) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{Name: "echo"}
}
func (echoTool) Run(_ context.Context, _ tool.Context, args map[string]any) (map[string]any, error) {
	return map[string]any{"echo": args["v"]}, nil
}

func newRunner(t *testing.T, root agent.Agent, plugins ...*plugin.Plugin) (*runner.Runner, *session.Service, *artifact.Service) {
	t.Helper()
	svc := memsession.NewService()
	arts := memartifact.NewService()
	r, err := runner.New(runner.Config{AppName: "app", Agent: root, Sessions: svc, Artifacts: arts, Plugins: plugins, AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	return r, svc, arts
}

// TestPluginsRunBeforeAgentCallbacksInOrder checks the documented order:
// plugins in registration order, then the agent's own callback; the first
// plugin returning a value short-circuits the rest.
func TestPluginsRunBeforeAgentCallbacksInOrder(t *testing.T) {
	var order []string
	mk := func(name string, answer *model.Response) *plugin.Plugin {
		return &plugin.Plugin{Name: name, Callbacks: agent.Callbacks{BeforeModel: []agent.BeforeModelCallback{
			func(context.Context, *agent.CallbackContext, *model.Request) (*model.Response, error) {
				order = append(order, name)
				return answer, nil
			}}}}
	}
	m := scripted.NewSequence("m", scripted.Text("from model"))
	a, _ := llmagent.New(llmagent.Config{Name: "a", Model: m, BeforeModel: []agent.BeforeModelCallback{
		func(context.Context, *agent.CallbackContext, *model.Request) (*model.Response, error) {
			order = append(order, "agent")
			return nil, nil
		}}})
	r, _, _ := newRunner(t, a, mk("p1", nil), mk("p2", nil))
	if _, err := r.RunSync(context.Background(), "u", "s", genai.NewContentFromText("hi", genai.RoleUser), nil); err != nil {
		t.Fatal(err)
	}
	if strings.Join(order, ",") != "p1,p2,agent" {
		t.Fatalf("order %v", order)
	}
	order = nil
	a2, _ := llmagent.New(llmagent.Config{Name: "a", Model: scripted.NewSequence("m"), BeforeModel: []agent.BeforeModelCallback{
		func(context.Context, *agent.CallbackContext, *model.Request) (*model.Response, error) {
			order = append(order, "agent")
			return nil, nil
		}}})
	r2, _, _ := newRunner(t, a2, mk("p1", &model.Response{Content: genai.NewContentFromText("cached", genai.RoleModel)}), mk("p2", nil))
	evs, err := r2.RunSync(context.Background(), "u", "s", genai.NewContentFromText("hi", genai.RoleUser), nil)
	if err != nil || evs[0].Text() != "cached" || strings.Join(order, ",") != "p1" {
		t.Fatalf("short-circuit: err %v, order %v", err, order)
	}
}

// TestPluginRunHooks covers the run-level hooks: the user message can be
// replaced, BeforeRun can answer early, OnEvent replaces what the caller
// receives but not what is stored, AfterRun runs even on error.
func TestPluginRunHooks(t *testing.T) {
	ran := false
	root, _ := agent.New(agent.Config{Name: "root", Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
		return func(yield func(*event.Event, error) bool) {
			ran = true
			if inv.UserContent().Parts[0].Text == "fail" {
				yield(nil, errors.New("agent failed"))
				return
			}
			ev := inv.NewEvent()
			ev.Content = genai.NewContentFromText("echo: "+inv.UserContent().Parts[0].Text, genai.RoleModel)
			yield(ev, nil)
		}
	}})
	afterRuns := 0
	p := &plugin.Plugin{
		Name: "p",
		OnUserMessage: func(ctx context.Context, cc *agent.CallbackContext, msg *genai.Content) (*genai.Content, error) {
			cc.State().Set("seen", true)
			if msg.Parts[0].Text == "shout" {
				return genai.NewContentFromText("SHOUT", genai.RoleUser), nil
			}
			return nil, nil
		},
		BeforeRun: func(ctx context.Context, cc *agent.CallbackContext) (*genai.Content, error) {
			if cc.UserContent().Parts[0].Text == "blocked" {
				return genai.NewContentFromText("not allowed", genai.RoleModel), nil
			}
			return nil, nil
		},
		OnEvent: func(ctx context.Context, inv *agent.Invocation, ev *event.Event) (*event.Event, error) {
			c := *ev
			c.CustomMetadata = map[string]any{"tagged": true}
			return &c, nil
		},
		AfterRun: func(context.Context, *agent.Invocation) { afterRuns++ },
	}
	r, svc, _ := newRunner(t, root, p)
	ctx := context.Background()
	evs, err := r.RunSync(ctx, "u", "s", genai.NewContentFromText("shout", genai.RoleUser), nil)
	if err != nil || evs[0].Text() != "echo: SHOUT" || evs[0].CustomMetadata["tagged"] != true {
		t.Fatalf("replace message: err %v events %v", err, evs)
	}
	s, _ := svc.Get(ctx, session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil)
	if s.At(0).Text() != "SHOUT" || s.At(0).Actions.StateDelta["seen"] != true || s.At(1).CustomMetadata != nil {
		t.Fatalf("stored: user %q delta %v, agent metadata %v", s.At(0).Text(), s.At(0).Actions.StateDelta, s.At(1).CustomMetadata)
	}
	ran = false
	evs, err = r.RunSync(ctx, "u", "s", genai.NewContentFromText("blocked", genai.RoleUser), nil)
	if err != nil || ran || len(evs) != 1 || evs[0].Text() != "not allowed" {
		t.Fatalf("before run: err %v ran %v events %d", err, ran, len(evs))
	}
	if _, err := r.RunSync(ctx, "u", "s", genai.NewContentFromText("fail", genai.RoleUser), nil); err == nil {
		t.Fatal("want the agent's error")
	}
	if afterRuns != 3 {
		t.Fatalf("after-run ran %d times, want 3", afterRuns)
	}
}

// TestLoggingPlugin checks that the logging plugin records the steps of a
// run and changes nothing.
func TestLoggingPlugin(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	m := scripted.NewSequence("m", scripted.Call("echo", map[string]any{"v": "x"}), scripted.Text("done"))
	a, _ := llmagent.New(llmagent.Config{Name: "a", Model: m, Tools: []tool.Tool{echoTool{}}})
	r, _, _ := newRunner(t, a, plugin.Logging(logger))
	evs, err := r.RunSync(context.Background(), "u", "s", genai.NewContentFromText("hi", genai.RoleUser), nil)
	if err != nil || len(evs) != 3 || evs[2].Text() != "done" {
		t.Fatalf("run changed: err %v, %d events", err, len(evs))
	}
	for _, want := range []string{"user message", "agent start", "model call", "model response", "tool call", "event", "agent end", "run finished"} {
		if !strings.Contains(buf.String(), "msg=\""+want+"\"") && !strings.Contains(buf.String(), "msg="+want) {
			t.Errorf("log lacks %q:\n%s", want, buf.String())
		}
	}
}

// TestSaveFilesAsArtifacts checks that uploaded files become artifacts,
// that the session stores a reference instead of the bytes, and that the
// model still sees the file's content.
func TestSaveFilesAsArtifacts(t *testing.T) {
	m := scripted.NewSequence("m", scripted.Text("got it"))
	a, _ := llmagent.New(llmagent.Config{Name: "a", Model: m})
	r, svc, arts := newRunner(t, a, plugin.SaveFilesAsArtifacts())
	msg := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
		{Text: "here is my file"},
		{InlineData: &genai.Blob{MIMEType: "text/plain", Data: []byte("hello file"), DisplayName: "notes.txt"}},
		{Text: "what does it say?"},
	}}
	ctx := context.Background()
	if _, err := r.RunSync(ctx, "u", "s", msg, nil); err != nil {
		t.Fatal(err)
	}
	p, err := arts.Load(ctx, artifact.Ref{AppName: "app", UserID: "u", SessionID: "s", Name: "notes.txt"}, artifact.Latest)
	if err != nil || string(p.InlineData.Data) != "hello file" {
		t.Fatalf("artifact: %v %v", p, err)
	}
	s, _ := svc.Get(ctx, session.Key{AppName: "app", UserID: "u", SessionID: "s"}, nil)
	stored := s.At(0).Content.Parts
	if len(stored) != 4 || stored[1].InlineData != nil || !strings.Contains(stored[1].Text, `"notes.txt"`) ||
		stored[2].FileData == nil || stored[2].FileData.FileURI != artifact.URI("notes.txt", 0) || stored[3].Text != "what does it say?" {
		t.Fatalf("stored user message = %+v", stored)
	}
	sent := m.Requests()[0].Contents[0].Parts
	if len(sent) != 4 || sent[2].InlineData == nil || string(sent[2].InlineData.Data) != "hello file" || sent[2].InlineData.MIMEType != "text/plain" {
		t.Fatalf("model saw %+v", sent)
	}
	if s.At(0).Actions.ArtifactDelta["notes.txt"] != 0 || len(s.At(0).Actions.ArtifactDelta) != 1 {
		t.Fatalf("user event artifact delta %v", s.At(0).Actions.ArtifactDelta)
	}
}

// TestSaveFilesSizeLimit checks that a file over the agent's limit reaches
// the model as a clear note, and the artifact is still saved.
func TestSaveFilesSizeLimit(t *testing.T) {
	m := scripted.NewSequence("m", scripted.Text("ok"))
	a, _ := llmagent.New(llmagent.Config{Name: "a", Model: m, MaxFileBytes: 4})
	r, _, arts := newRunner(t, a, plugin.SaveFilesAsArtifacts())
	msg := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
		{InlineData: &genai.Blob{MIMEType: "image/png", Data: []byte("0123456789"), DisplayName: "big.png"}}}}
	ctx := context.Background()
	if _, err := r.RunSync(ctx, "u", "s", msg, nil); err != nil {
		t.Fatal(err)
	}
	sent := m.Requests()[0].Contents[0].Parts
	if len(sent) != 2 || sent[1].InlineData != nil || !strings.Contains(sent[1].Text, `"big.png" is 10 bytes, over the 4-byte limit`) {
		t.Fatalf("model saw %+v", sent)
	}
	if _, err := arts.Load(ctx, artifact.Ref{AppName: "app", UserID: "u", SessionID: "s", Name: "big.png"}, artifact.Latest); err != nil {
		t.Fatal(err)
	}
}

// TestFileReferencesResolvedEveryTurn checks that a file saved as an
// artifact in a later turn of a session reaches the model as its content in
// that turn and every turn after it, while the agent's model history is
// built incrementally across turns.
func TestFileReferencesResolvedEveryTurn(t *testing.T) {
	m := scripted.NewSequence("m", scripted.Text("one"), scripted.Text("two"), scripted.Text("three"))
	a, _ := llmagent.New(llmagent.Config{Name: "a", Model: m})
	r, _, _ := newRunner(t, a, plugin.SaveFilesAsArtifacts())
	ctx := context.Background()
	turns := []*genai.Content{
		genai.NewContentFromText("hello", genai.RoleUser),
		{Role: genai.RoleUser, Parts: []*genai.Part{
			{InlineData: &genai.Blob{MIMEType: "text/plain", Data: []byte("file body"), DisplayName: "f.txt"}}}},
		genai.NewContentFromText("and now?", genai.RoleUser),
	}
	for _, msg := range turns {
		if _, err := r.RunSync(ctx, "u", "s", msg, nil); err != nil {
			t.Fatal(err)
		}
	}
	reqs := m.Requests()
	if len(reqs) != 3 || len(reqs[0].Contents) != 1 {
		t.Fatalf("requests: %d", len(reqs))
	}
	for turn, req := range reqs[1:] {
		if len(req.Contents) != 3+2*turn {
			t.Fatalf("turn %d: %d contents", turn+2, len(req.Contents))
		}
		parts := req.Contents[2].Parts
		if len(parts) != 2 || parts[1].InlineData == nil || string(parts[1].InlineData.Data) != "file body" {
			t.Fatalf("turn %d: the model saw %+v", turn+2, parts)
		}
	}
}

// TestMergeReadOnlyModelHooks checks that merged callbacks are read-only
// for model requests exactly when every plugin with a before-model or
// model-error hook says its hooks are: plugins without model hooks, and
// the logging plugin, leave them read-only.
func TestMergeReadOnlyModelHooks(t *testing.T) {
	before := func(context.Context, *agent.CallbackContext, *model.Request) (*model.Response, error) {
		return nil, nil
	}
	onError := func(context.Context, *agent.CallbackContext, *model.Request, error) (*model.Response, error) {
		return nil, nil
	}
	editor := &plugin.Plugin{Name: "editor", Callbacks: agent.Callbacks{BeforeModel: []agent.BeforeModelCallback{before}}}
	recoverer := &plugin.Plugin{Name: "recoverer", Callbacks: agent.Callbacks{OnModelError: []agent.OnModelErrorCallback{onError}}}
	observer := &plugin.Plugin{Name: "observer", Callbacks: agent.Callbacks{ReadOnlyModelHooks: true,
		BeforeModel: []agent.BeforeModelCallback{before}, OnModelError: []agent.OnModelErrorCallback{onError}}}
	toolsOnly := &plugin.Plugin{Name: "tools", Callbacks: agent.Callbacks{AfterTool: []agent.AfterToolCallback{
		func(context.Context, tool.Context, tool.Tool, map[string]any, map[string]any) (map[string]any, error) {
			return nil, nil
		}}}}
	logging := plugin.Logging(slog.New(slog.DiscardHandler))
	for _, tc := range []struct {
		name    string
		plugins []*plugin.Plugin
		want    bool
	}{
		{"none", nil, true},
		{"observers", []*plugin.Plugin{observer, toolsOnly, logging}, true},
		{"an editor", []*plugin.Plugin{observer, editor}, false},
		{"a recoverer", []*plugin.Plugin{recoverer, logging}, false},
	} {
		if got := plugin.Merge(tc.plugins).ReadOnlyModelHooks; got != tc.want {
			t.Errorf("%s: ReadOnlyModelHooks = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestMergeObserverHooks checks that Merge keeps the observing hooks of
// every plugin, in order, and that the logging plugin reports each attempt
// of a workflow node with its error or route.
func TestMergeObserverHooks(t *testing.T) {
	var order []string
	mk := func(name string) *plugin.Plugin {
		return &plugin.Plugin{Name: name, Callbacks: agent.Callbacks{
			ResumeAgent: []agent.ResumeAgentCallback{func(context.Context, *agent.CallbackContext) { order = append(order, name+":resume") }},
			BeforeNode:  []agent.BeforeNodeCallback{func(context.Context, *agent.Invocation, agent.NodeAttempt) { order = append(order, name+":before") }},
			AfterNode: []agent.AfterNodeCallback{func(context.Context, *agent.Invocation, agent.NodeAttempt, agent.NodeOutcome) {
				order = append(order, name+":after")
			}},
		}}
	}
	c := plugin.Merge([]*plugin.Plugin{mk("p1"), mk("p2")})
	for _, cb := range c.ResumeAgent {
		cb(context.Background(), nil)
	}
	for _, cb := range c.BeforeNode {
		cb(context.Background(), nil, agent.NodeAttempt{})
	}
	for _, cb := range c.AfterNode {
		cb(context.Background(), nil, agent.NodeAttempt{}, agent.NodeOutcome{})
	}
	if got := strings.Join(order, " "); got != "p1:resume p2:resume p1:before p2:before p1:after p2:after" {
		t.Errorf("merged hooks ran as %q", got)
	}

	tries := 0
	flaky := graph.Func("lookup", func(context.Context, *graph.Context, string) (string, error) {
		if tries++; tries == 1 {
			return "", errors.New("lookup unavailable")
		}
		return "ok", nil
	}).With(graph.NodeOptions{Retry: graph.Retry{MaxAttempts: 2}})
	wf, err := graph.New(graph.Config{Name: "wf", Nodes: []*graph.Node{flaky}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	r, _, _ := newRunner(t, wf, plugin.Logging(slog.New(slog.NewTextHandler(&buf, nil))))
	if _, err := r.RunSync(context.Background(), "u", "s", genai.NewContentFromText("hi", genai.RoleUser), nil); err != nil {
		t.Fatal(err)
	}
	log := buf.String()
	if !strings.Contains(log, `level=WARN msg="node attempt"`) || !strings.Contains(log, `error="lookup unavailable"`) ||
		!strings.Contains(log, "path=wf/lookup@1 attempt=2 max_attempts=2") {
		t.Errorf("log of the node's attempts:\n%s", log)
	}
}
