package event

import (
	"encoding/json"
	"maps"
	"slices"

	"google.golang.org/genai"
)

// Clone returns a deep copy of the event that shares no mutable memory with
// e. Session storage uses it so that callers can never alter stored events.
func (e *Event) Clone() *Event {
	if e == nil {
		return nil
	}
	var c *Event
	if e.Content != nil && len(e.Content.Parts) == 1 {
		// The usual event: one allocation for it and its content, with its
		// function call or response.
		switch p := e.Content.Parts[0]; {
		case p != nil && p.FunctionCall != nil:
			b := &struct {
				ev Event
				cb contentBlock
				fc genai.FunctionCall
			}{ev: *e}
			c = &b.ev
			c.Content = b.cb.fill(e.Content, &b.fc, nil)
		case p != nil && p.FunctionResponse != nil:
			b := &struct {
				ev Event
				cb contentBlock
				fr genai.FunctionResponse
			}{ev: *e}
			c = &b.ev
			c.Content = b.cb.fill(e.Content, nil, &b.fr)
		default:
			b := &struct {
				ev Event
				cb contentBlock
			}{ev: *e}
			c = &b.ev
			c.Content = b.cb.fill(e.Content, nil, nil)
		}
	} else {
		cp := *e
		c = &cp
		c.Content = CloneContent(e.Content)
	}
	c.CustomMetadata = CloneMap(e.CustomMetadata)
	c.LongRunningToolIDs = slices.Clone(e.LongRunningToolIDs)
	if e.GroundingMetadata != nil || e.CitationMetadata != nil || e.UsageMetadata != nil ||
		e.LogprobsResult != nil || e.InputTranscription != nil || e.OutputTranscription != nil {
		cloneViaJSON(&c.GroundingMetadata)
		cloneViaJSON(&c.CitationMetadata)
		cloneViaJSON(&c.UsageMetadata)
		cloneViaJSON(&c.LogprobsResult)
		cloneViaJSON(&c.InputTranscription)
		cloneViaJSON(&c.OutputTranscription)
	}
	c.Actions = e.Actions.Clone()
	if e.Output != nil {
		c.Output = CloneValue(e.Output)
	}
	if e.NodeInfo != nil {
		ni := *e.NodeInfo
		ni.OutputFor = slices.Clone(ni.OutputFor)
		c.NodeInfo = &ni
	}
	c.Unknown = cloneRaw(e.Unknown)
	return c
}

// cloneRaw deep-copies a map of unknown fields.
func cloneRaw(m map[string]json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		return nil
	}
	c := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		c[k] = slices.Clone(v)
	}
	return c
}

// Clone returns a deep copy of the actions.
func (a Actions) Clone() Actions {
	c := a
	c.StateDelta = CloneMap(a.StateDelta)
	c.ArtifactDelta = maps.Clone(a.ArtifactDelta)
	c.RequestedAuthConfigs = CloneMap(a.RequestedAuthConfigs)
	c.AgentState = CloneMap(a.AgentState)
	if a.RequestedToolConfirmations != nil {
		c.RequestedToolConfirmations = make(map[string]ToolConfirmation, len(a.RequestedToolConfirmations))
		for k, v := range a.RequestedToolConfirmations {
			v.Payload = CloneValue(v.Payload)
			c.RequestedToolConfirmations[k] = v
		}
	}
	c.Route = CloneValue(a.Route)
	c.SetModelResponse = CloneValue(a.SetModelResponse)
	if a.RenderUIWidgets != nil {
		c.RenderUIWidgets = make([]any, len(a.RenderUIWidgets))
		for i, w := range a.RenderUIWidgets {
			c.RenderUIWidgets[i] = CloneValue(w)
		}
	}
	c.Unknown = cloneRaw(a.Unknown)
	if a.Compaction != nil {
		cc := *a.Compaction
		cc.Content = CloneContent(cc.Content)
		c.Compaction = &cc
	}
	return c
}

// CloneContent returns a deep copy of a genai content.
func CloneContent(c *genai.Content) *genai.Content {
	if c == nil {
		return nil
	}
	if len(c.Parts) == 1 {
		return new(contentBlock).fill(c, nil, nil)
	}
	out := &genai.Content{Role: c.Role, Parts: make([]*genai.Part, len(c.Parts))}
	for i, p := range c.Parts {
		out.Parts[i] = clonePart(p)
	}
	return out
}

