package llmagent

import (
	"context"
	"strings"

	"google.golang.org/genai"

	"github.com/loomkit/loom/agent"
	"github.com/loomkit/loom/model"
)

// Planner shapes how the model plans before it acts. The agent calls
// ProcessRequest on every request, after the request is built and before
// the before-model callbacks, and ProcessResponse on every complete
// (non-partial) model response, before the response is committed.
//
// With a planner, thought parts of earlier turns are left out of the
// requests the agent sends (see Config.KeepThoughts); other agents never
// see an agent's thoughts.
type Planner interface {
	// ProcessRequest adjusts the request: thinking settings, planning
	// instructions. The request and its config are the step's own; the
	// contents in it are the agent's model history, shared with later
	// steps, to be added to or replaced (req.Contents) but not changed.
	ProcessRequest(ctx context.Context, cc *agent.CallbackContext, req *model.Request) error
	// ProcessResponse returns the parts the response should carry
	// instead of parts, or nil to keep them.
	ProcessResponse(ctx context.Context, cc *agent.CallbackContext, parts []*genai.Part) []*genai.Part
}

// BuiltInPlanner uses the model's own thinking: it sets the thinking
// config of every request. The adapters map it to each provider's setting
// (Gemini's thinkingConfig, Anthropic's extended thinking budget, OpenAI's
// reasoning effort).
type BuiltInPlanner struct {
	// Thinking is the thinking config sent with every request; nil means
	// thoughts included with the model's default budget.
	Thinking *genai.ThinkingConfig
}

var _ Planner = BuiltInPlanner{}

// ProcessRequest implements Planner.
func (p BuiltInPlanner) ProcessRequest(_ context.Context, _ *agent.CallbackContext, req *model.Request) error {
	tc := genai.ThinkingConfig{IncludeThoughts: true}
	if p.Thinking != nil {
		tc = *p.Thinking
	}
	if req.Config == nil {
		req.Config = &genai.GenerateContentConfig{}
	}
	req.Config.ThinkingConfig = &tc
	return nil
}

// ProcessResponse implements Planner; the model marks its thoughts itself.
func (BuiltInPlanner) ProcessResponse(context.Context, *agent.CallbackContext, []*genai.Part) []*genai.Part {
	return nil
}

// The section tags of the plan-then-act format.
const (
	TagPlanning    = "/*PLANNING*/"
	TagReplanning  = "/*REPLANNING*/"
	TagReasoning   = "/*REASONING*/"
	TagAction      = "/*ACTION*/"
	TagFinalAnswer = "/*FINAL_ANSWER*/"
)

// PlanReActPlanner makes a model without built-in thinking plan before it
// acts: it instructs the model to write a plan under /*PLANNING*/, to
// reason under /*REASONING*/ and act (tool calls) under /*ACTION*/,
// revising the plan under /*REPLANNING*/ when needed, and to answer under
// /*FINAL_ANSWER*/. Only the final answer is the agent's response text;
// the other sections are kept as thought parts.
type PlanReActPlanner struct{}

var _ Planner = PlanReActPlanner{}

// planReActInstruction is sent with every request.
const planReActInstruction = `Work in two stages: plan, then act.

Start with a plan under the heading ` + TagPlanning + `: the numbered steps that will answer the question, naming the tools each step uses.
Then carry the plan out. Before each tool call, write your reasoning under ` + TagReasoning + ` and state what you will do under ` + TagAction + `, then call the tool. Read each tool's result before the next step.
If a result shows the plan will not work, write a new plan under ` + TagReplanning + ` and follow it instead.
When you can answer, write the answer under ` + TagFinalAnswer + `. Everything after that heading is shown to the user as your answer; everything before it is not.

Use only the tools you are given, with the arguments they declare. Keep the plan short and the answer complete.`

// ProcessRequest implements Planner.
func (PlanReActPlanner) ProcessRequest(_ context.Context, _ *agent.CallbackContext, req *model.Request) error {
	appendInstruction(req, planReActInstruction)
	return nil
}

