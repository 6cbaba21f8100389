// Package adapter holds the conversions shared by the model adapters: genai
// schemas to JSON Schema, a streaming text aggregator, and small helpers for
// function-call arguments and responses.
package adapter

import (
	"encoding/json"
	"strings"

	"google.golang.org/genai"
)

// Parameters returns the JSON Schema of a function declaration's
// parameters: ParametersJsonSchema when set, else Parameters converted from
// the genai (OpenAPI subset) schema, else an empty object schema.
func Parameters(d *genai.FunctionDeclaration) map[string]any {
	if d == nil {
		return emptyObject()
	}
	if d.ParametersJsonSchema != nil {
		if m, ok := toMap(d.ParametersJsonSchema); ok {
			return m
		}
	}
	if d.Parameters != nil {
		return JSONSchema(d.Parameters)
	}
	return emptyObject()
}

// Schema returns a genai schema as JSON Schema, or nil.
func Schema(s *genai.Schema, raw any) map[string]any {
	if raw != nil {
		if m, ok := toMap(raw); ok {
			return m
		}
	}
	if s == nil {
		return nil
	}
	return JSONSchema(s)
}

func emptyObject() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{}}
}

// toMap turns any JSON-marshalable value into a generic JSON object.
func toMap(v any) (map[string]any, bool) {
	if m, ok := v.(map[string]any); ok {
		return m, true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

// JSONSchema converts a genai schema (upper-case OpenAPI types) to a JSON
// Schema object with lower-case types.
func JSONSchema(s *genai.Schema) map[string]any {
	out := map[string]any{}
	if s == nil {
		return out
	}
	if s.Type != "" && s.Type != genai.TypeUnspecified {
		t := strings.ToLower(string(s.Type))
		if s.Nullable != nil && *s.Nullable {
			out["type"] = []any{t, "null"}
		} else {
			out["type"] = t
		}
	}
	if s.Title != "" {
		out["title"] = s.Title
	}
	if s.Description != "" {
		out["description"] = s.Description
	}
	if s.Format != "" {
		out["format"] = s.Format
	}
	if s.Pattern != "" {
		out["pattern"] = s.Pattern
	}
	if len(s.Enum) > 0 {
		e := make([]any, len(s.Enum))
		for i, v := range s.Enum {
			e[i] = v
		}
		out["enum"] = e
	}
	if s.Default != nil {
		out["default"] = s.Default
	}
	if s.Example != nil {
		out["examples"] = []any{s.Example}
	}
	if s.Items != nil {
		out["items"] = JSONSchema(s.Items)
	}
	if len(s.Properties) > 0 || s.Type == genai.TypeObject {
		props := make(map[string]any, len(s.Properties))
		for k, v := range s.Properties {
			props[k] = JSONSchema(v)
		}
		out["properties"] = props
	}
	if len(s.Required) > 0 {
		r := make([]any, len(s.Required))
		for i, v := range s.Required {
			r[i] = v
		}
		out["required"] = r
	}
	if len(s.AnyOf) > 0 {
		a := make([]any, len(s.AnyOf))
		for i, v := range s.AnyOf {
			a[i] = JSONSchema(v)
		}
		out["anyOf"] = a
	}
	setInt := func(key string, p *int64) {
		if p != nil {
			out[key] = *p
		}
	}
	setFloat := func(key string, p *float64) {
		if p != nil {
			out[key] = *p
		}
	}
	setInt("minItems", s.MinItems)
	setInt("maxItems", s.MaxItems)
	setInt("minLength", s.MinLength)
	setInt("maxLength", s.MaxLength)
	setInt("minProperties", s.MinProperties)
	setInt("maxProperties", s.MaxProperties)
	setFloat("minimum", s.Minimum)
	setFloat("maximum", s.Maximum)
	return out
}

// Arguments decodes a model's JSON function arguments. Empty input is an
// empty object.
func Arguments(raw string) (map[string]any, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return map[string]any{}, nil
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		return nil, err
	}
	if args == nil {
		args = map[string]any{}
	}
	return args, nil
}

// ResponseJSON renders a function response as the JSON text a tool result
// message carries.
func ResponseJSON(r *genai.FunctionResponse) string {
	if r == nil || r.Response == nil {
		return "{}"
	}
	b, err := json.Marshal(r.Response)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// Aggregator builds the final content of a streamed turn. Consecutive text
// chunks (and consecutive thought chunks) merge into one part; other parts
// keep their order. Appends are amortised O(1): text goes into a
// strings.Builder and is materialised once per run.
type Aggregator struct {
	parts   []*genai.Part
	buf     strings.Builder
	thought bool
	sig     []byte
	open    bool
}

// Text appends streamed text; thought marks model reasoning. sig, when
// non-nil, becomes the thought signature of the merged part.
func (a *Aggregator) Text(s string, thought bool, sig []byte) {
	if a.open && a.thought != thought {
		a.flush()
	}
	a.open = true
	a.thought = thought
	a.buf.WriteString(s)
	if sig != nil {
		a.sig = sig
	}
}

// Part appends a non-text part (function call, inline data, ...).
func (a *Aggregator) Part(p *genai.Part) {
	a.flush()
	if p != nil {
		a.parts = append(a.parts, p)
	}
}

func (a *Aggregator) flush() {
	if !a.open {
		return
	}
	a.parts = append(a.parts, &genai.Part{Text: a.buf.String(), Thought: a.thought, ThoughtSignature: a.sig})
	a.buf.Reset()
	a.open, a.thought, a.sig = false, false, nil
}

// Parts returns the aggregated parts. The Aggregator may keep receiving
// input afterwards.
func (a *Aggregator) Parts() []*genai.Part {
	a.flush()
	return a.parts
}

// Empty reports whether nothing was aggregated.
func (a *Aggregator) Empty() bool {
	return !a.open && len(a.parts) == 0
}

// ThinkingBudget returns the number of thinking tokens a thinking config
// asks for, for providers that take a budget: the budget when it is
// positive, else a budget for the thinking level (or for dynamic thinking,
// budget -1). Zero means thinking stays off.
func ThinkingBudget(tc *genai.ThinkingConfig) int64 {
	if tc == nil {
		return 0
	}
	if b := tc.ThinkingBudget; b != nil {
		switch {
		case *b > 0:
			return int64(*b)
		case *b == 0:
			return 0
		}
		return 4096 // dynamic
	}
	switch tc.ThinkingLevel {
	case genai.ThinkingLevelMinimal, genai.ThinkingLevelLow:
		return 1024
	case genai.ThinkingLevelMedium:
		return 4096
	case genai.ThinkingLevelHigh:
		return 16384
	}
	return 0
}

// ReasoningEffort returns the reasoning effort ("minimal", "low", "medium"
// or "high") a thinking config asks for, for providers that take an
// effort, or "" to leave the provider's default: the thinking level when
// set, else the budget's size class.
func ReasoningEffort(tc *genai.ThinkingConfig) string {
	if tc == nil {
		return ""
	}
	switch tc.ThinkingLevel {
	case genai.ThinkingLevelMinimal:
		return "minimal"
	case genai.ThinkingLevelLow:
		return "low"
	case genai.ThinkingLevelMedium:
		return "medium"
	case genai.ThinkingLevelHigh:
		return "high"
	}
	b := tc.ThinkingBudget
	switch {
	case b == nil:
		return ""
	case *b == 0:
		return "minimal"
	case *b < 0:
		return "medium"
	case *b <= 2048:
		return "low"
	case *b <= 8192:
		return "medium"
	}
	return "high"
}

// BuiltInToolName names the provider-side tool a genai tool asks for
// ("google_search", "url_context", "code_execution", ...), or "" for a tool
// that only declares functions.
func BuiltInToolName(t *genai.Tool) string {
	switch {
	case t == nil:
		return ""
	case t.GoogleSearch != nil:
		return "google_search"
	case t.GoogleSearchRetrieval != nil:
		return "google_search_retrieval"
	case t.URLContext != nil:
		return "url_context"
	case t.CodeExecution != nil:
		return "code_execution"
	case t.Retrieval != nil:
		return "retrieval"
	case t.GoogleMaps != nil:
		return "google_maps"
	case t.EnterpriseWebSearch != nil:
		return "enterprise_web_search"
	case t.ComputerUse != nil:
		return "computer_use"
	case t.FileSearch != nil:
		return "file_search"
	case len(t.FunctionDeclarations) == 0:
		return "unknown"
	}
	return ""
}
