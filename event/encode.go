package event

import (
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"google.golang.org/genai"
)

// The fast path of Event.MarshalJSON and Event.AppendStored. It writes the bytes encoding/json
// writes for the wire struct (fields in the same order, map keys sorted,
// strings escaped the same way, numbers formatted the same way) for the
// events a run produces most (text, function calls and responses, state
// deltas of plain JSON values) in one buffer, and reports false for
// anything else, which the caller then encodes with encoding/json. The
// fast path must never produce different bytes: TestEncodeFastMatches and
// FuzzEncodeFast compare the two.

// encoder appends JSON to buf; ok turns false at the first value the fast
// path does not cover.
type encoder struct {
	buf []byte
	ok  bool
}

// appendEventJSON appends e's JSON, in the stored form if stored and in
// the wire form otherwise, to dst, reporting false (with dst in an
// unspecified state) if the fast path does not cover e.
func appendEventJSON(dst []byte, e *Event, stored bool) ([]byte, bool) {
	r := &e.Response
	if r.GroundingMetadata != nil || r.CitationMetadata != nil || r.UsageMetadata != nil || r.LogprobsResult != nil ||
		r.InputTranscription != nil || r.OutputTranscription != nil || r.AvgLogprobs != 0 {
		return dst, false
	}
	a := &e.Actions
	if len(a.RequestedAuthConfigs) > 0 || len(a.RequestedToolConfirmations) > 0 || a.Compaction != nil ||
		len(e.Unknown) > 0 || len(a.Unknown) > 0 || len(a.RenderUIWidgets) > 0 {
		return dst, false
	}
	enc := encoder{buf: dst, ok: true}
	o := enc.open()
	if c := r.Content; c != nil {
		o.field("content")
		enc.content(c)
	}
	if stored && e.LLMCall && len(r.CustomMetadata) == 0 {
		o.field("customMetadata")
		enc.buf = append(enc.buf, llmCallOnly...)
	} else {
		o.values("customMetadata", e.metadata(stored))
	}
	o.str("modelVersion", r.ModelVersion)
	o.str("finishReason", string(r.FinishReason))
	o.str("errorCode", r.ErrorCode)
	o.str("errorMessage", r.ErrorMessage)
	o.flag("partial", r.Partial)
	o.flag("turnComplete", r.TurnComplete)
	o.flag("interrupted", r.Interrupted)
	o.str("invocationId", e.InvocationID)
	o.str("author", e.Author)
	o.field("actions")
	enc.actions(a)
	if len(e.LongRunningToolIDs) > 0 {
		o.field("longRunningToolIds")
		enc.strs(e.LongRunningToolIDs)
	}
	o.str("branch", e.Branch)
	o.str("isolationScope", e.IsolationScope)
	o.str("id", e.ID)
	o.field("timestamp")
	enc.seconds(e.Timestamp)
	if e.Output != nil {
		o.field("output")
		enc.value(e.Output)
	}
	if ni := e.NodeInfo; ni != nil {
		o.field("nodeInfo")
		n := enc.open()
		n.field("path")
		enc.str(ni.Path)
		if len(ni.OutputFor) > 0 {
			n.field("outputFor")
			enc.strs(ni.OutputFor)
		}
		n.flag("messageAsOutput", ni.MessageAsOutput)
		n.close()
	}
	o.close()
	return enc.buf, enc.ok
}

// object writes the members of one JSON object: open writes its '{', key
// each member's name (after a comma but for the first), close its '}'.
type object struct {
	enc     *encoder
	members int
}

func (enc *encoder) open() object {
	enc.buf = append(enc.buf, '{')
	return object{enc: enc}
}

// key writes a member's name, escaped: a map's key.
func (o *object) key(name string) {
	if o.members > 0 {
		o.enc.buf = append(o.enc.buf, ',')
	}
	o.members++
	o.enc.str(name)
	o.enc.buf = append(o.enc.buf, ':')
}

// field writes the name of one of the wire struct's members, which never
// needs escaping.
func (o *object) field(name string) {
	b := o.enc.buf
	if o.members > 0 {
		b = append(b, ',')
	}
	o.members++
	b = append(b, '"')
	b = append(b, name...)
	o.enc.buf = append(b, '"', ':')
}

