package event

import (
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"google.golang.org/genai"
)

// The fast path of Event.MarshalJSON. It writes the bytes encoding/json
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

// appendEventJSON appends e's wire JSON to dst, reporting false (with dst
// in an unspecified state) if the fast path does not cover e.
func appendEventJSON(dst []byte, e *Event) ([]byte, bool) {
	r := &e.Response
	if r.GroundingMetadata != nil || r.CitationMetadata != nil || r.UsageMetadata != nil || r.LogprobsResult != nil ||
		r.InputTranscription != nil || r.OutputTranscription != nil || r.CustomMetadata != nil || r.AvgLogprobs != 0 {
		return dst, false
	}
	a := &e.Actions
	if len(a.RequestedAuthConfigs) > 0 || len(a.RequestedToolConfirmations) > 0 || a.Compaction != nil {
		return dst, false
	}
	enc := encoder{buf: dst, ok: true}
	enc.buf = append(enc.buf, '{')
	first := true
	field := func(name string) {
		if !first {
			enc.buf = append(enc.buf, ',')
		}
		first = false
		enc.buf = append(enc.buf, '"')
		enc.buf = append(enc.buf, name...)
		enc.buf = append(enc.buf, '"', ':')
	}
	if c := r.Content; c != nil {
		field("content")
		enc.content(c)
	}
	if r.ModelVersion != "" {
		field("modelVersion")
		enc.str(r.ModelVersion)
	}
	if r.FinishReason != "" {
		field("finishReason")
		enc.str(string(r.FinishReason))
	}
	if r.ErrorCode != "" {
		field("errorCode")
		enc.str(r.ErrorCode)
	}
	if r.ErrorMessage != "" {
		field("errorMessage")
		enc.str(r.ErrorMessage)
	}
	if r.Partial {
		field("partial")
		enc.buf = append(enc.buf, "true"...)
	}
	if r.TurnComplete {
		field("turnComplete")
		enc.buf = append(enc.buf, "true"...)
	}
	if r.Interrupted {
		field("interrupted")
		enc.buf = append(enc.buf, "true"...)
	}
	if e.InvocationID != "" {
		field("invocationId")
		enc.str(e.InvocationID)
	}
	if e.Author != "" {
		field("author")
		enc.str(e.Author)
	}
	field("actions")
	enc.actions(a)
	if len(e.LongRunningToolIDs) > 0 {
		field("longRunningToolIds")
		enc.strs(e.LongRunningToolIDs)
	}
	if e.Branch != "" {
		field("branch")
		enc.str(e.Branch)
	}
	if e.ID != "" {
		field("id")
		enc.str(e.ID)
	}
	field("timestamp")
	enc.seconds(e.Timestamp)
	if e.Output != nil {
		field("output")
		enc.value(e.Output)
	}
	if ni := e.NodeInfo; ni != nil {
		field("nodeInfo")
		enc.buf = append(enc.buf, `{"path":`...)
		enc.str(ni.Path)
		if len(ni.OutputFor) > 0 {
			enc.buf = append(enc.buf, `,"outputFor":`...)
			enc.strs(ni.OutputFor)
		}
		if ni.MessageAsOutput {
			enc.buf = append(enc.buf, `,"messageAsOutput":true`...)
		}
		enc.buf = append(enc.buf, '}')
	}
	enc.buf = append(enc.buf, '}')
	return enc.buf, enc.ok
}

func (enc *encoder) actions(a *Actions) {
	enc.buf = append(enc.buf, '{')
	if a.SkipSummarization {
		enc.buf = append(enc.buf, `"skipSummarization":true,`...)
	}
	enc.buf = append(enc.buf, `"stateDelta":`...)
	if a.StateDelta == nil {
		enc.buf = append(enc.buf, "{}"...)
	} else {
		enc.object(a.StateDelta)
	}
	enc.buf = append(enc.buf, `,"artifactDelta":{`...)
	for i, k := range sortedKeys(a.ArtifactDelta) {
		if i > 0 {
			enc.buf = append(enc.buf, ',')
		}
		enc.str(k)
		enc.buf = append(enc.buf, ':')
		enc.buf = strconv.AppendInt(enc.buf, a.ArtifactDelta[k], 10)
	}
	enc.buf = append(enc.buf, '}')
	if a.TransferToAgent != "" {
		enc.buf = append(enc.buf, `,"transferToAgent":`...)
		enc.str(a.TransferToAgent)
	}
	if a.Escalate {
		enc.buf = append(enc.buf, `,"escalate":true`...)
	}
	enc.buf = append(enc.buf, `,"requestedAuthConfigs":{},"requestedToolConfirmations":{}`...)
	if a.EndOfAgent {
		enc.buf = append(enc.buf, `,"endOfAgent":true`...)
	}
	if len(a.AgentState) > 0 {
		enc.buf = append(enc.buf, `,"agentState":`...)
		enc.object(a.AgentState)
	}
	if a.RewindBeforeInvocationID != "" {
		enc.buf = append(enc.buf, `,"rewindBeforeInvocationId":`...)
		enc.str(a.RewindBeforeInvocationID)
	}
	enc.buf = append(enc.buf, '}')
}

