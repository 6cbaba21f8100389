package event

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"google.golang.org/genai"
)

// Decoder decodes many events in a row, as a store reading back a session
// does. Decode gives the same result as [Event.UnmarshalJSON] for any input,
// but it parses the canonical JSON that [Event.MarshalJSON] writes, in the
// shapes most events take (text, thoughts, function calls and responses,
// usage counts, state deltas and control actions), directly into the event
// instead of through reflection. Anything else, such as snake_case keys, a
// field the fast path does not know or a string with escapes in a key, goes
// through UnmarshalJSON.
//
// To save allocations, a Decoder allocates the contents and parts of the
// events it decodes in blocks, so one block stays in memory while any event
// decoded from it does, and it shares one copy of the short strings that
// repeat from event to event (authors, invocation ids, roles, map keys).
//
// The zero value is ready to use. A Decoder is not safe for concurrent use.
type Decoder struct {
	contents []genai.Content
	parts    []genai.Part
	ptrs     []*genai.Part
	scratch  []*genai.Part
	strs     map[string]string
	block    int // the size of the next block of contents or parts
}

// decodeBlock is the largest number of contents or parts a Decoder
// allocates at once: its blocks double up to it, so that a Decoder used
// for one event allocates little, and one used for many few times.
const decodeBlock = 64

// nextBlock returns the size of the next block to allocate.
func (d *Decoder) nextBlock() int {
	d.block = min(max(2*d.block, 2), decodeBlock)
	return d.block
}

// maxInterned bounds the strings a Decoder shares, and internLen their length.
const (
	maxInterned = 1024
	internLen   = 32
)

// llmCallOnly is the encoded custom metadata of an event whose only entry
// is its LLMCall mark, as the encoder writes it and the parser reads it.
var llmCallOnly = []byte(`{"` + MetadataLLMCall + `":true}`)

// Decode decodes one event from data into e, replacing its contents.
func (d *Decoder) Decode(data []byte, e *Event) error {
	if d.fast(data, e) {
		return nil
	}
	return e.UnmarshalJSON(data)
}

// fast decodes data into e if the fast path handles it, and reports
// whether it did; it leaves e untouched otherwise.
func (d *Decoder) fast(data []byte, e *Event) bool {
	p := parser{d: d, data: data}
	var ev Event
	if !p.event(&ev) {
		return false
	}
	if p.ws(); p.i != len(data) {
		return false
	}
	ev.liftLLMCall()
	*e = ev
	return true
}

func (d *Decoder) content() *genai.Content {
	if len(d.contents) == 0 {
		d.contents = make([]genai.Content, d.nextBlock())
	}
	c := &d.contents[0]
	d.contents = d.contents[1:]
	return c
}

func (d *Decoder) part() *genai.Part {
	if len(d.parts) == 0 {
		d.parts = make([]genai.Part, d.nextBlock())
	}
	p := &d.parts[0]
	d.parts = d.parts[1:]
	return p
}

// partSlice returns a slice of n part pointers with no room to grow, so
// that appending to it never writes over another event's parts.
func (d *Decoder) partSlice(n int) []*genai.Part {
	if n == 0 || n > decodeBlock/4 {
		return make([]*genai.Part, n)
	}
	if len(d.ptrs) < n {
		d.ptrs = make([]*genai.Part, max(n, d.nextBlock()))
	}
	s := d.ptrs[:n:n]
	d.ptrs = d.ptrs[n:]
	return s
}

// intern returns b as a string, shared with earlier equal strings if short.
func (d *Decoder) intern(b []byte) string {
	if len(b) > internLen {
		return string(b)
	}
	if s, ok := d.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if d.strs == nil {
		d.strs = make(map[string]string)
	}
	if len(d.strs) < maxInterned {
		d.strs[s] = s
	}
	return s
}

// parser is the fast path of a Decoder. Its methods report false for any
// input they do not handle exactly as encoding/json would, and the caller
// then falls back to the general decoder.
type parser struct {
	d    *Decoder
	data []byte
	i    int
}

func (p *parser) ws() {
	for p.i < len(p.data) {
		switch c := p.data[p.i]; {
		case c > ' ':
			return
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.i++
		default:
			return
		}
	}
}

// peek skips white space and returns the next byte (0 at the end).
func (p *parser) peek() byte {
	p.ws()
	if p.i < len(p.data) {
		return p.data[p.i]
	}
	return 0
}

