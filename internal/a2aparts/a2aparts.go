// Package a2aparts converts message parts between genai, Loom's content
// type, and the Agent2Agent (A2A) protocol, for the A2A server
// (server/a2aserver) and the remote agent (agent/remoteagent).
//
// Text and files map one to one. A function call or response travels as an
// A2A data part whose metadata "adk_type" says which it is, as ADK's A2A
// integrations do, so that ADK peers in other languages read Loom's calls
// and Loom reads theirs. A call that pauses its invocation (a long-running
// tool, a confirmation or credential request) carries
// "adk_is_long_running": true. A data part without such metadata is plain
// structured data.
package a2aparts

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
	"google.golang.org/genai"
)

// Metadata keys and values shared with ADK's A2A integrations.
const (
	// MetaType names the kind of a data part (TypeFunctionCall or
	// TypeFunctionResponse).
	MetaType = "adk_type"
	// MetaLongRunning marks a function call that pauses its invocation.
	MetaLongRunning = "adk_is_long_running"
	// MetaThought marks a text part that is the model's thought.
	MetaThought = "adk_thought"

	TypeFunctionCall     = "function_call"
	TypeFunctionResponse = "function_response"
)

// FromGenai converts genai parts to A2A parts. longRunning lists the ids of
// the function calls that pause the invocation. Parts that carry nothing
// A2A can hold (empty parts, executable code) are left out.
func FromGenai(parts []*genai.Part, longRunning []string) []a2a.Part {
	var out []a2a.Part
	for _, p := range parts {
		if p == nil {
			continue
		}
		switch {
		case p.Text != "":
			tp := a2a.TextPart{Text: p.Text}
			if p.Thought {
				tp.Metadata = map[string]any{MetaThought: true}
			}
			out = append(out, tp)
		case p.FunctionCall != nil:
			fc := p.FunctionCall
			data := map[string]any{"name": fc.Name, "args": orEmpty(fc.Args)}
			if fc.ID != "" {
				data["id"] = fc.ID
			}
			out = append(out, a2a.DataPart{Data: data, Metadata: map[string]any{
				MetaType:        TypeFunctionCall,
				MetaLongRunning: fc.ID != "" && slices.Contains(longRunning, fc.ID),
			}})
		case p.FunctionResponse != nil:
			fr := p.FunctionResponse
			data := map[string]any{"name": fr.Name, "response": orEmpty(fr.Response)}
			if fr.ID != "" {
				data["id"] = fr.ID
			}
			out = append(out, a2a.DataPart{Data: data, Metadata: map[string]any{MetaType: TypeFunctionResponse}})
		case p.InlineData != nil:
			out = append(out, a2a.FilePart{File: a2a.FileBytes{
				FileMeta: a2a.FileMeta{MimeType: p.InlineData.MIMEType, Name: p.InlineData.DisplayName},
				Bytes:    base64.StdEncoding.EncodeToString(p.InlineData.Data),
			}})
		case p.FileData != nil:
			out = append(out, a2a.FilePart{File: a2a.FileURI{
				FileMeta: a2a.FileMeta{MimeType: p.FileData.MIMEType, Name: p.FileData.DisplayName},
				URI:      p.FileData.FileURI,
			}})
		}
	}
	return out
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// ToGenai converts A2A parts to genai parts. A data part that is not a
// function call or response becomes a text part holding its JSON. It fails
// on a malformed function call or response, or on file bytes that are not
// base64.
func ToGenai(parts []a2a.Part) ([]*genai.Part, error) {
	var out []*genai.Part
	for i, p := range parts {
		gp, err := toGenai(p)
		if err != nil {
			return nil, fmt.Errorf("a2a part %d: %w", i, err)
		}
		if gp != nil {
			out = append(out, gp)
		}
	}
	return out, nil
}

func toGenai(p a2a.Part) (*genai.Part, error) {
	switch p := p.(type) {
	case a2a.TextPart:
		if p.Text == "" {
			return nil, nil
		}
		thought, _ := p.Metadata[MetaThought].(bool)
		return &genai.Part{Text: p.Text, Thought: thought}, nil
	case *a2a.TextPart:
		return toGenai(*p)
	case a2a.DataPart:
		switch Kind(p) {
		case TypeFunctionCall:
			name, _ := p.Data["name"].(string)
			if name == "" {
				return nil, fmt.Errorf("function call without a name")
			}
			id, _ := p.Data["id"].(string)
			args, err := object(p.Data["args"], "function call args")
			if err != nil {
				return nil, err
			}
			return &genai.Part{FunctionCall: &genai.FunctionCall{ID: id, Name: name, Args: args}}, nil
		case TypeFunctionResponse:
			name, _ := p.Data["name"].(string)
			id, _ := p.Data["id"].(string)
			if id == "" && name == "" {
				return nil, fmt.Errorf("function response without an id or a name")
			}
			resp, err := object(p.Data["response"], "function response")
			if err != nil {
				return nil, err
			}
			return &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: id, Name: name, Response: resp}}, nil
		}
		b, err := json.Marshal(p.Data)
		if err != nil {
			return nil, fmt.Errorf("data part: %w", err)
		}
		return &genai.Part{Text: string(b)}, nil
	case *a2a.DataPart:
		return toGenai(*p)
	case a2a.FilePart:
		switch f := p.File.(type) {
		case a2a.FileBytes:
			data, err := base64.StdEncoding.DecodeString(f.Bytes)
			if err != nil {
				return nil, fmt.Errorf("file bytes: %w", err)
			}
			return &genai.Part{InlineData: &genai.Blob{MIMEType: f.MimeType, DisplayName: f.Name, Data: data}}, nil
		case a2a.FileURI:
			return &genai.Part{FileData: &genai.FileData{MIMEType: f.MimeType, DisplayName: f.Name, FileURI: f.URI}}, nil
		}
		return nil, fmt.Errorf("file part without bytes or uri")
	case *a2a.FilePart:
		return toGenai(*p)
	}
	return nil, fmt.Errorf("unknown part type %T", p)
}

// object returns v as a JSON object; nil is the empty object.
func object(v any, what string) (map[string]any, error) {
	switch v := v.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return v, nil
	}
	return nil, fmt.Errorf("%s is %T, not an object", what, v)
}

// Kind returns the ADK kind of a data part (TypeFunctionCall,
// TypeFunctionResponse) or "" for plain data. ADK peers spell the metadata
// key with or without its "adk_" prefix; both are read.
func Kind(p a2a.DataPart) string {
	for _, k := range []string{MetaType, strings.TrimPrefix(MetaType, "adk_")} {
		if s, ok := p.Metadata[k].(string); ok && (s == TypeFunctionCall || s == TypeFunctionResponse) {
			return s
		}
	}
	return ""
}

// Text joins the text of the parts (thoughts left out) with newlines.
func Text(parts []a2a.Part) string {
	var b strings.Builder
	for _, p := range parts {
		var tp a2a.TextPart
		switch p := p.(type) {
		case a2a.TextPart:
			tp = p
		case *a2a.TextPart:
			tp = *p
		default:
			continue
		}
		if t, _ := tp.Metadata[MetaThought].(bool); t || tp.Text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(tp.Text)
	}
	return b.String()
}