// ProcessResponse implements Planner: text before the final-answer tag,
// and text that opens with a planning, reasoning or action tag, become
// thought parts; the text after the final-answer tag is the answer.
// Function calls are kept as they are.
func (PlanReActPlanner) ProcessResponse(_ context.Context, _ *agent.CallbackContext, parts []*genai.Part) []*genai.Part {
	out := make([]*genai.Part, 0, len(parts)+1)
	answering := false // a final-answer tag was seen: later text is answer
	for _, p := range parts {
		if p == nil || p.Text == "" || p.Thought || p.FunctionCall != nil {
			if p != nil {
				out = append(out, p)
			}
			continue
		}
		if before, after, ok := strings.Cut(p.Text, TagFinalAnswer); ok {
			if strings.TrimSpace(before) != "" {
				out = append(out, &genai.Part{Text: before, Thought: true})
			}
			if after = strings.TrimSpace(after); after != "" {
				out = append(out, &genai.Part{Text: after})
			}
			answering = true
			continue
		}
		if !answering && hasPlanningTag(p.Text) {
			cp := *p
			cp.Thought = true
			out = append(out, &cp)
			continue
		}
		out = append(out, p)
	}
	return out
}

func hasPlanningTag(s string) bool {
	for _, tag := range []string{TagPlanning, TagReplanning, TagReasoning, TagAction} {
		if strings.Contains(s, tag) {
			return true
		}
	}
	return false
}

// withoutEarlierThoughts returns contents without the thought parts of the
// turns before the current one (the latest user message and what followed
// it), sharing every content it does not change.
func withoutEarlierThoughts(contents []*genai.Content) []*genai.Content {
	start := len(contents)
	for i := len(contents) - 1; i >= 0; i-- {
		if c := contents[i]; c != nil && c.Role == genai.RoleUser && hasUserText(c) {
			start = i
			break
		}
	}
	var out []*genai.Content
	for i, c := range contents[:start] {
		if c == nil || !hasThought(c) {
			if out != nil {
				out = append(out, c)
			}
			continue
		}
		if out == nil {
			out = make([]*genai.Content, 0, len(contents))
			out = append(out, contents[:i]...)
		}
		kept := &genai.Content{Role: c.Role}
		for _, p := range c.Parts {
			if p != nil && !p.Thought {
				kept.Parts = append(kept.Parts, p)
			}
		}
		if len(kept.Parts) > 0 {
			out = append(out, kept)
		}
	}
	if out == nil {
		return contents
	}
	return append(out, contents[start:]...)
}

func hasThought(c *genai.Content) bool {
	for _, p := range c.Parts {
		if p != nil && p.Thought {
			return true
		}
	}
	return false
}

func hasUserText(c *genai.Content) bool {
	for _, p := range c.Parts {
		if p != nil && p.FunctionResponse == nil && (p.Text != "" || p.InlineData != nil || p.FileData != nil) {
			return true
		}
	}
	return false
}

// planReActStream marks the streamed text of a plan-then-act response:
// text before the final-answer tag, once a planning tag has appeared, is
// thought; text after it is the answer. A tag may be split across chunks,
// so it keeps the end of the text seen so far, shorter than any tag: each
// chunk is searched once, whatever the length of the response.
type planReActStream struct {
	tail      string // the last bytes seen, fewer than the longest tag
	planning  bool   // a planning tag has appeared
	answering bool
}

// longestPlanTag is the length of the longest tag planReActStream looks for.
const longestPlanTag = len(TagFinalAnswer)

// process returns the content of a partial response with its text parts
// marked; content is not modified.
func (s *planReActStream) process(c *genai.Content) *genai.Content {
	if c == nil {
		return c
	}
	out := &genai.Content{Role: c.Role, Parts: make([]*genai.Part, 0, len(c.Parts))}
	for _, p := range c.Parts {
		if p == nil || p.Text == "" || p.Thought || s.answering {
			out.Parts = append(out.Parts, p)
			continue
		}
		before := len(s.tail)
		window := s.tail + p.Text
		s.tail = window[max(len(window)-(longestPlanTag-1), 0):]
		if i := strings.Index(window, TagFinalAnswer); i >= 0 {
			s.answering = true
			// The tag may have begun in an earlier chunk.
			cut := max(i+len(TagFinalAnswer)-before, 0)
			if head := p.Text[:min(max(i-before, 0), len(p.Text))]; head != "" {
				out.Parts = append(out.Parts, &genai.Part{Text: head, Thought: true})
			}
			if tail := strings.TrimLeft(p.Text[min(cut, len(p.Text)):], " \n"); tail != "" {
				out.Parts = append(out.Parts, &genai.Part{Text: tail})
			}
			continue
		}
		s.planning = s.planning || hasPlanningTag(window)
		cp := *p
		cp.Thought = s.planning
		out.Parts = append(out.Parts, &cp)
	}
	return out
}
