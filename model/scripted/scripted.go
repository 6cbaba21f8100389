// Package scripted provides a deterministic model for tests, examples,
// benchmarks and offline demos. It answers from a script instead of a
// network: fixed turns played in order, or a function of the request.
package scripted

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
)

// ErrExhausted is returned when a sequence script has no turns left.
var ErrExhausted = errors.New("scripted: script exhausted")

// Turn is one scripted model response.
type Turn struct {
	// Text is the response text.
	Text string
	// Chunks, when set, is how the text streams: one partial response per
	// chunk (their concatenation is the text). Without it the text streams
	// word by word.
	Chunks []string
	// Thought is optional reasoning text, sent as a thought part first.
	Thought string
	// Calls are function calls the model makes, after the text.
	Calls []*genai.FunctionCall
	// ErrorCode and ErrorMessage make the response a model error response.
	ErrorCode    string
	ErrorMessage string
	// Err makes Generate fail with this error.
	Err error
	// Usage is reported as usage metadata when set.
	Usage *genai.GenerateContentResponseUsageMetadata
	// ModelVersion is reported as the response's model version when set,
	// as providers name the model that answered.
	ModelVersion string
}

// Responder decides the turn for a request.
type Responder func(ctx context.Context, req *model.Request) (Turn, error)

// Model is a scripted model.LLM. It is safe for concurrent use as long as
// its responder is.
type Model struct {
	name    string
	respond Responder

	mu       sync.Mutex
	requests []*model.Request
	record   bool
}

// New returns a model named name answering with respond.
func New(name string, respond Responder) *Model {
	return &Model{name: name, respond: respond}
}

// NewSequence returns a model that plays turns in order, one per call, and
// fails with ErrExhausted after the last. It records the requests it
// receives (see Requests).
func NewSequence(name string, turns ...Turn) *Model {
	var mu sync.Mutex
	next := 0
	m := New(name, func(context.Context, *model.Request) (Turn, error) {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(turns) {
			return Turn{}, ErrExhausted
		}
		next++
		return turns[next-1], nil
	})
	m.record = true
	return m
}

// Recording makes the model keep every request it receives.
func (m *Model) Recording() *Model {
	m.record = true
	return m
}

// Requests returns the requests received so far, if recording.
func (m *Model) Requests() []*model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*model.Request(nil), m.requests...)
}

// Name implements model.LLM.
func (m *Model) Name() string { return m.name }

// Generate implements model.LLM.
func (m *Model) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		if m.record {
			m.mu.Lock()
			m.requests = append(m.requests, req)
			m.mu.Unlock()
		}
		turn, err := m.respond(ctx, req)
		if err == nil {
			err = turn.Err
		}
		if err != nil {
			yield(nil, fmt.Errorf("scripted: %w", err))
			return
		}
		if turn.ErrorCode != "" || turn.ErrorMessage != "" {
			yield(&model.Response{ErrorCode: turn.ErrorCode, ErrorMessage: turn.ErrorMessage}, nil)
			return
		}
		if stream {
			for _, chunk := range turn.chunks() {
				r := &model.Response{Content: genai.NewContentFromText(chunk, genai.RoleModel), Partial: true}
				if !yield(r, nil) {
					return
				}
			}
		}
		yield(turn.response(), nil)
	}
}

func (t Turn) chunks() []string {
	if t.Chunks != nil {
		return t.Chunks
	}
	if t.Text == "" {
		return nil
	}
	words := strings.SplitAfter(t.Text, " ")
	return words
}

func (t Turn) response() *model.Response {
	if n := len(t.Calls); n+btoi(t.Text != "")+btoi(t.Thought != "") == 1 && (n == 0 || t.Calls[0] != nil) {
		return t.onePart()
	}
	c := &genai.Content{Role: genai.RoleModel}
	if t.Thought != "" {
		c.Parts = append(c.Parts, &genai.Part{Text: t.Thought, Thought: true})
	}
	if t.Text != "" {
		c.Parts = append(c.Parts, &genai.Part{Text: t.Text})
	}
	for _, fc := range t.Calls {
		cp := *fc
		c.Parts = append(c.Parts, &genai.Part{FunctionCall: &cp})
	}
	r := &model.Response{Content: c, UsageMetadata: t.Usage, ModelVersion: t.ModelVersion, FinishReason: genai.FinishReasonStop}
	if len(c.Parts) == 0 {
		r.Content = nil
	}
	return r
}

// onePart is response for a turn of exactly one text, thought or call: the
// response, its content and part take one allocation.
func (t Turn) onePart() *model.Response {
	b := &struct {
		resp  model.Response
		c     genai.Content
		parts [1]*genai.Part
		part  genai.Part
		call  genai.FunctionCall
	}{}
	switch {
	case len(t.Calls) == 1:
		b.call = *t.Calls[0]
		b.part.FunctionCall = &b.call
	case t.Thought != "":
		b.part = genai.Part{Text: t.Thought, Thought: true}
	default:
		b.part.Text = t.Text
	}
	b.parts[0] = &b.part
	b.c = genai.Content{Role: genai.RoleModel, Parts: b.parts[:]}
	b.resp = model.Response{Content: &b.c, UsageMetadata: t.Usage, ModelVersion: t.ModelVersion, FinishReason: genai.FinishReasonStop}
	return &b.resp
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Text returns a turn answering with text.
func Text(text string) Turn { return Turn{Text: text} }

// Call returns a turn calling one function.
func Call(name string, args map[string]any) Turn {
	return Turn{Calls: []*genai.FunctionCall{{Name: name, Args: args}}}
}

// LastUserText returns the text of the last user content of a request, a
// convenience for responders.
func LastUserText(req *model.Request) string {
	for i := len(req.Contents) - 1; i >= 0; i-- {
		c := req.Contents[i]
		if c == nil || c.Role != genai.RoleUser {
			continue
		}
		var b strings.Builder
		for _, p := range c.Parts {
			if p != nil && p.Text != "" {
				b.WriteString(p.Text)
			}
		}
		if b.Len() > 0 {
			return b.String()
		}
	}
	return ""
}

// LastFunctionResponse returns the function response parts of the last
// content of a request if it holds any (the model is being asked to use a
// tool result), else nil.
func LastFunctionResponse(req *model.Request) []*genai.FunctionResponse {
	if len(req.Contents) == 0 {
		return nil
	}
	var out []*genai.FunctionResponse
	for _, p := range req.Contents[len(req.Contents)-1].Parts {
		if p != nil && p.FunctionResponse != nil {
			out = append(out, p.FunctionResponse)
		}
	}
	return out
}