// next consumes c, after white space.
func (p *parser) next(c byte) bool {
	if p.peek() != c {
		return false
	}
	p.i++
	return true
}

// object parses an object, calling field for each key; field must parse
// the value.
func (p *parser) object(field func(key []byte) bool) bool {
	if !p.next('{') {
		return false
	}
	if p.next('}') {
		return true
	}
	for {
		key, ok := p.rawString()
		if !ok || !p.next(':') || !field(key) {
			return false
		}
		switch p.peek() {
		case ',':
			p.i++
		case '}':
			p.i++
			return true
		default:
			return false
		}
	}
}

// array parses an array, calling elem for each element.
func (p *parser) array(elem func() bool) bool {
	if !p.next('[') {
		return false
	}
	if p.next(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch p.peek() {
		case ',':
			p.i++
		case ']':
			p.i++
			return true
		default:
			return false
		}
	}
}

// rawString parses a string with no escapes, made of printable ASCII or
// valid UTF-8, and returns its bytes.
func (p *parser) rawString() ([]byte, bool) {
	if p.peek() != '"' {
		return nil, false
	}
	start := p.i + 1
	ascii := true
	for j := start; j < len(p.data); j++ {
		c := p.data[j]
		if plain[c] {
			continue
		}
		switch {
		case c == '"':
			b := p.data[start:j]
			if !ascii && !utf8.Valid(b) {
				return nil, false
			}
			p.i = j + 1
			return b, true
		case c >= utf8.RuneSelf:
			ascii = false
		default: // an escape or a control character
			return nil, false
		}
	}
	return nil, false
}

// plain marks the bytes that stand for themselves in a JSON string: ASCII
// other than control characters, quote and backslash.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str parses a string value. Strings with escapes or invalid UTF-8 are
// decoded by encoding/json, for identical results.
func (p *parser) str(intern bool) (string, bool) {
	start := p.i
	if b, ok := p.rawString(); ok {
		if intern {
			return p.d.intern(b), true
		}
		return string(b), true
	}
	p.i = start
	if p.peek() != '"' {
		return "", false
	}
	start = p.i
	for j := start + 1; j < len(p.data); j++ {
		switch c := p.data[j]; {
		case c == '\\':
			j++
		case c == '"':
			var s string
			if err := json.Unmarshal(p.data[start:j+1], &s); err != nil {
				return "", false
			}
			p.i = j + 1
			return s, true
		case c < 0x20:
			return "", false
		}
	}
	return "", false
}

// number parses a JSON number and returns its text.
func (p *parser) number() ([]byte, bool) {
	p.ws()
	d, start := p.data, p.i
	j := start
	if j < len(d) && d[j] == '-' {
		j++
	}
	switch {
	case j < len(d) && d[j] == '0':
		j++
	case j < len(d) && d[j] >= '1' && d[j] <= '9':
		for j < len(d) && d[j] >= '0' && d[j] <= '9' {
			j++
		}
	default:
		return nil, false
	}
	if j < len(d) && d[j] == '.' {
		j++
		k := j
		for j < len(d) && d[j] >= '0' && d[j] <= '9' {
			j++
		}
		if j == k {
			return nil, false
		}
	}
	if j < len(d) && (d[j] == 'e' || d[j] == 'E') {
		j++
		if j < len(d) && (d[j] == '+' || d[j] == '-') {
			j++
		}
		k := j
		for j < len(d) && d[j] >= '0' && d[j] <= '9' {
			j++
		}
		if j == k {
			return nil, false
		}
	}
	p.i = j
	return d[start:j], true
}

func (p *parser) float() (float64, bool) {
	b, ok := p.number()
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(b), 64)
	return f, err == nil
}

func (p *parser) int(bits int) (int64, bool) {
	b, ok := p.number()
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, bits)
	return n, err == nil
}

func (p *parser) int32() (int32, bool) {
	n, ok := p.int(32)
	return int32(n), ok
}

// emptyObject consumes an empty object if one is next, and reports
// whether it did.
func (p *parser) emptyObject() bool {
	start := p.i
	if p.next('{') && p.next('}') {
		return true
	}
	p.i = start
	return false
}

