package reflectretry

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
)

// KeyModelRetries is the CustomMetadata key of a response that a model
// wrapped by WrapModel gave after malformed answers: the number of answers
// it was asked to correct.
const KeyModelRetries = "reflect_retries"

// ModelConfig configures WrapModel.
type ModelConfig struct {
	// MaxRetries is the number of malformed answers the model is asked to
	// correct in one call: zero means DefaultMaxRetries, negative none.
	MaxRetries int
}

// WrapModel returns llm asking it again, up to a bound, when it answers
// malformed: a function call the provider reports as malformed (finish
// reason or error code MALFORMED_FUNCTION_CALL), or, when the request asks
// for JSON under a response schema, an answer that is not JSON or does not
// match the schema. The new request is the old one followed by the
// malformed answer and a user turn with the problem and the instruction to
// answer again; the malformed answer is not passed on (streamed chunks of
// it may have been). When the retries run out, the last answer is passed
// on as it is, and the agent handles it as it would without the wrapper.
func WrapModel(llm model.LLM, cfg ModelConfig) model.LLM {
	if cfg.MaxRetries == 0 {
		cfg.MaxRetries = DefaultMaxRetries
	}
	return &reflectModel{LLM: llm, max: max(cfg.MaxRetries, 0)}
}

type reflectModel struct {
	model.LLM
	max     int
	mu      sync.Mutex
	schemas map[*jsonschema.Schema]resolved // at most maxSchemas
}

// maxSchemas bounds the resolved schemas kept: agents have few, and a
// program that builds a new one per request resolves it each time.
const maxSchemas = 256

type resolved struct {
	rs  *jsonschema.Resolved
	err error
}

// ToolsWithSchema reports what the wrapped model reports.
func (m *reflectModel) ToolsWithSchema() bool {
	ts, ok := m.LLM.(model.ToolsWithSchema)
	return ok && ts.ToolsWithSchema()
}

func (m *reflectModel) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		for n := 0; ; n++ {
			var retry *model.Request
			for resp, err := range m.LLM.Generate(ctx, req, stream) {
				if err != nil {
					yield(nil, err)
					return
				}
				if resp.Partial {
					if !yield(resp, nil) {
						return
					}
					continue
				}
				if n < m.max {
					if problem := m.malformed(req, resp); problem != "" {
						retry = reask(req, resp, problem)
						break
					}
				}
				if n > 0 {
					c := *resp
					c.CustomMetadata = maps.Clone(resp.CustomMetadata)
					if c.CustomMetadata == nil {
						c.CustomMetadata = map[string]any{}
					}
					c.CustomMetadata[KeyModelRetries] = n
					resp = &c
				}
				if !yield(resp, nil) {
					return
				}
			}
			if retry == nil {
				return
			}
			req = retry
		}
	}
}

// malformed returns what is wrong with a complete answer, or "".
func (m *reflectModel) malformed(req *model.Request, resp *model.Response) string {
	if resp.FinishReason == genai.FinishReasonMalformedFunctionCall || resp.ErrorCode == string(genai.FinishReasonMalformedFunctionCall) {
		msg := resp.ErrorMessage
		if msg == "" {
			msg = "the function call could not be parsed"
		}
		return "Your last answer held a malformed function call: " + msg + ". Call the function again with arguments that are valid JSON and match its declaration."
	}
	if req.Config == nil || req.Config.ResponseMIMEType != "application/json" || resp.Content == nil {
		return ""
	}
	for _, p := range resp.Content.Parts {
		if p != nil && p.FunctionCall != nil {
			return ""
		}
	}
	text := resp.Text()
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return fmt.Sprintf("Your last answer is not valid JSON (%v). Answer again with JSON only, matching the response schema.", err)
	}
	s, ok := req.Config.ResponseJsonSchema.(*jsonschema.Schema)
	if !ok || s == nil {
		return ""
	}
	rs, err := m.resolve(s)
	if err != nil {
		return ""
	}
	if err := rs.Validate(v); err != nil {
		return fmt.Sprintf("Your last answer does not match the response schema (%v). Answer again with JSON that matches it.", err)
	}
	return ""
}

func (m *reflectModel) resolve(s *jsonschema.Schema) (*jsonschema.Resolved, error) {
	m.mu.Lock()
	r, ok := m.schemas[s]
	m.mu.Unlock()
	if ok {
		return r.rs, r.err
	}
	r.rs, r.err = s.Resolve(nil)
	m.mu.Lock()
	if m.schemas == nil {
		m.schemas = map[*jsonschema.Schema]resolved{}
	}
	if len(m.schemas) < maxSchemas {
		m.schemas[s] = r
	}
	m.mu.Unlock()
	return r.rs, r.err
}

// reask is req followed by the malformed answer and the problem.
func reask(req *model.Request, resp *model.Response, problem string) *model.Request {
	c := *req
	c.Contents = make([]*genai.Content, 0, len(req.Contents)+2)
	c.Contents = append(c.Contents, req.Contents...)
	if resp.Content != nil && len(resp.Content.Parts) > 0 {
		// Only the answer's text: a malformed call cannot be sent back.
		var parts []*genai.Part
		for _, p := range resp.Content.Parts {
			if p != nil && p.Text != "" && !p.Thought {
				parts = append(parts, &genai.Part{Text: p.Text})
			}
		}
		if len(parts) > 0 {
			c.Contents = append(c.Contents, &genai.Content{Role: genai.RoleModel, Parts: parts})
		}
	}
	c.Contents = append(c.Contents, genai.NewContentFromText(problem, genai.RoleUser))
	return &c
}
