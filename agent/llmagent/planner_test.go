package llmagent_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/runner"
	"github.com/loomkit/loom/tool"
)

func thoughtTexts(contents []*genai.Content) []string {
	var out []string
	for _, c := range contents {
		for _, p := range c.Parts {
			if p.Thought {
				out = append(out, p.Text)
			}
		}
	}
	return out
}

// TestBuiltInPlanner checks that the built-in planner sets the thinking
// config of every request, keeps the current turn's thoughts during a tool
// loop, and leaves earlier turns' thoughts out of later requests.
func TestBuiltInPlanner(t *testing.T) {
	budget := int32(2048)
	turns := []scripted.Turn{
		{Thought: "need the tool", Calls: []*genai.FunctionCall{{Name: "lookup"}}},
		{Thought: "got it", Text: "first answer"},
		{Thought: "second thoughts", Text: "second answer"},
	}
	for _, keep := range []bool{false, true} {
		m := scripted.NewSequence("m", turns...)
		a := mustAgent(t, llmagent.Config{Name: "a", Model: m, KeepThoughts: keep,
			Planner: llmagent.BuiltInPlanner{Thinking: &genai.ThinkingConfig{IncludeThoughts: true, ThinkingBudget: &budget}},
			Tools: []tool.Tool{fnTool{name: "lookup", run: func(context.Context, tool.Context, map[string]any) (map[string]any, error) {
				return map[string]any{"ok": true}, nil
			}}}})
		f := newFixture(t, a, nil, nil)
		f.run(t, "one", nil)
		f.run(t, "two", nil)
		reqs := m.Requests()
		if len(reqs) != 3 {
			t.Fatalf("keep=%v: %d requests", keep, len(reqs))
		}
		for i, r := range reqs {
			tc := r.Config.ThinkingConfig
			if tc == nil || !tc.IncludeThoughts || tc.ThinkingBudget == nil || *tc.ThinkingBudget != 2048 {
				t.Errorf("keep=%v: request %d thinking config = %+v", keep, i, tc)
			}
		}
		if got := thoughtTexts(reqs[1].Contents); len(got) != 1 || got[0] != "need the tool" {
			t.Errorf("keep=%v: tool-loop request thoughts = %q, want the current turn's", keep, got)
		}
		got := thoughtTexts(reqs[2].Contents)
		if keep && len(got) != 2 {
			t.Errorf("KeepThoughts: next turn's thoughts = %q, want both earlier ones", got)
		}
		if !keep && len(got) != 0 {
			t.Errorf("next turn's request carries earlier thoughts %q", got)
		}
	}
}

// TestPlanReActPlanner checks the planning instruction and that only the
// final answer is the response text: the plan and reasoning become thought
// parts, function calls stay.
func TestPlanReActPlanner(t *testing.T) {
	m := scripted.NewSequence("m",
		scripted.Turn{Text: "/*PLANNING*/\n1. look it up\n/*ACTION*/\n", Calls: []*genai.FunctionCall{{Name: "lookup"}}},
		scripted.Turn{Text: "/*REASONING*/ the tool said Paris.\n/*FINAL_ANSWER*/\nParis"},
	)
	a := mustAgent(t, llmagent.Config{Name: "a", Model: m, OutputKey: "answer", Planner: llmagent.PlanReActPlanner{},
		Tools: []tool.Tool{fnTool{name: "lookup", run: func(context.Context, tool.Context, map[string]any) (map[string]any, error) {
			return map[string]any{"city": "Paris"}, nil
		}}}})
	f := newFixture(t, a, nil, nil)
	evs := f.run(t, "capital of France?", nil)
	sys := strings.Join(systemTexts(m.Requests()[0]), "\n")
	if !strings.Contains(sys, llmagent.TagPlanning) || !strings.Contains(sys, llmagent.TagFinalAnswer) {
		t.Errorf("no planning instruction in %q", sys)
	}
	first := evs[0]
	if len(first.FunctionCalls()) != 1 || first.Text() != "" || !first.Content.Parts[0].Thought {
		t.Errorf("planning event: text %q, parts %+v", first.Text(), first.Content.Parts)
	}
	last := evs[len(evs)-1]
	if last.Text() != "Paris" {
		t.Errorf("final text = %q, want Paris", last.Text())
	}
	if !last.Content.Parts[0].Thought || !strings.Contains(last.Content.Parts[0].Text, "the tool said Paris") {
		t.Errorf("reasoning not kept as a thought: %+v", last.Content.Parts[0])
	}
	if v, _ := f.session(t).Get("answer"); v != "Paris" {
		t.Errorf("output key = %v", v)
	}
}

