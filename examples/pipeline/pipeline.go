// Package pipeline is an example Loom application: a sequential pipeline of
// three LLM agents that pass work along through session state.
//
// The writer drafts a short text on the user's topic and stores it under
// the state key "draft" (its output key). The reviewer's instruction quotes
// {draft}, filled in from state, and it stores its critique under "review".
// The editor's instruction quotes both and it stores the final text under
// "final". Each agent reads the state the previous one committed: the
// runner commits an event before the pipeline moves on.
//
// [Offline] returns a scripted model that plays all three parts, so the
// example runs without a network.
package pipeline

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/agent/llmagent"
	"github.com/loomkit/loom/agent/workflowagent"
	"github.com/loomkit/loom/examples/internal/offline"
	"github.com/loomkit/loom/model"
	"github.com/loomkit/loom/model/scripted"
)

// Name is the name of the root (sequential) agent.
const Name = "pipeline"

// State keys written by the pipeline's agents.
const (
	DraftKey  = "draft"
	ReviewKey = "review"
	FinalKey  = "final"
)

const (
	writerInstruction = `You are a writer. Write a short paragraph (two sentences) about the topic the user gives. Reply with the paragraph only.`

	reviewerInstruction = `You are a reviewer. Suggest at most two concrete improvements to the draft below, as a numbered list.

Draft:
"""
{draft}
"""`

	editorInstruction = `You are an editor. Rewrite the draft below, applying the review. Reply with the final text only.

Draft:
"""
{draft}
"""

Review:
"""
{review}
"""`
)

// New returns the writer → reviewer → editor pipeline, every agent
// answering with llm.
func New(llm model.LLM) (agent.Agent, error) {
	writer, err := llmagent.New(llmagent.Config{
		Name: "writer", Description: "Drafts a short paragraph on a topic.",
		Model: llm, Instruction: writerInstruction, OutputKey: DraftKey,
	})
	if err != nil {
		return nil, err
	}
	reviewer, err := llmagent.New(llmagent.Config{
		Name: "reviewer", Description: "Reviews the draft.",
		Model: llm, Instruction: reviewerInstruction, OutputKey: ReviewKey,
		IncludeContents: llmagent.IncludeNone,
	})
	if err != nil {
		return nil, err
	}
	editor, err := llmagent.New(llmagent.Config{
		Name: "editor", Description: "Rewrites the draft following the review.",
		Model: llm, Instruction: editorInstruction, OutputKey: FinalKey,
		IncludeContents: llmagent.IncludeNone,
	})
	if err != nil {
		return nil, err
	}
	return workflowagent.NewSequential(workflowagent.Config{
		Name:        Name,
		Description: "Writes, reviews and refines a short text on the user's topic.",
		SubAgents:   []agent.Agent{writer, reviewer, editor},
	})
}

// Offline returns a scripted model for the three agents. It tells them
// apart by their instructions and reads the quoted draft and review from
// them, as a real model would. It is deterministic and safe for concurrent
// use.
func Offline() model.LLM {
	return scripted.New("offline-pipeline", respond)
}

func respond(_ context.Context, req *model.Request) (scripted.Turn, error) {
	ins := offline.Instruction(req)
	topic := topicOf(offline.UserText(req))
	switch {
	case strings.Contains(ins, "You are a reviewer."):
		draft := offline.Quoted(ins, "Draft")
		if draft == "" {
			return scripted.Text("There is no draft to review."), nil
		}
		return scripted.Text("1. Open with a concrete picture.\n2. End with a question to the reader."), nil
	case strings.Contains(ins, "You are an editor."):
		draft := offline.Quoted(ins, "Draft")
		if draft == "" {
			return scripted.Text("There is no draft to edit."), nil
		}
		return scripted.Text(fmt.Sprintf("Picture this: %s What does %s mean to you?", lowerFirst(draft), topic)), nil
	}
	return scripted.Text(fmt.Sprintf("The story of %s touches more of daily life than most people notice. A closer look at %s shows how much care goes into it.",
		topic, topic)), nil
}

// topicOf turns a request such as "Write about tea." into "tea".
func topicOf(text string) string {
	t := strings.TrimSpace(text)
	for _, prefix := range []string{"write about ", "write a text about ", "write something about ", "about "} {
		if len(t) >= len(prefix) && strings.EqualFold(t[:len(prefix)], prefix) {
			t = t[len(prefix):]
			break
		}
	}
	t = strings.TrimRight(t, ".!? ")
	if t == "" {
		return "writing"
	}
	return t
}

func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToLower(r)) + s[n:]
}