func (enc *encoder) content(c *genai.Content) {
	enc.buf = append(enc.buf, '{')
	if len(c.Parts) > 0 {
		enc.buf = append(enc.buf, `"parts":[`...)
		for i, p := range c.Parts {
			if i > 0 {
				enc.buf = append(enc.buf, ',')
			}
			enc.part(p)
		}
		enc.buf = append(enc.buf, ']')
	}
	if c.Role != "" {
		if len(c.Parts) > 0 {
			enc.buf = append(enc.buf, ',')
		}
		enc.buf = append(enc.buf, `"role":`...)
		enc.str(c.Role)
	}
	enc.buf = append(enc.buf, '}')
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
	enc.buf = append(enc.buf, '{')
	n := len(enc.buf)
	sep := func() {
		if len(enc.buf) > n {
			enc.buf = append(enc.buf, ',')
		}
	}
	if fc := p.FunctionCall; fc != nil {
		if fc.PartialArgs != nil || fc.WillContinue != nil {
			enc.ok = false
			return
		}
		enc.buf = append(enc.buf, `"functionCall":{`...)
		m := len(enc.buf)
		if fc.ID != "" {
			enc.buf = append(enc.buf, `"id":`...)
			enc.str(fc.ID)
		}
		if len(fc.Args) > 0 {
			if len(enc.buf) > m {
				enc.buf = append(enc.buf, ',')
			}
			enc.buf = append(enc.buf, `"args":`...)
			enc.object(fc.Args)
		}
		if fc.Name != "" {
			if len(enc.buf) > m {
				enc.buf = append(enc.buf, ',')
			}
			enc.buf = append(enc.buf, `"name":`...)
			enc.str(fc.Name)
		}
		enc.buf = append(enc.buf, '}')
	}
	if fr := p.FunctionResponse; fr != nil {
		if fr.WillContinue != nil || fr.Scheduling != "" || fr.Parts != nil {
			enc.ok = false
			return
		}
		sep()
		enc.buf = append(enc.buf, `"functionResponse":{`...)
		m := len(enc.buf)
		if fr.ID != "" {
			enc.buf = append(enc.buf, `"id":`...)
			enc.str(fr.ID)
		}
		if fr.Name != "" {
			if len(enc.buf) > m {
				enc.buf = append(enc.buf, ',')
			}
			enc.buf = append(enc.buf, `"name":`...)
			enc.str(fr.Name)
		}
		if len(fr.Response) > 0 {
			if len(enc.buf) > m {
				enc.buf = append(enc.buf, ',')
			}
			enc.buf = append(enc.buf, `"response":`...)
			enc.object(fr.Response)
		}
		enc.buf = append(enc.buf, '}')
	}
	if p.Text != "" {
		sep()
		enc.buf = append(enc.buf, `"text":`...)
		enc.str(p.Text)
	}
	if p.Thought {
		sep()
		enc.buf = append(enc.buf, `"thought":true`...)
	}
	enc.buf = append(enc.buf, '}')
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

// object encodes a map of JSON values, keys sorted; a nil map is null.
func (enc *encoder) object(m map[string]any) {
	enc.valueAt(m, 0)
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
		enc.buf = append(enc.buf, '{')
		for i, k := range sortedKeys(v) {
			if i > 0 {
				enc.buf = append(enc.buf, ',')
			}
			enc.str(k)
			enc.buf = append(enc.buf, ':')
			enc.valueAt(v[k], depth+1)
			if !enc.ok {
				return
			}
		}
		enc.buf = append(enc.buf, '}')
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

// str writes s as a JSON string, escaped as encoding/json escapes it (HTML
// characters, U+2028 and U+2029 included; invalid UTF-8 as U+FFFD).
func (enc *encoder) str(s string) {
	b := append(enc.buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
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