// TestPlanReActKeepsPlainText checks that an answer without tags is left
// as it is.
func TestPlanReActKeepsPlainText(t *testing.T) {
	parts := []*genai.Part{{Text: "just an answer"}}
	if got := (llmagent.PlanReActPlanner{}).ProcessResponse(context.Background(), nil, parts); len(got) != 1 || got[0].Thought || got[0].Text != "just an answer" {
		t.Fatalf("parts = %+v", got)
	}
}

// TestPlanReActStreaming checks that streamed chunks of the plan are
// marked as thoughts, even when the final-answer tag is split across
// chunks, and that only the answer streams as text.
func TestPlanReActStreaming(t *testing.T) {
	m := scripted.NewSequence("m", scripted.Turn{
		Text:   "/*PLANNING*/ add them /*FINAL_ANSWER*/ 42",
		Chunks: []string{"/*PLANNING*/ add", " them /*FINAL_", "ANSWER*/ 4", "2"},
	})
	a := mustAgent(t, llmagent.Config{Name: "a", Model: m, Planner: llmagent.PlanReActPlanner{}})
	evs := newFixture(t, a, nil, nil).run(t, "40+2?", &runner.RunOptions{Streaming: true})
	answer, thought := streamed(evs)
	if answer != "42" {
		t.Errorf("streamed answer = %q (thought %q)", answer, thought)
	}
	if !strings.Contains(thought, "add") {
		t.Errorf("streamed thought = %q", thought)
	}
	if last := evs[len(evs)-1]; last.Partial || last.Text() != "42" {
		t.Errorf("final = %q", last.Text())
	}
}

// TestPlanReActStreamingByteChunks streams a long plan one byte per chunk:
// the tags, split over many chunks, still divide thought from answer.
func TestPlanReActStreamingByteChunks(t *testing.T) {
	plan := "/*PLANNING*/ " + strings.Repeat("think ", 500) + "/*ACTION*/ act "
	text := plan + "/*FINAL_ANSWER*/ the answer"
	chunks := make([]string, len(text))
	for i := range text {
		chunks[i] = text[i : i+1]
	}
	m := scripted.NewSequence("m", scripted.Turn{Text: text, Chunks: chunks})
	a := mustAgent(t, llmagent.Config{Name: "a", Model: m, Planner: llmagent.PlanReActPlanner{}})
	evs := newFixture(t, a, nil, nil).run(t, "go", &runner.RunOptions{Streaming: true})
	answer, thought := streamed(evs)
	// A chunk is thought once a planning tag is complete: the bytes of the
	// first tag before its last one went out as answer text, and those of
	// the final-answer tag before its last one as thought.
	first := len(llmagent.TagPlanning) - 1
	if got, want := thought, plan[first:]+"/*FINAL_ANSWER*"; got != want {
		t.Errorf("streamed thought = %.30q…%q, want %.30q…%q", got, got[max(len(got)-30, 0):], want, want[len(want)-30:])
	}
	if got, want := answer, plan[:first]+" the answer"; got != want {
		t.Errorf("streamed answer = %q, want %q", got, want)
	}
}

// streamed returns the answer and thought text of the partial events.
func streamed(evs []*event.Event) (answer, thought string) {
	var a, t strings.Builder
	for _, ev := range evs {
		if !ev.Partial {
			continue
		}
		for _, p := range ev.Content.Parts {
			if p.Thought {
				t.WriteString(p.Text)
			} else {
				a.WriteString(p.Text)
			}
		}
	}
	return a.String(), t.String()
}
