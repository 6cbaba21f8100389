// Package loop is an example Loom application: a loop agent in which a
// writer improves a draft until a critic is satisfied and ends the loop.
//
// Each pass runs the writer, which extends the draft in state key "draft"
// (its output key) using the critic's last remarks ({critique?}), then the
// critic, which either stores new remarks under "critique" or calls the
// exit_loop tool. exit_loop escalates, and the loop stops once that event is
// committed; MaxIterations bounds the loop in case the critic never agrees.
//
// [Offline] returns a scripted model for both agents: the draft gains a
// sentence per pass and the critic accepts it at three sentences.
package loop

import (
	"context"
	"strings"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/agent/workflowagent"
	"github.com/loomkit/loom/examples/internal/offline"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
	"github.com/loomkit/loom/tool"
	"github.com/loomkit/loom/tool/exitlooptool"
)

// Name is the name of the root (loop) agent.
const Name = "refinement_loop"

// MaxIterations bounds the loop.
const MaxIterations = 5

// State keys written by the loop's agents.
const (
	DraftKey    = "draft"
	CritiqueKey = "critique"
)

const (
	writerInstruction = `You are a writer improving a short text on the user's topic, one step at a time.
Extend the current draft by one sentence, following the critique if there is one. Reply with the whole new draft only.

Current draft:
"""
{draft?}
"""

Critique:
"""
{critique?}
"""`

	criticInstruction = `You are a critic. If the draft below is complete (at least three sentences that build on each other), call the exit_loop tool and say nothing else.
Otherwise, reply with one short, concrete suggestion.

Draft:
"""
{draft}
"""`
)

// New returns the loop agent, both sub-agents answering with llm.
func New(llm model.LLM) (agent.Agent, error) {
	writer, err := llmagent.New(llmagent.Config{
		Name: "writer", Description: "Extends the draft by a sentence.",
		Model: llm, Instruction: writerInstruction, OutputKey: DraftKey,
		IncludeContents: llmagent.IncludeNone,
	})
	if err != nil {
		return nil, err
	}
	critic, err := llmagent.New(llmagent.Config{
		Name: "critic", Description: "Judges the draft; ends the loop when it is good.",
		Model: llm, Instruction: criticInstruction, OutputKey: CritiqueKey,
		Tools:           []tool.Tool{exitlooptool.New()},
		IncludeContents: llmagent.IncludeNone,
	})
	if err != nil {
		return nil, err
	}
	return workflowagent.NewLoop(workflowagent.LoopConfig{
		Config: workflowagent.Config{
			Name:        Name,
			Description: "Writes a short text and improves it until the critic is satisfied.",
			SubAgents:   []agent.Agent{writer, critic},
		},
		MaxIterations: MaxIterations,
	})
}

// Offline returns a scripted model for the writer and the critic. The
// writer adds one sentence per pass (starting over when the topic changes);
// the critic calls exit_loop once the draft has three sentences. It is
// deterministic and safe for concurrent use.
func Offline() model.LLM {
	return scripted.New("offline-loop", respond)
}

var steps = []string{
	"Every story about %s begins with a single, simple idea.",
	"Each revision makes that idea a little clearer and a little bolder.",
	"In the end, the idea stands on its own, and the work behind it disappears.",
}

func respond(_ context.Context, req *model.Request) (scripted.Turn, error) {
	ins := offline.Instruction(req)
	draft := offline.Quoted(ins, "Draft")
	if strings.Contains(ins, "You are a critic.") {
		if Sentences(draft) >= len(steps) {
			return scripted.Call(exitlooptool.Name, map[string]any{}), nil
		}
		return scripted.Text("Add one more sentence that moves the idea forward."), nil
	}
	topic := strings.TrimRight(strings.TrimSpace(offline.UserText(req)), ".!? ")
	if topic == "" {
		topic = "writing"
	}
	first := strings.Replace(steps[0], "%s", topic, 1)
	draft = offline.Quoted(ins, "Current draft")
	n := Sentences(draft)
	if !strings.HasPrefix(draft, first) || n >= len(steps) {
		return scripted.Text(first), nil
	}
	return scripted.Text(draft + " " + steps[n]), nil
}

// Sentences counts the sentences of a text by their final periods.
func Sentences(text string) int {
	return strings.Count(text, ".")
}