// literal consumes the literal word.
func (p *parser) literal(word string) bool {
	p.ws()
	if len(p.data)-p.i < len(word) || string(p.data[p.i:p.i+len(word)]) != word {
		return false
	}
	p.i += len(word)
	return true
}

func (p *parser) bool() (bool, bool) {
	switch p.peek() {
	case 't':
		return true, p.literal("true")
	case 'f':
		return false, p.literal("false")
	}
	return false, false
}

// value parses any JSON value as encoding/json does into an interface.
func (p *parser) value() (any, bool) {
	switch c := p.peek(); {
	case c == '{':
		return p.genericMap()
	case c == '[':
		var out []any
		ok := p.array(func() bool {
			v, ok := p.value()
			out = append(out, v)
			return ok
		})
		if out == nil {
			out = []any{}
		}
		return out, ok
	case c == '"':
		return p.str(false)
	case c == 't' || c == 'f':
		return p.bool()
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.float()
	}
	return nil, false
}

// genericMap parses an object into a map[string]any; keys repeated in the
// object keep their last value, as in encoding/json.
func (p *parser) genericMap() (map[string]any, bool) {
	m := map[string]any{}
	ok := p.object(func(key []byte) bool {
		v, ok := p.value()
		m[p.d.intern(key)] = v
		return ok
	})
	return m, ok
}

// nodeInfo parses a graph node's info.
func (p *parser) nodeInfo() (*NodeInfo, bool) {
	var (
		ni   NodeInfo
		keys seen
	)
	ok := p.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "path":
			if ok = keys.add(0); ok {
				ni.Path, ok = p.str(true)
			}
		case "outputFor":
			if ok = keys.add(1); ok {
				ok = p.array(func() bool {
					s, ok := p.str(true)
					ni.OutputFor = append(ni.OutputFor, s)
					return ok
				})
			}
		case "messageAsOutput":
			if ok = keys.add(2); ok {
				ni.MessageAsOutput, ok = p.bool()
			}
		}
		return ok
	})
	return &ni, ok
}

// seen tracks the keys of an object by bit, so that a repeated key, which
// encoding/json merges rather than replaces, takes the general path.
type seen uint64

func (s *seen) add(bit uint) bool {
	if *s&(1<<bit) != 0 {
		return false
	}
	*s |= 1 << bit
	return true
}

func (p *parser) event(w *Event) bool {
	var (
		keys    seen
		actions wireActions
	)
	ok := p.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "content":
			if ok = keys.add(0); ok {
				w.Content, ok = p.content()
			}
		case "usageMetadata":
			if ok = keys.add(1); ok {
				w.UsageMetadata, ok = p.usage()
			}
		case "customMetadata":
			if ok = keys.add(2) && p.peek() == '{'; !ok {
				break
			}
			if rest := p.data[p.i:]; bytes.HasPrefix(rest, llmCallOnly) {
				// The metadata of a model call's event, with nothing else.
				p.i += len(llmCallOnly)
				w.LLMCall = true
				break
			}
			w.CustomMetadata, ok = p.genericMap()
		case "modelVersion":
			if ok = keys.add(3); ok {
				w.ModelVersion, ok = p.str(true)
			}
		case "finishReason":
			if ok = keys.add(4); ok {
				var s string
				s, ok = p.str(true)
				w.FinishReason = genai.FinishReason(s)
			}
		case "errorCode":
			if ok = keys.add(5); ok {
				w.ErrorCode, ok = p.str(true)
			}
		case "errorMessage":
			if ok = keys.add(6); ok {
				w.ErrorMessage, ok = p.str(false)
			}
		case "avgLogprobs":
			if ok = keys.add(7); ok {
				w.AvgLogprobs, ok = p.float()
			}
		case "partial":
			if ok = keys.add(8); ok {
				w.Partial, ok = p.bool()
			}
		case "turnComplete":
			if ok = keys.add(9); ok {
				w.TurnComplete, ok = p.bool()
			}
		case "interrupted":
			if ok = keys.add(10); ok {
				w.Interrupted, ok = p.bool()
			}
		case "invocationId":
			if ok = keys.add(11); ok {
				w.InvocationID, ok = p.str(true)
			}
		case "author":
			if ok = keys.add(12); ok {
				w.Author, ok = p.str(true)
			}
		case "actions":
			if ok = keys.add(13); ok {
				ok = p.actions(&actions)
			}
		case "longRunningToolIds":
			if ok = keys.add(14); ok {
				ok = p.array(func() bool {
					s, ok := p.str(false)
					w.LongRunningToolIDs = append(w.LongRunningToolIDs, s)
					return ok
				})
				if ok && w.LongRunningToolIDs == nil {
					w.LongRunningToolIDs = []string{}
				}
			}
		case "branch":
			if ok = keys.add(15); ok {
				w.Branch, ok = p.str(true)
			}
		case "id":
			if ok = keys.add(16); ok {
				w.ID, ok = p.str(false)
			}
		case "output":
			if ok = keys.add(18); ok {
				w.Output, ok = p.value()
			}
		case "nodeInfo":
			if ok = keys.add(19); ok {
				w.NodeInfo, ok = p.nodeInfo()
			}
		case "isolationScope":
			if ok = keys.add(20); ok {
				w.IsolationScope, ok = p.str(true)
			}
		case "timestamp":
			if ok = keys.add(17); ok {
				var b []byte
				var ts Seconds
				if b, ok = p.number(); ok {
					ok = ts.UnmarshalJSON(b) == nil
					w.Timestamp = time.Time(ts)
				}
			}
		}
		return ok
	})
	w.Actions = actions.actions()
	return ok
}

