package runner_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/artifact"
	"github.com/loomkit/loom/artifact/memartifact"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// rewindFixture is an LLM agent whose before-agent callback, for the
// message "turn N", sets count=N in every state scope and saves "notes.txt"
// as "v N"; turn 3 also saves "new.txt" and turn 4 sets "later".
type rewindFixture struct {
	r         *runner.Runner
	sessions  *session.Service
	artifacts *artifact.Service
	llm       *scripted.Model
	key       session.Key
}

func newRewindFixture(t *testing.T) *rewindFixture {
	t.Helper()
	llm := scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		return scripted.Text("answer to " + scripted.LastUserText(req)), nil
	}).Recording()
	before := func(ctx context.Context, cc *agent.CallbackContext) (*genai.Content, error) {
		var n int
		text := cc.UserContent().Parts[0].Text
		if _, err := fmt.Sscanf(text, "turn %d", &n); err != nil {
			return nil, nil
		}
		st := cc.State()
		st.Set("count", n)
		st.Set("user:count", n)
		st.Set("app:count", n)
		if n == 4 {
			st.Set("later", true)
		}
		if _, err := cc.SaveArtifact(ctx, "notes.txt", genai.NewPartFromText(fmt.Sprint("v ", n))); err != nil {
			return nil, err
		}
		if n == 3 {
			if _, err := cc.SaveArtifact(ctx, "new.txt", genai.NewPartFromText("new")); err != nil {
				return nil, err
			}
			if _, err := cc.SaveArtifact(ctx, "user:profile.txt", genai.NewPartFromText("p3")); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	bot, err := llmagent.New(llmagent.Config{Name: "bot", Model: llm, BeforeAgent: []agent.BeforeAgentCallback{before}})
	if err != nil {
		t.Fatal(err)
	}
	f := &rewindFixture{sessions: memsession.NewService(), artifacts: memartifact.NewService(), llm: llm,
		key: session.Key{AppName: "rw", UserID: "ann", SessionID: "s1"}}
	f.r, err = runner.New(runner.Config{AppName: "rw", Agent: bot, Sessions: f.sessions, Artifacts: f.artifacts})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.sessions.Create(context.Background(), f.key, map[string]any{"init": "x"}); err != nil {
		t.Fatal(err)
	}
	return f
}

// turn runs "turn n" and returns the invocation id.
func (f *rewindFixture) turn(t *testing.T, n int) string {
	t.Helper()
	evs, err := f.r.RunSync(context.Background(), "ann", "s1", genai.NewContentFromText(fmt.Sprint("turn ", n), genai.RoleUser), nil)
	if err != nil {
		t.Fatal(err)
	}
	return evs[len(evs)-1].InvocationID
}

func (f *rewindFixture) load(t *testing.T) *session.Session {
	t.Helper()
	s, err := f.sessions.Get(context.Background(), f.key, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *rewindFixture) artifactText(t *testing.T, name string) (string, error) {
	t.Helper()
	p, err := f.artifacts.Load(context.Background(), artifact.Ref{AppName: "rw", UserID: "ann", SessionID: "s1", Name: name}, artifact.Latest)
	if err != nil {
		return "", err
	}
	return p.Text, nil
}

func texts(contents []*genai.Content) []string {
	var out []string
	for _, c := range contents {
		var b strings.Builder
		for _, p := range c.Parts {
			b.WriteString(p.Text)
		}
		out = append(out, c.Role+": "+b.String())
	}
	return out
}

// T5: rewinding before invocation 3 restores session state and artifacts as
// they were before it, leaves app: and user: state alone, hides 3..rewind
// from the model and deletes nothing.
func TestT5Rewind(t *testing.T) {
	ctx := context.Background()
	f := newRewindFixture(t)
	var ids []string
	for n := 1; n <= 4; n++ {
		ids = append(ids, f.turn(t, n))
	}
	beforeLen := f.load(t).Len()

	ev, err := f.r.Rewind(ctx, "ann", "s1", ids[2])
	if err != nil {
		t.Fatal(err)
	}
	if ev.Author != event.AuthorUser || ev.Actions.RewindBeforeInvocationID != ids[2] ||
		!strings.HasPrefix(ev.InvocationID, "e-") || ev.InvocationID == ids[2] {
		t.Errorf("rewind event: author %q, invocation %q, rewinds %q", ev.Author, ev.InvocationID, ev.Actions.RewindBeforeInvocationID)
	}

	s := f.load(t)
	if s.Len() != beforeLen+1 {
		t.Fatalf("session has %d events after rewind, want %d (nothing deleted, one added)", s.Len(), beforeLen+1)
	}
	if last := s.At(s.Len() - 1); last.ID != ev.ID {
		t.Errorf("last stored event = %s, want the rewind event %s", last.ID, ev.ID)
	}
	want := map[string]any{"init": "x", "count": 2.0, "user:count": 4.0, "app:count": 4.0}
	if got := s.State(); !reflect.DeepEqual(got, want) {
		t.Errorf("state after rewind = %v, want %v", got, want)
	}

	// notes.txt had versions 0..3 ("v 1".."v 4"); "v 2" comes back as 4.
	if got := ev.Actions.ArtifactDelta; !reflect.DeepEqual(got, map[string]int64{"notes.txt": 4}) {
		t.Errorf("artifact delta = %v", got)
	}
	if got, err := f.artifactText(t, "notes.txt"); err != nil || got != "v 2" {
		t.Errorf("notes.txt = %q, %v; want v 2", got, err)
	}
	if _, err := f.artifactText(t, "new.txt"); !errors.Is(err, artifact.ErrNotFound) {
		t.Errorf("new.txt after rewind: err = %v, want ErrNotFound", err)
	}
	if got := ev.CustomMetadata[runner.MetadataRewindDeletedArtifacts]; !reflect.DeepEqual(got, []any{"new.txt"}) {
		t.Errorf("deleted artifacts = %v", got)
	}
	if got, err := f.artifactText(t, "user:profile.txt"); err != nil || got != "p3" {
		t.Errorf("user:profile.txt = %q, %v; user artifacts are left alone", got, err)
	}

	// The model's history skips invocations 3 and 4 and the rewind.
	wantHistory := []string{"user: turn 1", "model: answer to turn 1", "user: turn 2", "model: answer to turn 2"}
	if got := texts(event.History(s.Events(), event.HistoryOptions{Agent: "bot"})); !reflect.DeepEqual(got, wantHistory) {
		t.Errorf("history = %q, want %q", got, wantHistory)
	}
	f.turn(t, 5)
	reqs := f.llm.Requests()
	got := texts(reqs[len(reqs)-1].Contents)
	wantReq := append(wantHistory, "user: turn 5")
	if !reflect.DeepEqual(got, wantReq) {
		t.Errorf("model request after rewind = %q, want %q", got, wantReq)
	}
}

// T5: a rewind to an unknown invocation fails and changes nothing.
func TestT5RewindUnknownInvocation(t *testing.T) {
	ctx := context.Background()
	f := newRewindFixture(t)
	f.turn(t, 1)
	before := f.load(t)
	for _, id := range []string{"e-unknown", ""} {
		if _, err := f.r.Rewind(ctx, "ann", "s1", id); !errors.Is(err, runner.ErrInvalid) {
			t.Errorf("Rewind(%q): err = %v, want ErrInvalid", id, err)
		}
	}
	after := f.load(t)
	if after.Len() != before.Len() || !reflect.DeepEqual(after.State(), before.State()) {
		t.Errorf("failed rewind changed the session: %d → %d events, %v → %v", before.Len(), after.Len(), before.State(), after.State())
	}
	if got, err := f.artifactText(t, "notes.txt"); err != nil || got != "v 1" {
		t.Errorf("notes.txt = %q, %v", got, err)
	}
}

func TestRewindMissingSessionIsNotCreated(t *testing.T) {
	ctx := context.Background()
	sessions := memsession.NewService()
	a := custom(t, "a", func(context.Context, *agent.Invocation, func(*event.Event, error) bool) {})
	r, err := runner.New(runner.Config{AppName: "rw", Agent: a, Sessions: sessions, AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Rewind(ctx, "ann", "nope", "e-1"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("err = %v, want ErrNotFound", err)
	}
	if _, err := sessions.Get(ctx, session.Key{AppName: "rw", UserID: "ann", SessionID: "nope"}, nil); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("rewind created the session: %v", err)
	}
}

// Rewinding twice: the second rewind, to before the first one's target's
// predecessor, folds through the first rewind's own delta.
func TestRewindTwice(t *testing.T) {
	ctx := context.Background()
	f := newRewindFixture(t)
	var ids []string
	for n := 1; n <= 3; n++ {
		ids = append(ids, f.turn(t, n))
	}
	if _, err := f.r.Rewind(ctx, "ann", "s1", ids[2]); err != nil {
		t.Fatal(err)
	}
	f.turn(t, 4)
	// Rewind the rewind itself: back to the state just before it.
	s := f.load(t)
	var rewindInv string
	for _, e := range s.Events() {
		if e.Actions.RewindBeforeInvocationID != "" {
			rewindInv = e.InvocationID
		}
	}
	if _, err := f.r.Rewind(ctx, "ann", "s1", rewindInv); err != nil {
		t.Fatal(err)
	}
	s = f.load(t)
	if v, _ := s.Get("count"); v != 3.0 {
		t.Errorf("count = %v, want 3 (the state just before the first rewind)", v)
	}
	if got, err := f.artifactText(t, "notes.txt"); err != nil || got != "v 3" {
		t.Errorf("notes.txt = %q, %v; want v 3", got, err)
	}
	wantHistory := []string{"user: turn 1", "model: answer to turn 1", "user: turn 2", "model: answer to turn 2",
		"user: turn 3", "model: answer to turn 3"}
	if got := texts(event.History(s.Events(), event.HistoryOptions{Agent: "bot"})); !reflect.DeepEqual(got, wantHistory) {
		t.Errorf("history = %q, want %q", got, wantHistory)
	}
}

// Rewind a conversation to before its second turn: the state and the
// model's history go back, the log keeps everything.
func ExampleRunner_Rewind() {
	ctx := context.Background()
	llm := scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		return scripted.Text(fmt.Sprintf("I have seen %d message(s)", (len(req.Contents)+1)/2)), nil
	})
	bot, _ := llmagent.New(llmagent.Config{Name: "bot", Model: llm})
	sessions := memsession.NewService()
	r, _ := runner.New(runner.Config{AppName: "demo", Agent: bot, Sessions: sessions, AutoCreateSession: true})

	var second string
	for i, msg := range []string{"hello", "order a pizza"} {
		evs, _ := r.RunSync(ctx, "ann", "s1", genai.NewContentFromText(msg, genai.RoleUser),
			&runner.RunOptions{StateDelta: map[string]any{"topic": msg}})
		if i == 1 {
			second = evs[0].InvocationID
		}
		fmt.Println(evs[len(evs)-1].Text())
	}
	if _, err := r.Rewind(ctx, "ann", "s1", second); err != nil {
		fmt.Println(err)
		return
	}
	evs, _ := r.RunSync(ctx, "ann", "s1", genai.NewContentFromText("order a salad", genai.RoleUser), nil)
	fmt.Println(evs[len(evs)-1].Text())

	s, _ := sessions.Get(ctx, session.Key{AppName: "demo", UserID: "ann", SessionID: "s1"}, nil)
	topic, _ := s.Get("topic")
	fmt.Println("topic:", topic, "- stored events:", s.Len())
	// Output:
	// I have seen 1 message(s)
	// I have seen 2 message(s)
	// I have seen 2 message(s)
	// topic: hello - stored events: 7
}

// TestT5RewindForgetsTransfer checks that after a rewind the next turn goes
// to the agent that spoke before the rewound invocation, not to an agent
// the rewound invocation transferred to.
func TestT5RewindForgetsTransfer(t *testing.T) {
	ctx := context.Background()
	rootModel := scripted.NewSequence("root-m",
		scripted.Text("hello from root"),
		scripted.Call("transfer_to_agent", map[string]any{"agent_name": "helper"}),
		scripted.Text("root again"))
	helper, err := llmagent.New(llmagent.Config{Name: "helper", Model: scripted.NewSequence("helper-m", scripted.Text("helper here"))})
	if err != nil {
		t.Fatal(err)
	}
	root, err := llmagent.New(llmagent.Config{Name: "root", Model: rootModel, SubAgents: []agent.Agent{helper}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(runner.Config{AppName: "app", Agent: root, Sessions: memsession.NewService(), AutoCreateSession: true})
	if err != nil {
		t.Fatal(err)
	}
	say := func(text string) []*event.Event {
		t.Helper()
		evs, err := r.RunSync(ctx, "u", "s", genai.NewContentFromText(text, genai.RoleUser), nil)
		if err != nil {
			t.Fatal(err)
		}
		return evs
	}
	say("hi")
	evs := say("I need help")
	if last := evs[len(evs)-1]; last.Author != "helper" {
		t.Fatalf("the second turn ended with %s, want helper", last.Author)
	}
	if _, err := r.Rewind(ctx, "u", "s", evs[0].InvocationID); err != nil {
		t.Fatal(err)
	}
	evs = say("start over")
	if last := evs[len(evs)-1]; last.Author != "root" || last.Text() != "root again" {
		t.Fatalf("after the rewind the turn went to %s (%q), want root", last.Author, last.Text())
	}
}
