package runner_test

import (
	"context"
	"errors"
	"fmt"
	"iter"

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
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/functiontool"
)

// A custom agent yields a state change and reads it back after the yield:
// by then the runner has committed the event, so the agent sees the value.
func Example_customAgent() {
	counter, _ := agent.New(agent.Config{
		Name: "counter",
		Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
			return func(yield func(*event.Event, error) bool) {
				n, _ := inv.Session().Get("count")
				next := 1
				if v, ok := n.(float64); ok { // state numbers read back as float64
					next = int(v) + 1
				}
				ev := inv.NewEvent()
				ev.Content = genai.NewContentFromText(fmt.Sprintf("counting to %d", next), genai.RoleModel)
				ev.Actions.StateDelta = map[string]any{"count": next}
				if !yield(ev, nil) {
					return
				}
				committed, _ := inv.Session().Get("count")
				fmt.Println("after yield, count =", committed)
			}
		},
	})
	sessions := memsession.NewService()
	r, _ := runner.New(runner.Config{AppName: "demo", Agent: counter, Sessions: sessions, AutoCreateSession: true})
	ctx := context.Background()
	for range 2 {
		for ev, err := range r.Run(ctx, "alice", "s1", genai.NewContentFromText("count", genai.RoleUser), nil) {
			if err != nil {
				fmt.Println("error:", err)
				return
			}
			fmt.Printf("[%s] %s\n", ev.Author, ev.Text())
		}
	}
	s, _ := sessions.Get(ctx, session.Key{AppName: "demo", UserID: "alice", SessionID: "s1"}, nil)
	fmt.Println("stored events:", s.Len())
	// Output:
	// [counter] counting to 1
	// after yield, count = 1
	// [counter] counting to 2
	// after yield, count = 2
	// stored events: 4
}

// Fork a conversation after its first turn: the fork sees the artifact
// versions its events record, not those saved later in the source.
func ExampleRunner_Fork() {
	writer, _ := agent.New(agent.Config{
		Name: "writer",
		Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
			return func(yield func(*event.Event, error) bool) {
				cc := agent.NewCallbackContext(inv)
				text := inv.UserContent().Parts[0].Text
				if _, err := cc.SaveArtifact(ctx, "draft.txt", genai.NewPartFromText(text)); err != nil {
					yield(nil, err)
					return
				}
				yield(cc.Event(), nil)
			}
		},
	})
	artifacts := memartifact.NewService()
	r, _ := runner.New(runner.Config{AppName: "demo", Agent: writer, Sessions: memsession.NewService(),
		Artifacts: artifacts, AutoCreateSession: true})
	ctx := context.Background()
	first, _ := r.RunSync(ctx, "alice", "s1", genai.NewContentFromText("first draft", genai.RoleUser), nil)
	_, _ = r.RunSync(ctx, "alice", "s1", genai.NewContentFromText("second draft", genai.RoleUser), nil)

	fork, err := r.Fork(ctx, "alice", "s1", first[0].ID, "s1-alt")
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	for _, id := range []string{"s1", fork.ID()} {
		ref := artifact.Ref{AppName: "demo", UserID: "alice", SessionID: id, Name: "draft.txt"}
		p, _ := artifacts.Load(ctx, ref, artifact.Latest)
		vs, _ := artifacts.Versions(ctx, ref)
		fmt.Printf("%s: %q, versions %v\n", id, p.Text, vs)
	}
	// Deleting the fork deletes its artifacts too.
	_ = r.DeleteSession(ctx, "alice", fork.ID())
	names, _ := artifacts.List(ctx, "demo", "alice", fork.ID())
	fmt.Println("after delete:", names)
	// Output:
	// s1: "second draft", versions [0 1]
	// s1-alt: "first draft", versions [0]
	// after delete: []
}