func (p *parser) content() (*genai.Content, bool) {
	c := p.d.content()
	var keys seen
	ok := p.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "parts":
			if ok = keys.add(0); ok {
				c.Parts, ok = p.parts()
			}
		case "role":
			if ok = keys.add(1); ok {
				c.Role, ok = p.str(true)
			}
		}
		return ok
	})
	return c, ok
}

func (p *parser) parts() ([]*genai.Part, bool) {
	tmp := p.d.scratch[:0]
	ok := p.array(func() bool {
		part := p.d.part()
		tmp = append(tmp, part)
		return p.part(part)
	})
	p.d.scratch = tmp[:0]
	if !ok {
		return nil, false
	}
	out := p.d.partSlice(len(tmp))
	copy(out, tmp)
	clear(tmp)
	return out, true
}

func (p *parser) part(part *genai.Part) bool {
	var keys seen
	return p.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "text":
			if ok = keys.add(0); ok {
				part.Text, ok = p.str(false)
			}
		case "thought":
			if ok = keys.add(1); ok {
				part.Thought, ok = p.bool()
			}
		case "thoughtSignature":
			if ok = keys.add(2); ok {
				part.ThoughtSignature, ok = p.bytes()
			}
		case "functionCall":
			if ok = keys.add(3); ok {
				part.FunctionCall, ok = p.functionCall()
			}
		case "functionResponse":
			if ok = keys.add(4); ok {
				part.FunctionResponse, ok = p.functionResponse()
			}
		}
		return ok
	})
}

// bytes parses base64 the way encoding/json decodes a []byte.
func (p *parser) bytes() ([]byte, bool) {
	s, ok := p.rawString()
	if !ok {
		return nil, false
	}
	b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(b, s)
	return b[:n], err == nil
}

func (p *parser) functionCall() (*genai.FunctionCall, bool) {
	id, name, args, ok := p.call("args")
	return &genai.FunctionCall{ID: id, Name: name, Args: args}, ok
}

func (p *parser) functionResponse() (*genai.FunctionResponse, bool) {
	id, name, resp, ok := p.call("response")
	return &genai.FunctionResponse{ID: id, Name: name, Response: resp}, ok
}

// call parses the shape function calls and responses share: an id, a name
// and one object member (args or response).
func (p *parser) call(member string) (id, name string, m map[string]any, ok bool) {
	var keys seen
	ok = p.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "id":
			if ok = keys.add(0); ok {
				id, ok = p.str(false)
			}
		case "name":
			if ok = keys.add(1); ok {
				name, ok = p.str(true)
			}
		case member:
			if ok = keys.add(2) && p.peek() == '{'; ok {
				m, ok = p.genericMap()
			}
		}
		return ok
	})
	return id, name, m, ok
}

