package runner_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/workflowagent"
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
	"github.com/loomkit/loom/tool/functiontool"
)

var errInjected = errors.New("injected commit failure")

// failingStore is a session store whose appends of events carrying an
// artifact delta fail while failArtifacts is set.
type failingStore struct {
	session.Store
	failArtifacts atomic.Bool
}

func (s *failingStore) AppendEvent(ctx context.Context, key session.Key, created time.Time, seq int64, ev *event.Event, d session.Delta) error {
	if s.failArtifacts.Load() && len(ev.Actions.ArtifactDelta) > 0 {
		return errInjected
	}
	return s.Store.AppendEvent(ctx, key, created, seq, ev, d)
}

type artifactFixture struct {
	store     *failingStore
	sessions  *session.Service
	artifacts *artifact.Service
	r         *runner.Runner
}

func newArtifactFixture(t *testing.T, root agent.Agent, plugins ...*plugin.Plugin) *artifactFixture {
	t.Helper()
	f := &artifactFixture{store: &failingStore{Store: memsession.New()}, artifacts: memartifact.NewService()}
	f.sessions = session.NewService(f.store, nil)
	var err error
	f.r, err = runner.New(runner.Config{AppName: app, Agent: root, Sessions: f.sessions, Artifacts: f.artifacts,
		AutoCreateSession: true, Plugins: plugins})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *artifactFixture) ref(sessionID, name string) artifact.Ref {
	return artifact.Ref{AppName: app, UserID: user, SessionID: sessionID, Name: name}
}

