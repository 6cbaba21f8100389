package compaction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
)

// DefaultPrompt is the instruction [LLMSummarizer] gives the model when no
// prompt is set.
const DefaultPrompt = `The transcript below is part of a conversation between a user and an AI assistant. ` +
	`Write a summary of it that can stand in for the transcript in the assistant's memory. ` +
	`Keep every fact, decision, name, number, preference, open question and tool result that later turns may need; ` +
	`drop greetings, small talk and repetition. If the transcript starts with earlier summaries, fold them in. ` +
	`Answer with the summary only, as concise prose.`

// LLMSummarizer returns a Summarizer that asks llm for the summary: it sends
// one user message made of prompt (DefaultPrompt if empty) and a plain-text
// transcript of the events, and uses the text of the answer.
func LLMSummarizer(llm model.LLM, prompt string) Summarizer {
	if prompt == "" {
		prompt = DefaultPrompt
	}
	return &llmSummarizer{llm: llm, prompt: prompt}
}

type llmSummarizer struct {
	llm    model.LLM
	prompt string
}

func (s *llmSummarizer) Summarize(ctx context.Context, events []*event.Event) (*genai.Content, error) {
	text := s.prompt + "\n\n" + Transcript(events)
	req := &model.Request{Model: s.llm.Name(), Contents: []*genai.Content{genai.NewContentFromText(text, genai.RoleUser)}}
	var final *model.Response
	for resp, err := range s.llm.Generate(ctx, req, false) {
		if err != nil {
			return nil, err
		}
		if resp != nil && !resp.Partial {
			final = resp
		}
	}
	if final == nil {
		return nil, model.ErrNoResponse
	}
	if final.ErrorCode != "" || final.ErrorMessage != "" {
		return nil, fmt.Errorf("model error %s: %s", final.ErrorCode, final.ErrorMessage)
	}
	summary := strings.TrimSpace(final.Text())
	if summary == "" {
		return nil, errors.New("the model returned an empty summary")
	}
	return genai.NewContentFromText(summary, genai.RoleModel), nil
}

// Transcript renders events as plain text, one line per part: who said
// what, which tools were called with which arguments and what they
// returned. A compaction event renders as its summary. Thoughts are left
// out; files are named by their MIME type.
func Transcript(events []*event.Event) string {
	var b strings.Builder
	for _, e := range events {
		if c := e.Actions.Compaction; c != nil {
			b.WriteString("[summary of earlier conversation] ")
			b.WriteString(strings.TrimSpace(model.Text(c.Content, "")))
			b.WriteByte('\n')
			continue
		}
		if e.Content == nil {
			continue
		}
		for _, p := range e.Content.Parts {
			switch {
			case p == nil || p.Thought:
			case p.Text != "":
				fmt.Fprintf(&b, "%s: %s\n", e.Author, p.Text)
			case p.FunctionCall != nil:
				fmt.Fprintf(&b, "%s called tool %s with %s\n", e.Author, p.FunctionCall.Name, jsonText(p.FunctionCall.Args))
			case p.FunctionResponse != nil:
				fmt.Fprintf(&b, "tool %s returned %s\n", p.FunctionResponse.Name, jsonText(p.FunctionResponse.Response))
			case p.InlineData != nil:
				fmt.Fprintf(&b, "%s sent a file (%s)\n", e.Author, p.InlineData.MIMEType)
			case p.FileData != nil:
				fmt.Fprintf(&b, "%s sent a file (%s)\n", e.Author, p.FileData.MIMEType)
			case p.ExecutableCode != nil:
				fmt.Fprintf(&b, "%s ran code:\n%s\n", e.Author, p.ExecutableCode.Code)
			case p.CodeExecutionResult != nil:
				fmt.Fprintf(&b, "code output: %s\n", p.CodeExecutionResult.Output)
			}
		}
	}
	return b.String()
}

func jsonText(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(data)
}