// str writes a string member, omitted when empty.
func (o *object) str(name, v string) {
	if v != "" {
		o.field(name)
		o.enc.str(v)
	}
}

// flag writes a true member, omitted when false.
func (o *object) flag(name string, v bool) {
	if v {
		o.field(name)
		o.enc.buf = append(o.enc.buf, "true"...)
	}
}

// values writes a map member, omitted when empty.
func (o *object) values(name string, m map[string]any) {
	if len(m) > 0 {
		o.field(name)
		o.enc.value(m)
	}
}

func (o *object) close() { o.enc.buf = append(o.enc.buf, '}') }

func (enc *encoder) actions(a *Actions) {
	o := enc.open()
	o.flag("skipSummarization", a.SkipSummarization)
	o.field("stateDelta")
	if a.StateDelta == nil {
		enc.buf = append(enc.buf, "{}"...)
	} else {
		enc.value(a.StateDelta)
	}
	o.field("artifactDelta")
	d := enc.open()
	for _, k := range sortedKeys(a.ArtifactDelta) {
		d.key(k)
		enc.buf = strconv.AppendInt(enc.buf, a.ArtifactDelta[k], 10)
	}
	d.close()
	o.str("transferToAgent", a.TransferToAgent)
	o.flag("escalate", a.Escalate)
	enc.buf = append(enc.buf, `,"requestedAuthConfigs":{},"requestedToolConfirmations":{}`...)
	o.flag("endOfAgent", a.EndOfAgent)
	o.values("agentState", a.AgentState)
	o.str("rewindBeforeInvocationId", a.RewindBeforeInvocationID)
	if a.Route != nil {
		o.field("route")
		enc.value(a.Route)
	}
	if a.SetModelResponse != nil {
		o.field("setModelResponse")
		enc.value(a.SetModelResponse)
	}
	o.close()
}

func (enc *encoder) content(c *genai.Content) {
	o := enc.open()
	if len(c.Parts) > 0 {
		o.field("parts")
		enc.buf = append(enc.buf, '[')
		for i, p := range c.Parts {
			if i > 0 {
				enc.buf = append(enc.buf, ',')
			}
			enc.part(p)
		}
		enc.buf = append(enc.buf, ']')
	}
	o.str("role", c.Role)
	o.close()
}

func (enc *encoder) part(p *genai.Part) {
	if p == nil {
		enc.buf = append(enc.buf, "null"...)
		return
	}
	if p.MediaResolution != nil || p.CodeExecutionResult != nil || p.ExecutableCode != nil || p.FileData != nil ||
		p.InlineData != nil || p.ThoughtSignature != nil || p.VideoMetadata != nil || p.ToolCall != nil ||
		p.ToolResponse != nil || p.PartMetadata != nil || p.AudioTranscription != nil || p.MediaProcessing != "" ||
		p.SpeechMetadata != nil {
		enc.ok = false
		return
	}
	o := enc.open()
	if fc := p.FunctionCall; fc != nil {
		if fc.PartialArgs != nil || fc.WillContinue != nil {
			enc.ok = false
			return
		}
		o.field("functionCall")
		c := enc.open()
		c.str("id", fc.ID)
		c.values("args", fc.Args)
		c.str("name", fc.Name)
		c.close()
	}
	if fr := p.FunctionResponse; fr != nil {
		if fr.WillContinue != nil || fr.Scheduling != "" || fr.Parts != nil {
			enc.ok = false
			return
		}
		o.field("functionResponse")
		r := enc.open()
		r.str("id", fr.ID)
		r.str("name", fr.Name)
		r.values("response", fr.Response)
		r.close()
	}
	o.str("text", p.Text)
	o.flag("thought", p.Thought)
	o.close()
}

// strs encodes a list of strings.
func (enc *encoder) strs(list []string) {
	enc.buf = append(enc.buf, '[')
	for i, s := range list {
		if i > 0 {
			enc.buf = append(enc.buf, ',')
		}
		enc.str(s)
	}
	enc.buf = append(enc.buf, ']')
}

// maxFastDepth bounds the nesting the fast path follows; deeper values go
// to encoding/json, which reports a cycle as an error.
const maxFastDepth = 32