func (p *parser) usage() (*genai.GenerateContentResponseUsageMetadata, bool) {
	u := &genai.GenerateContentResponseUsageMetadata{}
	var keys seen
	ok := p.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "cacheTokensDetails":
			if ok = keys.add(0); ok {
				u.CacheTokensDetails, ok = p.modalityCounts()
			}
		case "cachedContentTokenCount":
			if ok = keys.add(1); ok {
				u.CachedContentTokenCount, ok = p.int32()
			}
		case "candidatesTokenCount":
			if ok = keys.add(2); ok {
				u.CandidatesTokenCount, ok = p.int32()
			}
		case "candidatesTokensDetails":
			if ok = keys.add(3); ok {
				u.CandidatesTokensDetails, ok = p.modalityCounts()
			}
		case "promptTokenCount":
			if ok = keys.add(4); ok {
				u.PromptTokenCount, ok = p.int32()
			}
		case "promptTokensDetails":
			if ok = keys.add(5); ok {
				u.PromptTokensDetails, ok = p.modalityCounts()
			}
		case "thoughtsTokenCount":
			if ok = keys.add(6); ok {
				u.ThoughtsTokenCount, ok = p.int32()
			}
		case "toolUsePromptTokenCount":
			if ok = keys.add(7); ok {
				u.ToolUsePromptTokenCount, ok = p.int32()
			}
		case "toolUsePromptTokensDetails":
			if ok = keys.add(8); ok {
				u.ToolUsePromptTokensDetails, ok = p.modalityCounts()
			}
		case "totalTokenCount":
			if ok = keys.add(9); ok {
				u.TotalTokenCount, ok = p.int32()
			}
		case "trafficType":
			if ok = keys.add(10); ok {
				var s string
				s, ok = p.str(true)
				u.TrafficType = genai.TrafficType(s)
			}
		}
		return ok
	})
	return u, ok
}

func (p *parser) modalityCounts() ([]*genai.ModalityTokenCount, bool) {
	out := []*genai.ModalityTokenCount{}
	ok := p.array(func() bool {
		m := &genai.ModalityTokenCount{}
		out = append(out, m)
		var keys seen
		return p.object(func(key []byte) bool {
			var ok bool
			switch string(key) {
			case "modality":
				if ok = keys.add(0); ok {
					var s string
					s, ok = p.str(true)
					m.Modality = genai.MediaModality(s)
				}
			case "tokenCount":
				if ok = keys.add(1); ok {
					m.TokenCount, ok = p.int32()
				}
			}
			return ok
		})
	})
	return out, ok
}

func (p *parser) actions(a *wireActions) bool {
	var keys seen
	return p.object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "skipSummarization":
			if ok = keys.add(0); ok {
				a.SkipSummarization, ok = p.bool()
			}
		// The event keeps none of the four maps below when empty, so an
		// empty one is not even allocated.
		case "stateDelta":
			if ok = keys.add(1) && p.peek() == '{'; ok && !p.emptyObject() {
				a.StateDelta, ok = p.genericMap()
			}
		case "artifactDelta":
			if ok = keys.add(2) && p.peek() == '{'; ok && !p.emptyObject() {
				a.ArtifactDelta = map[string]int64{}
				ok = p.object(func(key []byte) bool {
					n, ok := p.int(64)
					a.ArtifactDelta[p.d.intern(key)] = n
					return ok
				})
			}
		case "transferToAgent":
			if ok = keys.add(3); ok {
				a.TransferToAgent, ok = p.str(true)
			}
		case "escalate":
			if ok = keys.add(4); ok {
				a.Escalate, ok = p.bool()
			}
		case "requestedAuthConfigs":
			if ok = keys.add(5) && p.peek() == '{'; ok && !p.emptyObject() {
				a.RequestedAuthConfigs, ok = p.genericMap()
			}
		case "requestedToolConfirmations":
			// Only the empty map; confirmations take the general path.
			ok = keys.add(6) && p.peek() == '{' && p.emptyObject()
		case "endOfAgent":
			if ok = keys.add(7); ok {
				a.EndOfAgent, ok = p.bool()
			}
		case "agentState":
			if ok = keys.add(8) && p.peek() == '{'; ok {
				a.AgentState, ok = p.genericMap()
			}
		case "rewindBeforeInvocationId":
			if ok = keys.add(9); ok {
				a.RewindBeforeInvocationID, ok = p.str(true)
			}
		case "route":
			if ok = keys.add(10) && p.peek() != 'n'; ok {
				a.Route, ok = p.value()
			}
		case "setModelResponse":
			if ok = keys.add(11) && p.peek() != 'n'; ok {
				a.SetModelResponse, ok = p.value()
			}
		}
		return ok
	})
}
