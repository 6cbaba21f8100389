// Package model defines the interface between agents and large language models.
//
// An [LLM] turns a [Request] (conversation contents, system instruction, tool
// declarations and generation settings, all in the google.golang.org/genai
// vocabulary) into a stream of [Response] values. Adapters for real model APIs
// live in sub-packages; this package contains no network code.
//
// # Streaming
//
// [LLM.Generate] returns an iter.Seq2. Without streaming it yields one complete
// response per model turn. With streaming it yields partial responses
// (Partial set) as chunks arrive and then one aggregated, non-partial response
// holding the complete turn. The iterator is single-use; it stops when the
// caller breaks out of the loop or the context is done.
package model

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"reflect"

	"google.golang.org/genai"
)

// LLM is a large language model. Implementations must be safe for concurrent
// use by many invocations.
type LLM interface {
	// Name returns the model name, for example "gemini-2.5-flash".
	Name() string
	// Generate sends req to the model. When stream is true the model yields
	// partial responses followed by one aggregated final response; otherwise
	// it yields complete responses only. An error ends the stream.
	Generate(ctx context.Context, req *Request, stream bool) iter.Seq2[*Response, error]
}

// Request is one call to a model.
type Request struct {
	// Model optionally overrides the model name the LLM was configured with.
	Model string
	// Contents is the conversation history, oldest first.
	Contents []*genai.Content
	// Config carries the system instruction, tool declarations, response
	// schema and sampling settings. It may be nil.
	Config *genai.GenerateContentConfig
}

// AppendInstructions adds texts to the end of the request's system
// instruction, as ADK does: each after a blank line ("\n\n"), into the
// instruction's last part when that is plain text, so that the
// instruction stays one text. Empty texts are skipped. It replaces the
// parts it changes rather than modifying them, so parts the request shares
// with others stay as they were.
func (r *Request) AppendInstructions(texts ...string) {
	var add string
	for _, t := range texts {
		if t == "" {
			continue
		}
		if add != "" {
			add += "\n\n"
		}
		add += t
	}
	if add == "" {
		return
	}
	if r.Config == nil {
		r.Config = &genai.GenerateContentConfig{}
	}
	si := r.Config.SystemInstruction
	if si == nil || len(si.Parts) == 0 {
		role := genai.RoleUser
		if si != nil && si.Role != "" {
			role = si.Role
		}
		r.Config.SystemInstruction = &genai.Content{Role: role, Parts: []*genai.Part{{Text: add}}}
		return
	}
	parts := append([]*genai.Part(nil), si.Parts...)
	if last := parts[len(parts)-1]; last != nil && isPlainText(last) {
		parts[len(parts)-1] = &genai.Part{Text: last.Text + "\n\n" + add}
	} else {
		parts = append(parts, &genai.Part{Text: add})
	}
	r.Config.SystemInstruction = &genai.Content{Role: si.Role, Parts: parts}
}

// isPlainText reports whether p holds text and nothing else.
func isPlainText(p *genai.Part) bool {
	if p.Text == "" {
		return false
	}
	q := *p
	q.Text = ""
	return reflect.ValueOf(q).IsZero()
}

// Response is one response, or one streamed chunk of a response, from a model.
// Its fields are the LLM-response fields that an event carries; event.Event
// embeds it, so the JSON keys are ADK's wire keys.
type Response struct {
	Content             *genai.Content                              `json:"content,omitempty"`
	GroundingMetadata   *genai.GroundingMetadata                    `json:"groundingMetadata,omitempty"`
	CitationMetadata    *genai.CitationMetadata                     `json:"citationMetadata,omitempty"`
	UsageMetadata       *genai.GenerateContentResponseUsageMetadata `json:"usageMetadata,omitempty"`
	LogprobsResult      *genai.LogprobsResult                       `json:"logprobsResult,omitempty"`
	InputTranscription  *genai.Transcription                        `json:"inputTranscription,omitempty"`
	OutputTranscription *genai.Transcription                        `json:"outputTranscription,omitempty"`
	CustomMetadata      map[string]any                              `json:"customMetadata,omitempty"`
	ModelVersion        string                                      `json:"modelVersion,omitempty"`
	FinishReason        genai.FinishReason                          `json:"finishReason,omitempty"`
	ErrorCode           string                                      `json:"errorCode,omitempty"`
	ErrorMessage        string                                      `json:"errorMessage,omitempty"`
	AvgLogprobs         float64                                     `json:"avgLogprobs,omitempty"`
	// Partial marks a streamed chunk: forwarded to the caller, never persisted.
	Partial bool `json:"partial,omitempty"`
	// TurnComplete marks the response that ends a streaming turn.
	TurnComplete bool `json:"turnComplete,omitempty"`
	// Interrupted reports that the user interrupted generation (live mode).
	Interrupted bool `json:"interrupted,omitempty"`
}

// Text returns the concatenated text of the response's non-thought parts.
func (r *Response) Text() string {
	if r == nil {
		return ""
	}
	return Text(r.Content, "")
}

// Text returns the text of c: its text parts, thoughts left out, joined by
// sep ("" to concatenate them as a reply reads, "\n" as ADK's metrics read
// a response). A nil content has no text. It allocates the result only.
func Text(c *genai.Content, sep string) string {
	if c == nil {
		return ""
	}
	n, parts := 0, 0
	for _, p := range c.Parts {
		if p != nil && p.Text != "" && !p.Thought {
			n += len(p.Text)
			parts++
		}
	}
	if parts == 0 {
		return ""
	}
	b := make([]byte, 0, n+(parts-1)*len(sep))
	for _, p := range c.Parts {
		if p != nil && p.Text != "" && !p.Thought {
			if len(b) > 0 {
				b = append(b, sep...)
			}
			b = append(b, p.Text...)
		}
	}
	return string(b)
}

// ErrNoResponse is returned when a model stream ends without any response.
var ErrNoResponse = errors.New("model: no response")

// ErrUnsupportedContent is wrapped by the adapters' errors for request
// content their provider's API cannot carry (a kind of inline data, a
// built-in tool), before anything is sent.
var ErrUnsupportedContent = errors.New("model: unsupported content")

// Error is an error reported by a model provider. Adapters return it for API
// failures so that callers can inspect the status and decide whether to retry.
type Error struct {
	// Provider names the API family, for example "gemini" or "openai".
	Provider string
	// StatusCode is the HTTP status of the failed call, or 0.
	StatusCode int
	// Code is the provider's error code, for example "RESOURCE_EXHAUSTED".
	Code string
	// Message is the provider's error message.
	Message string
	// Retryable reports whether the call may succeed if repeated.
	Retryable bool
}

// Error implements the error interface.
func (e *Error) Error() string {
	switch {
	case e.StatusCode != 0 && e.Code != "":
		return fmt.Sprintf("model: %s: %d %s: %s", e.Provider, e.StatusCode, e.Code, e.Message)
	case e.StatusCode != 0:
		return fmt.Sprintf("model: %s: %d: %s", e.Provider, e.StatusCode, e.Message)
	case e.Code != "":
		return fmt.Sprintf("model: %s: %s: %s", e.Provider, e.Code, e.Message)
	}
	return fmt.Sprintf("model: %s: %s", e.Provider, e.Message)
}

// ToolsWithSchema is implemented by models that can say whether they take
// function tools and a response schema in the same request. An LLM agent
// with both tools and an output schema gives any other model a final-answer
// tool instead of the schema.
type ToolsWithSchema interface {
	// ToolsWithSchema reports whether tools and a response schema can be
	// combined in one request.
	ToolsWithSchema() bool
}