// versions returns the stored versions of an artifact (none if missing).
func (f *artifactFixture) versions(t *testing.T, sessionID, name string) []int64 {
	t.Helper()
	vs, err := f.artifacts.Versions(context.Background(), f.ref(sessionID, name))
	if errors.Is(err, artifact.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

func (f *artifactFixture) text(t *testing.T, sessionID, name string, version int64) string {
	t.Helper()
	p, err := f.artifacts.Load(context.Background(), f.ref(sessionID, name), version)
	if err != nil {
		t.Fatalf("Load(%s, %s, %d): %v", sessionID, name, version, err)
	}
	return p.Text
}

// saveTool saves args.text as "note.txt" (twice when args.twice) and as
// "user:shared.txt".
func saveTool(t *testing.T) tool.Tool {
	t.Helper()
	type args struct {
		Text  string `json:"text"`
		Twice bool   `json:"twice,omitempty"`
	}
	tl, err := functiontool.New(functiontool.Config{Name: "save"}, func(ctx context.Context, tc tool.Context, a args) (map[string]any, error) {
		n := 1
		if a.Twice {
			n = 2
		}
		for i := range n {
			if _, err := tc.SaveArtifact(ctx, "note.txt", genai.NewPartFromText(fmt.Sprint(a.Text, " ", i))); err != nil {
				return nil, err
			}
		}
		if _, err := tc.SaveArtifact(ctx, "user:shared.txt", genai.NewPartFromText(a.Text)); err != nil {
			return nil, err
		}
		return map[string]any{"saved": true}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tl
}

// saverModel calls the save tool with the user's text, then answers.
func saverModel() *scripted.Model {
	return scripted.New("m", func(_ context.Context, req *model.Request) (scripted.Turn, error) {
		if scripted.LastFunctionResponse(req) != nil {
			return scripted.Text("saved"), nil
		}
		return scripted.Call("save", map[string]any{"text": scripted.LastUserText(req), "twice": true}), nil
	})
}

// TestArtifactVersionsRemovedWhenCommitFails: a tool's saves whose event
// fails to commit leave no version behind, neither of a session artifact
// nor of a user: one, and the numbers are free for the next turn (CONFORMANCE R11).
func TestArtifactVersionsRemovedWhenCommitFails(t *testing.T) {
	f := newArtifactFixture(t, llm(t, "bot", saverModel(), saveTool(t)))
	ctx := context.Background()
	if _, err := f.r.RunSync(ctx, user, "s1", userText("one"), nil); err != nil {
		t.Fatal(err)
	}
	if got := f.versions(t, "s1", "note.txt"); !slices.Equal(got, []int64{0, 1}) {
		t.Fatalf("after a committed turn: versions = %v, want [0 1]", got)
	}

	f.store.failArtifacts.Store(true)
	_, err := f.r.RunSync(ctx, user, "s1", userText("two"), nil)
	if !errors.Is(err, errInjected) {
		t.Fatalf("RunSync with a failing commit: err = %v, want the injected failure", err)
	}
	if got := f.versions(t, "s1", "note.txt"); !slices.Equal(got, []int64{0, 1}) {
		t.Errorf("after a failed commit: note.txt versions = %v, want [0 1]", got)
	}
	if got := f.text(t, "s1", "note.txt", artifact.Latest); got != "one 1" {
		t.Errorf("latest note.txt = %q, want the committed %q", got, "one 1")
	}
	if got := f.versions(t, "s1", "user:shared.txt"); !slices.Equal(got, []int64{0}) {
		t.Errorf("after a failed commit: user:shared.txt versions = %v, want [0]", got)
	}

	// Every version the log records exists, and only those or earlier.
	f.store.failArtifacts.Store(false)
	evs, err := f.r.RunSync(ctx, user, "s1", userText("three"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var delta map[string]int64
	for _, ev := range evs {
		if len(ev.Actions.ArtifactDelta) > 0 {
			delta = ev.Actions.ArtifactDelta
		}
	}
	want := map[string]int64{"note.txt": 3, "user:shared.txt": 1}
	if !maps.Equal(delta, want) {
		t.Errorf("committed artifact delta = %v, want %v (numbers of the discarded versions reused)", delta, want)
	}
	if got := f.text(t, "s1", "note.txt", 3); got != "three 1" {
		t.Errorf("note.txt version 3 = %q, want %q", got, "three 1")
	}
}

// TestArtifactVisibleOnlyWithItsEvent: after every turn, committed or not,
// the latest version of each artifact is the one the last committed event
// records; an invocation that ends before its event (an agent error, a
// consumer that stops reading) leaves nothing (CONFORMANCE R11).
func TestArtifactVisibleOnlyWithItsEvent(t *testing.T) {
	var mode atomic.Value // what the agent does after saving
	root := custom(t, "root", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		cc := agent.NewCallbackContext(inv)
		if _, err := cc.SaveArtifact(ctx, "doc.txt", genai.NewPartFromText(mode.Load().(string))); err != nil {
			yield(nil, err)
			return
		}
		switch mode.Load() {
		case "error":
			yield(nil, errors.New("agent failed after saving"))
			return
		case "stop":
			ev := inv.NewEvent() // the consumer stops at this event, before the delta's
			ev.Content = genai.NewContentFromText("working", genai.RoleModel)
			if !yield(ev, nil) {
				return
			}
		}
		ev := cc.Event()
		ev.Content = genai.NewContentFromText("done", genai.RoleModel)
		yield(ev, nil)
	})
	f := newArtifactFixture(t, root)
	ctx := context.Background()
	run := func(m string) error {
		mode.Store(m)
		for _, err := range f.r.Run(ctx, user, "s1", userText(m), nil) {
			if err != nil {
				return err
			}
			if m == "stop" {
				break
			}
		}
		return nil
	}
	if err := run("ok"); err != nil {
		t.Fatal(err)
	}
	if err := run("error"); err == nil {
		t.Fatal("the agent's error was not reported")
	}
	if err := run("stop"); err != nil {
		t.Fatal(err)
	}
	f.store.failArtifacts.Store(true)
	if err := run("failed commit"); !errors.Is(err, errInjected) {
		t.Fatalf("err = %v, want the injected failure", err)
	}

	if got := f.versions(t, "s1", "doc.txt"); !slices.Equal(got, []int64{0}) {
		t.Errorf("doc.txt versions = %v, want only the committed [0]", got)
	}
	sess := stored(t, f.sessions, session.Key{AppName: app, UserID: user, SessionID: "s1"})
	var recorded []int64
	for _, ev := range sess.Events() {
		if v, ok := ev.Actions.ArtifactDelta["doc.txt"]; ok {
			recorded = append(recorded, v)
		}
	}
	if !slices.Equal(recorded, []int64{0}) {
		t.Errorf("versions recorded in the log = %v, want [0]", recorded)
	}
	if got := f.text(t, "s1", "doc.txt", artifact.Latest); got != "ok" {
		t.Errorf("latest doc.txt = %q, want %q", got, "ok")
	}
}

// TestPluginArtifactsRemovedWhenCommitFails covers the runner's own
// commits: a plugin's before-run save whose event fails to commit (CONFORMANCE R11).
func TestPluginArtifactsRemovedWhenCommitFails(t *testing.T) {
	p := &plugin.Plugin{Name: "stamp", BeforeRun: func(ctx context.Context, cc *agent.CallbackContext) (*genai.Content, error) {
		_, err := cc.SaveArtifact(ctx, "stamp.txt", genai.NewPartFromText("stamp"))
		return nil, err
	}}
	root := custom(t, "root", func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
		ev := inv.NewEvent()
		ev.Content = genai.NewContentFromText("hi", genai.RoleModel)
		yield(ev, nil)
	})
	f := newArtifactFixture(t, root, p)
	f.store.failArtifacts.Store(true)
	if _, err := f.r.RunSync(context.Background(), user, "s1", userText("x"), nil); !errors.Is(err, errInjected) {
		t.Fatalf("err = %v, want the injected failure", err)
	}
	if got := f.versions(t, "s1", "stamp.txt"); len(got) != 0 {
		t.Errorf("stamp.txt versions = %v, want none", got)
	}
}

// TestRewindArtifactsRemovedWhenCommitFails: the versions a rewind saves
// to restore artifacts go when its event is not committed (CONFORMANCE R11).
func TestRewindArtifactsRemovedWhenCommitFails(t *testing.T) {
	f := newArtifactFixture(t, llm(t, "bot", saverModel(), saveTool(t)))
	ctx := context.Background()
	if _, err := f.r.RunSync(ctx, user, "s1", userText("one"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.RunSync(ctx, user, "s1", userText("two"), nil); err != nil {
		t.Fatal(err)
	}
	second := stored(t, f.sessions, session.Key{AppName: app, UserID: user, SessionID: "s1"}).Events()
	inv2 := second[len(second)-1].InvocationID
	f.store.failArtifacts.Store(true)
	if _, err := f.r.Rewind(ctx, user, "s1", inv2); !errors.Is(err, errInjected) {
		t.Fatalf("Rewind: err = %v, want the injected failure", err)
	}
	if got := f.versions(t, "s1", "note.txt"); !slices.Equal(got, []int64{0, 1, 2, 3}) {
		t.Errorf("note.txt versions after a failed rewind = %v, want [0 1 2 3]", got)
	}
}

// threeTurns runs turns "one", "two", "three" with the saver model and
// returns the id of the committed event recording each turn's saves.
func (f *artifactFixture) threeTurns(t *testing.T) []string {
	t.Helper()
	var ids []string
	for _, text := range []string{"one", "two", "three"} {
		evs, err := f.r.RunSync(context.Background(), user, "s1", userText(text), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if len(ev.Actions.ArtifactDelta) > 0 {
				ids = append(ids, ev.ID)
			}
		}
	}
	if len(ids) != 3 {
		t.Fatalf("events with an artifact delta: %d, want 3", len(ids))
	}
	return ids
}

// TestForkCarriesArtifacts: a fork loads the artifacts its events refer to,
// with the same numbers and contents as the source, up to the fork point (CONFORMANCE S11).
func TestForkCarriesArtifacts(t *testing.T) {
	f := newArtifactFixture(t, llm(t, "bot", saverModel(), saveTool(t)))
	ctx := context.Background()
	ids := f.threeTurns(t)
	// A version the source lost keeps its number missing in the fork.
	if err := f.artifacts.DeleteVersion(ctx, f.ref("s1", "note.txt"), 1); err != nil {
		t.Fatal(err)
	}
	// Leftovers of an earlier session with the fork's id must not mix in.
	if _, err := f.artifacts.Save(ctx, f.ref("alt", "stale.txt"), genai.NewPartFromText("stale")); err != nil {
		t.Fatal(err)
	}

	fork, err := f.r.Fork(ctx, user, "s1", ids[1], "alt")
	if err != nil {
		t.Fatal(err)
	}
	if fork.ID() != "alt" {
		t.Fatalf("fork id = %q, want alt", fork.ID())
	}
	if got := f.versions(t, "alt", "note.txt"); !slices.Equal(got, []int64{0, 2, 3}) {
		t.Errorf("fork's note.txt versions = %v, want [0 2 3]", got)
	}
	for _, v := range []int64{0, 2, 3} {
		if got, want := f.text(t, "alt", "note.txt", v), f.text(t, "s1", "note.txt", v); got != want {
			t.Errorf("fork's note.txt version %d = %q, want the source's %q", v, got, want)
		}
	}
	if got := f.text(t, "alt", "note.txt", artifact.Latest); got != "two 1" {
		t.Errorf("fork's latest note.txt = %q, want %q", got, "two 1")
	}
	// Every version the fork's log records loads as in the source (the
	// lost version 1 is missing in both).
	loadText := func(sessionID, name string, v int64) string {
		p, err := f.artifacts.Load(ctx, f.ref(sessionID, name), v)
		if err != nil {
			return err.Error()
		}
		return p.Text
	}
	recorded := 0
	for _, ev := range fork.Events() {
		for name, v := range ev.Actions.ArtifactDelta {
			recorded++
			if got, want := loadText("alt", name, v), loadText("s1", name, v); got != want {
				t.Errorf("fork's %s version %d = %q, want %q", name, v, got, want)
			}
		}
	}
	if recorded != 4 {
		t.Errorf("artifact versions recorded in the fork's log: %d, want 4", recorded)
	}
	names, err := f.artifacts.List(ctx, app, user, "alt")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"note.txt", "user:shared.txt"}; !slices.Equal(names, want) {
		t.Errorf("fork's artifacts = %q, want %q", names, want)
	}
	// The source keeps everything.
	if got := f.versions(t, "s1", "note.txt"); !slices.Equal(got, []int64{0, 2, 3, 4, 5}) {
		t.Errorf("source's note.txt versions = %v, want [0 2 3 4 5]", got)
	}

	// A whole-session fork takes every recorded version; the fork goes on
	// numbering after them.
	all, err := f.r.Fork(ctx, user, "s1", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := f.versions(t, all.ID(), "note.txt"); !slices.Equal(got, []int64{0, 2, 3, 4, 5}) {
		t.Errorf("whole fork's note.txt versions = %v, want [0 2 3 4 5]", got)
	}
	evs, err := f.r.RunSync(ctx, user, all.ID(), userText("four"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := evs[len(evs)-2].Actions.ArtifactDelta["note.txt"]; got != 7 {
		t.Errorf("next save in the fork recorded version %d, want 7", got)
	}

	// Fork errors change nothing.
	if _, err := f.r.Fork(ctx, user, "s1", "", "alt"); !errors.Is(err, session.ErrAlreadyExists) {
		t.Errorf("fork onto an existing session: err = %v, want session.ErrAlreadyExists", err)
	}
	if got := f.versions(t, "alt", "note.txt"); !slices.Equal(got, []int64{0, 2, 3}) {
		t.Errorf("a failed fork changed the existing session's artifacts: %v", got)
	}
}

// TestDeleteSessionDeletesArtifacts: deleting a session deletes its
// artifacts, not the user's shared ones, and a new session with the same id
// starts without any (CONFORMANCE S12).
func TestDeleteSessionDeletesArtifacts(t *testing.T) {
	f := newArtifactFixture(t, llm(t, "bot", saverModel(), saveTool(t)))
	ctx := context.Background()
	if _, err := f.r.RunSync(ctx, user, "s1", userText("one"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.RunSync(ctx, user, "s2", userText("other"), nil); err != nil {
		t.Fatal(err)
	}
	if err := f.r.DeleteSession(ctx, user, "s1"); err != nil {
		t.Fatal(err)
	}
	key := session.Key{AppName: app, UserID: user, SessionID: "s1"}
	if _, err := f.sessions.Get(ctx, key, nil); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Get after DeleteSession: err = %v, want session.ErrNotFound", err)
	}
	if got := f.versions(t, "s1", "note.txt"); len(got) != 0 {
		t.Errorf("note.txt versions after DeleteSession = %v, want none", got)
	}
	if got := f.versions(t, "s1", "user:shared.txt"); !slices.Equal(got, []int64{0, 1}) {
		t.Errorf("user:shared.txt versions = %v, want [0 1] (the user's, kept)", got)
	}
	if got := f.versions(t, "s2", "note.txt"); !slices.Equal(got, []int64{0, 1}) {
		t.Errorf("another session's note.txt versions = %v, want [0 1]", got)
	}

	// The same id again: no artifacts of the old session.
	if _, err := f.sessions.Create(ctx, key, nil); err != nil {
		t.Fatal(err)
	}
	names, err := f.artifacts.List(ctx, app, user, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"user:shared.txt"}; !slices.Equal(names, want) {
		t.Errorf("artifacts of the recreated session = %q, want %q", names, want)
	}
	// Deleting again, or a missing session, is fine; an empty id is not.
	if err := f.r.DeleteSession(ctx, user, "never"); err != nil {
		t.Errorf("DeleteSession of a missing session: %v", err)
	}
	if err := f.r.DeleteSession(ctx, user, ""); !errors.Is(err, runner.ErrInvalid) {
		t.Errorf("DeleteSession without an id: err = %v, want runner.ErrInvalid", err)
	}
}

// TestParallelBranchesArtifactsRemovedWhenCommitFails: branches saving at
// the same time; the first failed commit ends the invocation, and no
// branch's uncommitted version stays. Run with -race (CONFORMANCE R11).
func TestParallelBranchesArtifactsRemovedWhenCommitFails(t *testing.T) {
	const branches = 4
	var subs []agent.Agent
	for i := range branches {
		subs = append(subs, custom(t, fmt.Sprint("b", i), func(ctx context.Context, inv *agent.Invocation, yield func(*event.Event, error) bool) {
			cc := agent.NewCallbackContext(inv)
			for j := range 3 {
				if _, err := cc.SaveArtifact(ctx, fmt.Sprintf("b%d.txt", i), genai.NewPartFromText(fmt.Sprint(j))); err != nil {
					yield(nil, err)
					return
				}
			}
			if _, err := cc.SaveArtifact(ctx, "user:log.txt", genai.NewPartFromText(fmt.Sprint(i))); err != nil {
				yield(nil, err)
				return
			}
			yield(cc.Event(), nil)
		}))
	}
	par, err := workflowagent.NewParallel(workflowagent.Config{Name: "par", SubAgents: subs})
	if err != nil {
		t.Fatal(err)
	}
	f := newArtifactFixture(t, par)
	f.store.failArtifacts.Store(true)
	if _, err := f.r.RunSync(context.Background(), user, "s1", userText("go"), nil); !errors.Is(err, errInjected) {
		t.Fatalf("err = %v, want the injected failure", err)
	}
	names, err := f.artifacts.List(context.Background(), app, user, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 0 {
		t.Errorf("artifacts after the failed invocation = %q, want none", names)
	}
}