// Change a session's state between turns, as a client's settings page
// would: the update is an event of its own, and the next invocation sees it.
func ExampleRunner_UpdateState() {
	greeter, _ := agent.New(agent.Config{
		Name: "greeter",
		Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
			return func(yield func(*event.Event, error) bool) {
				lang, _ := inv.Session().Get("user:lang")
				ev := inv.NewEvent()
				ev.Content = genai.NewContentFromText(fmt.Sprintf("hello (lang=%v)", lang), genai.RoleModel)
				yield(ev, nil)
			}
		},
	})
	r, _ := runner.New(runner.Config{AppName: "demo", Agent: greeter, Sessions: memsession.NewService(), AutoCreateSession: true})
	ctx := context.Background()
	say := func() {
		evs, _ := r.RunSync(ctx, "alice", "s1", genai.NewContentFromText("hi", genai.RoleUser), nil)
		fmt.Println(evs[0].Text())
	}
	say()
	sess, err := r.UpdateState(ctx, "alice", "s1", map[string]any{"user:lang": "fr"})
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	last := sess.Events()[sess.Len()-1]
	fmt.Println("update event by", last.Author, "with", last.Actions.StateDelta)
	say()
	// Output:
	// hello (lang=<nil>)
	// update event by user with map[user:lang:fr]
	// hello (lang=fr)
}

// The model-call limit holds across resumes: each answer to the paused
// call resumes the same invocation, and the calls it made before count.
func ExampleRunOptions_maxLLMCalls() {
	ctx := context.Background()
	ask, _ := functiontool.New(functiontool.Config{Name: "ask", LongRunning: true},
		func(context.Context, tool.Context, struct{}) (map[string]any, error) { return nil, nil })
	m := scripted.New("m", func(context.Context, *model.Request) (scripted.Turn, error) { return scripted.Call("ask", nil), nil })
	asker, _ := llmagent.New(llmagent.Config{Name: "asker", Model: m, Tools: []tool.Tool{ask}})
	r, _ := runner.New(runner.Config{AppName: "demo", Agent: asker, Sessions: memsession.NewService(), AutoCreateSession: true})
	opts := &runner.RunOptions{MaxLLMCalls: 2}
	msg := genai.NewContentFromText("go", genai.RoleUser)
	for run := 1; run <= 3; run++ {
		var callID string
		for ev, err := range r.Run(ctx, "ada", "s1", msg, opts) {
			if err != nil {
				fmt.Printf("run %d: limit reached: %v\n", run, errors.Is(err, agent.ErrLLMCallLimit))
				return
			}
			if ev.LLMCall {
				fmt.Printf("run %d: model call\n", run)
			}
			if len(ev.LongRunningToolIDs) > 0 {
				callID = ev.LongRunningToolIDs[0]
			}
		}
		msg = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: &genai.FunctionResponse{
			ID: callID, Name: "ask", Response: map[string]any{"answer": run}}}}}
	}
	// Output:
	// run 1: model call
	// run 2: model call
	// run 3: limit reached: true
}

// Admit tells whether Run would accept a message before anything is
// stored: here, a run naming an invocation of a history the client
// imported, which only data can come from, is refused.
func ExampleRunner_Admit() {
	bot, _ := agent.New(agent.Config{
		Name: "bot",
		Run: func(context.Context, *agent.Invocation) iter.Seq2[*event.Event, error] {
			return func(func(*event.Event, error) bool) {}
		},
	})
	r, _ := runner.New(runner.Config{AppName: "demo", Agent: bot, Sessions: memsession.NewService()})
	ctx := context.Background()
	history := []*event.Event{event.NewUserText("e-old", "hello"), event.NewModelText("e-old", "bot", "hi")}
	sess, _ := r.CreateSession(ctx, "alice", "s1", nil, history)
	err := r.Admit(sess, genai.NewContentFromText("go on", genai.RoleUser), "e-old")
	fmt.Println(errors.Is(err, runner.ErrInvalid))
	fmt.Println(r.Admit(sess, genai.NewContentFromText("hello again", genai.RoleUser), "") == nil)
	// Output:
	// true
	// true
}
