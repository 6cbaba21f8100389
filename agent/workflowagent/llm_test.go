package workflowagent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/agent/workflowagent"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/session"
	"github.com/loomkit/loom/session/memsession"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/exitlooptool"
)

func mustLLM(t testing.TB, cfg llmagent.Config) *llmagent.Agent {
	t.Helper()
	a, err := llmagent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestA5LoopExitLoopTool: an LLM agent in an unbounded loop calls exit_loop
// on its second pass; its escalating tool response is committed and ends
// the loop.
func TestA5LoopExitLoopTool(t *testing.T) {
	llm := scripted.NewSequence("m",
		scripted.Text("first pass"),
		scripted.Call(exitlooptool.Name, nil),
		scripted.Text("never asked for"),
	)
	worker := mustLLM(t, llmagent.Config{Name: "worker", Model: llm, Tools: []tool.Tool{exitlooptool.New()}})
	loop := mustLoop(t, workflowagent.LoopConfig{Config: workflowagent.Config{Name: "loop", SubAgents: []agent.Agent{worker}}})
	f := newFixture(t, loop)
	evs, errs := f.runAll(t)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(evs) != 3 {
		t.Fatalf("got %d events, want 3 (text, call, response)", len(evs))
	}
	last := evs[2]
	if len(last.FunctionResponses()) != 1 || !last.Actions.Escalate || !last.Actions.SkipSummarization {
		t.Errorf("last event %+v, want the escalating exit_loop response", last.Actions)
	}
	if n := len(llm.Requests()); n != 2 {
		t.Errorf("model called %d times, want 2", n)
	}
	stored := f.storedContent(t)
	if got := stored[len(stored)-1]; got.ID != last.ID {
		t.Errorf("last stored event %s, want the exit_loop response %s", got.ID, last.ID)
	}
}

// blockingTool waits until release is closed (or ctx is done).
type blockingTool struct{ release <-chan struct{} }

func (blockingTool) Name() string        { return "wait" }
func (blockingTool) Description() string { return "Waits." }
func (blockingTool) Declaration() *genai.FunctionDeclaration {
	return &genai.FunctionDeclaration{Name: "wait", Description: "Waits.",
		ParametersJsonSchema: map[string]any{"type": "object", "properties": map[string]any{}}}
}
func (b blockingTool) Run(ctx context.Context, _ tool.Context, _ map[string]any) (map[string]any, error) {
	if !waitOr(ctx, b.release) {
		return nil, ctx.Err()
	}
	return map[string]any{}, nil
}

// TestA4ParallelLLMHistoryExcludesSiblings: an LLM child's model history
// leaves out a sibling's events, even ones committed before its model call.
func TestA4ParallelLLMHistoryExcludesSiblings(t *testing.T) {
	siblingDone := make(chan struct{})
	llmA := scripted.NewSequence("ma", scripted.Call("wait", nil), scripted.Text("a done"))
	a := mustLLM(t, llmagent.Config{Name: "a", Model: llmA, Tools: []tool.Tool{blockingTool{release: siblingDone}}})
	b := mustLLM(t, llmagent.Config{
		Name:  "b",
		Model: scripted.NewSequence("mb", scripted.Text("SIBLING-SECRET")),
		// The after-agent callback runs once b's event has been committed.
		AfterAgent: []agent.AfterAgentCallback{func(context.Context, *agent.CallbackContext) (*genai.Content, error) {
			close(siblingDone)
			return nil, nil
		}},
	})
	f := newFixture(t, mustParallel(t, workflowagent.Config{Name: "par", SubAgents: []agent.Agent{a, b}}))
	evs, errs := f.runAll(t)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(evs) != 4 {
		t.Fatalf("got %d events, want 4", len(evs))
	}
	reqs := llmA.Requests()
	if len(reqs) != 2 {
		t.Fatalf("a's model called %d times, want 2", len(reqs))
	}
	for _, c := range reqs[1].Contents {
		for _, p := range c.Parts {
			if strings.Contains(p.Text, "SIBLING-SECRET") {
				t.Errorf("a's history contains its sibling's event: %q", p.Text)
			}
		}
	}
	if n := len(f.storedContent(t)); n != 5 {
		t.Errorf("stored %d events besides checkpoints, want 5", n)
	}
}

// A sequential pipeline of two LLM agents: the writer's answer is stored
// under its output key, and the reviewer's instruction reads it with
// {draft} templating. The scripted models stand in for real ones.
func ExampleNewSequential_llmAgents() {
	writer, _ := llmagent.New(llmagent.Config{
		Name:        "writer",
		Model:       scripted.NewSequence("writer-model", scripted.Text("Gophers dig tunnels.")),
		Instruction: "Write one sentence about the user's topic.",
		OutputKey:   "draft",
	})
	// The reviewer's model echoes the first line of its system instruction,
	// which holds the draft.
	reviewerModel := scripted.New("reviewer-model", func(ctx context.Context, req *model.Request) (scripted.Turn, error) {
		instr, _, _ := strings.Cut(req.Config.SystemInstruction.Parts[0].Text, "\n")
		return scripted.Text("Approved: " + strings.TrimPrefix(instr, "Review this draft: ")), nil
	})
	reviewer, _ := llmagent.New(llmagent.Config{
		Name:        "reviewer",
		Model:       reviewerModel,
		Instruction: "Review this draft: {draft}",
		OutputKey:   "review",
	})
	pipeline, _ := workflowagent.NewSequential(workflowagent.Config{
		Name:      "pipeline",
		SubAgents: []agent.Agent{writer, reviewer},
	})

	ctx := context.Background()
	sessions := memsession.NewService()
	key := session.Key{AppName: "docs", UserID: "ada", SessionID: "s1"}
	if _, err := sessions.Create(ctx, key, nil); err != nil {
		fmt.Println(err)
		return
	}
	r, _ := runner.New(runner.Config{AppName: "docs", Agent: pipeline, Sessions: sessions})
	for ev, err := range r.Run(ctx, "ada", "s1", genai.NewContentFromText("gophers", genai.RoleUser), nil) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if agent.IsCheckpoint(ev) {
			continue // where the workflow is, recorded for resuming
		}
		fmt.Printf("%s: %s\n", ev.Author, ev.Text())
	}
	s, _ := sessions.Get(ctx, key, nil)
	draft, _ := s.Get("draft")
	review, _ := s.Get("review")
	fmt.Println("draft:", draft)
	fmt.Println("review:", review)
	// Output:
	// writer: Gophers dig tunnels.
	// reviewer: Approved: Gophers dig tunnels.
	// draft: Gophers dig tunnels.
	// review: Approved: Gophers dig tunnels.
}