// value encodes one JSON value of the kinds state deltas, arguments and
// responses usually hold; other kinds (json.Number, structs, typed maps and
// slices) are left to encoding/json.
func (enc *encoder) value(v any) {
	enc.valueAt(v, 0)
}

func (enc *encoder) valueAt(v any, depth int) {
	if depth > maxFastDepth {
		enc.ok = false
		return
	}
	switch v := v.(type) {
	case nil:
		enc.buf = append(enc.buf, "null"...)
	case string:
		enc.str(v)
	case bool:
		enc.buf = strconv.AppendBool(enc.buf, v)
	case float64:
		enc.float(v, 64)
	case float32:
		enc.float(float64(v), 32)
	case int:
		enc.buf = strconv.AppendInt(enc.buf, int64(v), 10)
	case int64:
		enc.buf = strconv.AppendInt(enc.buf, v, 10)
	case int32:
		enc.buf = strconv.AppendInt(enc.buf, int64(v), 10)
	case uint64:
		enc.buf = strconv.AppendUint(enc.buf, v, 10)
	case map[string]any:
		if v == nil {
			enc.buf = append(enc.buf, "null"...)
			return
		}
		o := enc.open()
		var small [8]string // the keys of a small map stay on the stack
		keys := small[:0]
		if len(v) > len(small) {
			keys = make([]string, 0, len(v))
		}
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			o.key(k)
			enc.valueAt(v[k], depth+1)
			if !enc.ok {
				return
			}
		}
		o.close()
	case []any:
		if v == nil {
			enc.buf = append(enc.buf, "null"...)
			return
		}
		enc.buf = append(enc.buf, '[')
		for i, x := range v {
			if i > 0 {
				enc.buf = append(enc.buf, ',')
			}
			enc.valueAt(x, depth+1)
			if !enc.ok {
				return
			}
		}
		enc.buf = append(enc.buf, ']')
	default:
		enc.ok = false
	}
}

// float formats f as encoding/json does.
func (enc *encoder) float(f float64, bits int) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		enc.ok = false
		return
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	n := len(enc.buf)
	enc.buf = strconv.AppendFloat(enc.buf, f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9
		b := enc.buf[n:]
		if m := len(b); m >= 4 && b[m-4] == 'e' && b[m-3] == '-' && b[m-2] == '0' {
			b[m-2] = b[m-1]
			enc.buf = enc.buf[:len(enc.buf)-1]
		}
	}
}

// seconds writes a timestamp as Seconds.MarshalJSON does.
func (enc *encoder) seconds(t time.Time) {
	if t.IsZero() {
		enc.buf = append(enc.buf, '0')
		return
	}
	if !inRange(t) {
		enc.ok = false
		return
	}
	enc.buf = appendSeconds(enc.buf, t.UnixMicro())
}

// appendSeconds appends a number of microseconds as decimal seconds with
// no trailing zeros in the fraction.
func appendSeconds(b []byte, us int64) []byte {
	if us < 0 { // before 1970: the sign, then the magnitude
		b = append(b, '-')
		us = -us
	}
	sec, frac := us/1e6, us%1e6
	b = strconv.AppendInt(b, sec, 10)
	if frac == 0 {
		return b
	}
	var digits [7]byte
	digits[0] = '.'
	for i := 6; i >= 1; i-- {
		digits[i] = byte('0' + frac%10)
		frac /= 10
	}
	end := 7
	for digits[end-1] == '0' {
		end--
	}
	return append(b, digits[:end]...)
}

const hexDigits = "0123456789abcdef"

// plainASCII marks the bytes the encoder writes as they are: those that
// stand for themselves in a JSON string (plain), but for the HTML
// characters encoding/json escapes.
var plainASCII = func() [256]bool {
	t := plain
	for _, c := range "<>&" {
		t[c] = false
	}
	return t
}()

// str writes s as a JSON string, escaped as encoding/json escapes it (HTML
// characters, U+2028 and U+2029 included; invalid UTF-8 as U+FFFD).
func (enc *encoder) str(s string) {
	b := append(enc.buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if plainASCII[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	enc.buf = append(b, '"')
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
