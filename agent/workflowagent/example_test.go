package workflowagent_test

import (
	"context"
	"fmt"
	"iter"
	"strings"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/workflowagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
)

// A sequential pipeline of two custom agents: the writer stores a draft in
// the session state, and the editor, which runs after the draft has been
// committed, reads it and stores the edited version.
func ExampleNewSequential() {
	writer, _ := agent.New(agent.Config{
		Name: "writer",
		Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
			return func(yield func(*event.Event, error) bool) {
				ev := inv.NewEvent()
				ev.Content = genai.NewContentFromText("here is a draft", genai.RoleModel)
				ev.Actions.StateDelta = map[string]any{"draft": "hello, world"}
				yield(ev, nil)
			}
		},
	})
	editor, _ := agent.New(agent.Config{
		Name: "editor",
		Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
			return func(yield func(*event.Event, error) bool) {
				draft, _ := inv.Session().Get("draft")
				ev := inv.NewEvent()
				ev.Content = genai.NewContentFromText("edited the draft", genai.RoleModel)
				ev.Actions.StateDelta = map[string]any{"final": strings.ToUpper(draft.(string))}
				yield(ev, nil)
			}
		},
	})
	pipeline, err := workflowagent.NewSequential(workflowagent.Config{
		Name:      "pipeline",
		SubAgents: []agent.Agent{writer, editor},
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx := context.Background()
	sessions := memsession.NewService()
	key := session.Key{AppName: "docs", UserID: "ada", SessionID: "s1"}
	if _, err := sessions.Create(ctx, key, nil); err != nil {
		fmt.Println(err)
		return
	}
	r, err := runner.New(runner.Config{AppName: "docs", Agent: pipeline, Sessions: sessions})
	if err != nil {
		fmt.Println(err)
		return
	}
	for ev, err := range r.Run(ctx, "ada", "s1", genai.NewContentFromText("write something", genai.RoleUser), nil) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if agent.IsCheckpoint(ev) {
			continue // where the workflow is, recorded for resuming
		}
		fmt.Printf("%s: %s\n", ev.Author, ev.Content.Parts[0].Text)
	}

	s, _ := sessions.Get(ctx, key, nil)
	final, _ := s.Get("final")
	fmt.Println("final:", final)
	// Output:
	// writer: here is a draft
	// editor: edited the draft
	// final: HELLO, WORLD
}

// A parallel agent runs its children concurrently, each on its own branch.
func ExampleNewParallel() {
	newReporter := func(name string) agent.Agent {
		a, _ := agent.New(agent.Config{
			Name: name,
			Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
				return func(yield func(*event.Event, error) bool) {
					ev := inv.NewEvent()
					ev.Actions.StateDelta = map[string]any{name: "done"}
					yield(ev, nil)
				}
			},
		})
		return a
	}
	fanout, _ := workflowagent.NewParallel(workflowagent.Config{
		Name:      "fanout",
		SubAgents: []agent.Agent{newReporter("north"), newReporter("south")},
	})

	ctx := context.Background()
	sessions := memsession.NewService()
	key := session.Key{AppName: "docs", UserID: "ada", SessionID: "s1"}
	if _, err := sessions.Create(ctx, key, nil); err != nil {
		fmt.Println(err)
		return
	}
	r, _ := runner.New(runner.Config{AppName: "docs", Agent: fanout, Sessions: sessions})
	branches := map[string]string{}
	for ev, err := range r.Run(ctx, "ada", "s1", genai.NewContentFromText("go", genai.RoleUser), nil) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if agent.IsCheckpoint(ev) {
			continue
		}
		branches[ev.Author] = ev.Branch // the order of the two events varies
	}
	fmt.Println(branches["north"], branches["south"])
	s, _ := sessions.Get(ctx, key, nil)
	n, _ := s.Get("north")
	so, _ := s.Get("south")
	fmt.Println(n, so)
	// Output:
	// fanout.north fanout.south
	// done done
}

// A loop agent repeats its children until one escalates or the iteration
// bound is reached.
func ExampleNewLoop() {
	counter, _ := agent.New(agent.Config{
		Name: "counter",
		Run: func(ctx context.Context, inv *agent.Invocation) iter.Seq2[*event.Event, error] {
			return func(yield func(*event.Event, error) bool) {
				n, _ := inv.Session().Get("n")
				next := 1
				if v, ok := n.(float64); ok { // state numbers read back as float64
					next = int(v) + 1
				}
				ev := inv.NewEvent()
				ev.Actions.StateDelta = map[string]any{"n": next}
				ev.Actions.Escalate = next == 3 // enough: end the loop
				yield(ev, nil)
			}
		},
	})
	loop, _ := workflowagent.NewLoop(workflowagent.LoopConfig{
		Config:        workflowagent.Config{Name: "loop", SubAgents: []agent.Agent{counter}},
		MaxIterations: 10,
	})

	ctx := context.Background()
	sessions := memsession.NewService()
	if _, err := sessions.Create(ctx, session.Key{AppName: "docs", UserID: "ada", SessionID: "s1"}, nil); err != nil {
		fmt.Println(err)
		return
	}
	r, _ := runner.New(runner.Config{AppName: "docs", Agent: loop, Sessions: sessions})
	events, err := r.RunSync(ctx, "ada", "s1", genai.NewContentFromText("count", genai.RoleUser), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, ev := range events {
		if agent.IsCheckpoint(ev) {
			continue
		}
		fmt.Println(ev.Author, ev.Actions.StateDelta["n"], ev.Actions.Escalate)
	}
	// Output:
	// counter 1 false
	// counter 2 false
	// counter 3 true
}