// contentBlock holds a content of one part and its part, so that their copy
// takes one allocation.
type contentBlock struct {
	content genai.Content
	parts   [1]*genai.Part
	part    genai.Part
}

// fill makes the block a deep copy of c, which has exactly one part, and
// returns the block's content. fc and fr, if not nil, hold the copy of the
// part's function call and response.
func (b *contentBlock) fill(c *genai.Content, fc *genai.FunctionCall, fr *genai.FunctionResponse) *genai.Content {
	b.content.Role = c.Role
	if p := c.Parts[0]; p != nil {
		clonePartInto(&b.part, p, fc, fr)
		b.parts[0] = &b.part
	}
	b.content.Parts = b.parts[:]
	return &b.content
}

func clonePart(p *genai.Part) *genai.Part {
	if p == nil {
		return nil
	}
	c := new(genai.Part)
	clonePartInto(c, p, nil, nil)
	return c
}

// clonePartInto makes *dst a deep copy of *p. The copy of its function
// call and response go to fc and fr, or to new memory where they are nil.
func clonePartInto(dst, p *genai.Part, fc *genai.FunctionCall, fr *genai.FunctionResponse) {
	*dst = *p
	c := dst
	if p.FunctionCall != nil {
		if fc == nil {
			fc = new(genai.FunctionCall)
		}
		*fc = *p.FunctionCall
		fc.Args = CloneMap(fc.Args)
		c.FunctionCall = fc
	}
	if p.FunctionResponse != nil {
		if fr == nil {
			fr = new(genai.FunctionResponse)
		}
		*fr = *p.FunctionResponse
		fr.Response = CloneMap(fr.Response)
		if fr.Parts != nil {
			cloneViaJSON(&fr.Parts)
		}
		c.FunctionResponse = fr
	}
	if p.InlineData != nil {
		b := *p.InlineData
		b.Data = slices.Clone(b.Data)
		c.InlineData = &b
	}
	c.ThoughtSignature = slices.Clone(p.ThoughtSignature)
	c.PartMetadata = CloneMap(p.PartMetadata)
	if p.FileData != nil || p.ExecutableCode != nil || p.CodeExecutionResult != nil || p.VideoMetadata != nil ||
		p.ToolCall != nil || p.ToolResponse != nil || p.AudioTranscription != nil || p.SpeechMetadata != nil || p.MediaResolution != nil {
		cloneViaJSON(&c.FileData)
		cloneViaJSON(&c.ExecutableCode)
		cloneViaJSON(&c.CodeExecutionResult)
		cloneViaJSON(&c.VideoMetadata)
		cloneViaJSON(&c.ToolCall)
		cloneViaJSON(&c.ToolResponse)
		cloneViaJSON(&c.AudioTranscription)
		cloneViaJSON(&c.SpeechMetadata)
		cloneViaJSON(&c.MediaResolution)
	}
}

// cloneViaJSON replaces *p with a deep copy made by a JSON round trip. It is
// used only for rarely set metadata whose types are deep and change with the
// genai module.
func cloneViaJSON[T any](p *T) {
	b, err := json.Marshal(*p)
	if err != nil {
		return
	}
	var v T
	if json.Unmarshal(b, &v) == nil {
		*p = v
	}
}

// maxCloneDepth bounds the recursion of CloneMap and CloneValue: deeper
// values (which no session stores; see session.MaxValueDepth) are shared, not
// copied, so that a cyclic value cannot exhaust the stack.
const maxCloneDepth = 1000

// CloneMap returns a deep copy of a JSON-like map (nested maps and slices are
// copied; other values are kept). It returns nil for nil. Maps and slices
// nested more than a thousand levels deep, or in a cycle, are copied down to
// that depth and shared below it.
func CloneMap(m map[string]any) map[string]any { return cloneMap(m, 0) }

func cloneMap(m map[string]any, depth int) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v, depth+1)
	}
	return out
}

// CloneValue returns a deep copy of a JSON-like value, as CloneMap does.
func CloneValue(v any) any { return cloneValue(v, 0) }

func cloneValue(v any, depth int) any {
	if depth >= maxCloneDepth {
		return v
	}
	switch x := v.(type) {
	case map[string]any:
		return cloneMap(x, depth)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e, depth+1)
		}
		return out
	case []byte:
		return slices.Clone(x)
	case []string:
		return slices.Clone(x)
	}
	return v
}
