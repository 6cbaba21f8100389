package event

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
)

// wireEvent is the JSON shape of an Event. The embedded response is
// flattened by encoding/json.
type wireEvent struct {
	model.Response
	InvocationID       string      `json:"invocationId,omitempty"`
	Author             string      `json:"author,omitempty"`
	Actions            wireActions `json:"actions"`
	LongRunningToolIDs []string    `json:"longRunningToolIds,omitempty"`
	Branch             string      `json:"branch,omitempty"`
	IsolationScope     string      `json:"isolationScope,omitempty"`
	ID                 string      `json:"id,omitempty"`
	Timestamp          Seconds     `json:"timestamp"`
	Output             any         `json:"output,omitempty"`
	NodeInfo           *NodeInfo   `json:"nodeInfo,omitempty"`
}

type wireActions struct {
	SkipSummarization          bool                        `json:"skipSummarization,omitempty"`
	StateDelta                 map[string]any              `json:"stateDelta"`
	ArtifactDelta              map[string]int64            `json:"artifactDelta"`
	TransferToAgent            string                      `json:"transferToAgent,omitempty"`
	Escalate                   bool                        `json:"escalate,omitempty"`
	RequestedAuthConfigs       map[string]any              `json:"requestedAuthConfigs"`
	RequestedToolConfirmations map[string]ToolConfirmation `json:"requestedToolConfirmations"`
	Compaction                 *wireCompaction             `json:"compaction,omitempty"`
	EndOfAgent                 bool                        `json:"endOfAgent,omitempty"`
	AgentState                 map[string]any              `json:"agentState,omitempty"`
	RewindBeforeInvocationID   string                      `json:"rewindBeforeInvocationId,omitempty"`
	Route                      any                         `json:"route,omitempty"`
	RenderUIWidgets            []any                       `json:"renderUiWidgets,omitempty"`
	SetModelResponse           any                         `json:"setModelResponse,omitempty"`

	unknown map[string]json.RawMessage
}

// wireActionsFields is wireActions without its MarshalJSON method.
type wireActionsFields wireActions

// MarshalJSON encodes the actions' fields, then the unknown ones.
func (w wireActions) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(wireActionsFields(w))
	if err != nil {
		return nil, err
	}
	return appendUnknown(b, w.unknown, actionKeys)
}

// The JSON keys of the fields of an event and of its actions: those Loom
// models. Any other key of a decoded event is kept in Unknown.
var (
	eventKeys  = jsonKeys(reflect.TypeFor[wireEvent]())
	actionKeys = jsonKeys(reflect.TypeFor[wireActionsFields]())
)

// jsonKeys returns the JSON names of t's fields, those of embedded structs
// included.
func jsonKeys(t reflect.Type) map[string]bool {
	keys := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			maps.Copy(keys, jsonKeys(f.Type))
			continue
		}
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			keys[name] = true
		}
	}
	return keys
}

// appendUnknown inserts the unknown fields into b, a JSON object, before
// its closing brace, in key order, leaving out those that name a known
// key (known) or hold no value.
func appendUnknown(b []byte, unknown map[string]json.RawMessage, known map[string]bool) ([]byte, error) {
	if len(unknown) == 0 {
		return b, nil
	}
	out := b[:len(b)-1]
	empty := len(out) == 1
	for _, k := range slices.Sorted(maps.Keys(unknown)) {
		v := bytes.TrimSpace(unknown[k])
		if known[k] || len(v) == 0 || string(v) == "null" {
			continue
		}
		if !empty {
			out = append(out, ',')
		}
		empty = false
		kb, _ := json.Marshal(k)
		out = append(out, kb...)
		out = append(out, ':')
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			return nil, fmt.Errorf("event: unknown field %q: %w", k, err)
		}
		out = append(out, buf.Bytes()...)
	}
	return append(out, '}'), nil
}

// collectUnknown returns the members of the JSON object data whose keys,
// as written or in camelCase, are not in known, keeping their JSON.
func collectUnknown(data []byte, known map[string]bool) map[string]json.RawMessage {
	var all map[string]json.RawMessage
	if json.Unmarshal(data, &all) != nil {
		return nil
	}
	var out map[string]json.RawMessage
	for k, v := range all {
		if known[k] || known[CamelCase(k)] || string(bytes.TrimSpace(v)) == "null" {
			continue
		}
		if out == nil {
			out = map[string]json.RawMessage{}
		}
		var buf bytes.Buffer
		if json.Compact(&buf, v) == nil {
			out[k] = buf.Bytes()
		}
	}
	return out
}

type wireCompaction struct {
	StartTimestamp   Seconds        `json:"startTimestamp"`
	EndTimestamp     Seconds        `json:"endTimestamp"`
	CompactedContent *genai.Content `json:"compactedContent,omitempty"`
}

// Seconds is a time encoded in JSON as float seconds since the Unix epoch,
// with microsecond precision, as ADK's wire format requires.
type Seconds time.Time

// MarshalJSON encodes the time as float seconds.
func (s Seconds) MarshalJSON() ([]byte, error) {
	t := time.Time(s)
	if t.IsZero() {
		return []byte("0"), nil
	}
	if !inRange(t) {
		return nil, fmt.Errorf("event: timestamp %v: %w", t, errTimestampRange)
	}
	return appendSeconds(make([]byte, 0, 24), t.UnixMicro()), nil
}

// UnmarshalJSON decodes float seconds. It also accepts an RFC 3339 string,
// and epoch milliseconds: a number whose magnitude is at least 1e11 (beyond
// the year 5138 as seconds) can only be milliseconds and is read as such.
func (s *Seconds) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*s = Seconds{}
		return nil
	}
	if len(data) > 0 && data[0] == '"' {
		var t time.Time
		if err := t.UnmarshalJSON(data); err != nil {
			return fmt.Errorf("event: timestamp: %w", err)
		}
		if !inRange(t) {
			return fmt.Errorf("event: timestamp %s: %w", data, errTimestampRange)
		}
		*s = Seconds(t)
		return nil
	}
	if t, ok := parseDecimalSeconds(data); ok {
		*s = Seconds(t)
		return nil
	}
	var f float64
	if err := json.Unmarshal(data, &f); err != nil {
		return fmt.Errorf("event: timestamp: %w", err)
	}
	if math.Abs(f) >= minMillis {
		f /= 1000
	}
	if math.Abs(f) >= maxSeconds {
		return fmt.Errorf("event: timestamp %s: %w", data, errTimestampRange)
	}
	*s = Seconds(FromSeconds(f))
	return nil
}

// maxSeconds bounds the timestamps the codec reads and writes: 1e11 seconds,
// in the year 5138, well inside what microseconds in an int64 can hold. A
// number of at least maxSeconds on the wire is read as milliseconds (1e11
// milliseconds is in 1973; writers that use epoch milliseconds have
// timestamps far above it), so a time past the bound has no encoding.
const maxSeconds = 1e11

// minMillis is the smallest magnitude read as milliseconds rather than
// seconds.
const minMillis = maxSeconds

var errTimestampRange = errors.New("out of range")

// inRange reports whether t is within maxSeconds of the epoch.
func inRange(t time.Time) bool {
	sec := t.Unix()
	return sec > -maxSeconds && sec < maxSeconds
}

// parseDecimalSeconds parses a plain decimal number of seconds
// (-?digits[.digits]) exactly, rounding to the microsecond, so that a
// timestamp read from the wire encodes back to the same text whatever its
// size; a number of at least minMillis is milliseconds. It reports false for
// other forms (exponents) and out-of-range values, which go through float64.
func parseDecimalSeconds(data []byte) (time.Time, bool) {
	s := string(data)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	ip, fp, _ := strings.Cut(s, ".")
	if ip == "" || len(ip) > 15 || !allDigits(ip) || !allDigits(fp) {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(ip, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	// digits is the number of fraction digits down to the microsecond,
	// perUnit the microseconds in one unit of n.
	digits, perUnit := 6, int64(1e6)
	if n >= minMillis {
		digits, perUnit = 3, 1e3
	}
	if n >= maxSeconds*1e6/perUnit {
		return time.Time{}, false
	}
	var us int64
	for i := range digits {
		us *= 10
		if i < len(fp) {
			us += int64(fp[i] - '0')
		}
	}
	if len(fp) > digits && fp[digits] >= '5' {
		us++
	}
	us += n * perUnit
	if neg {
		us = -us
	}
	if us == 0 {
		return time.Time{}, true
	}
	return time.UnixMicro(us), true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// FromSeconds converts float seconds since the epoch to a time with
// microsecond precision. Zero gives the zero time, as do NaN, infinities
// and values beyond the year 9999.
func FromSeconds(f float64) time.Time {
	if f == 0 || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) >= maxSeconds {
		return time.Time{}
	}
	sec := math.Floor(f)
	us := math.Round((f - sec) * 1e6)
	return time.UnixMicro(int64(sec)*1e6 + int64(us))
}

// ToSeconds converts a time to float seconds since the epoch (zero for the
// zero time).
func ToSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixMicro()) / 1e6
}

// MarshalJSON encodes the event in ADK's wire format, without the
// runtime's own marks (see "Stored form" in the package documentation):
// what json.Marshal writes for an event is what ADK's clients read.
func (e *Event) MarshalJSON() ([]byte, error) { return e.marshal(false) }

// MarshalStored encodes the event in the stored form: the wire format
// with the runtime's marks (Event.LLMCall, MetadataStartedCalls,
// MetadataCallMAC) in
// "customMetadata". Session stores keep events so; Decoder and
// UnmarshalJSON read the marks back.
func (e *Event) MarshalStored() ([]byte, error) { return e.marshal(true) }

func (e *Event) marshal(stored bool) ([]byte, error) {
	buf := encodeBuffers.Get().(*[]byte)
	b, ok := appendEventJSON((*buf)[:0], e, stored)
	var out []byte
	if ok {
		out = append([]byte(nil), b...) // exactly its size: stores keep it
	}
	if cap(b) <= maxPooledBuffer {
		*buf = b
		encodeBuffers.Put(buf)
	}
	if ok {
		return out, nil
	}
	return e.marshalWire(stored)
}

// AppendJSON appends the event's encoding in ADK's wire format, the bytes
// MarshalJSON returns, to dst and returns the extended slice.
func (e *Event) AppendJSON(dst []byte) ([]byte, error) { return e.appendJSON(dst, false) }

// AppendStored appends the event's stored form, the bytes MarshalStored
// returns, to dst and returns the extended slice.
func (e *Event) AppendStored(dst []byte) ([]byte, error) { return e.appendJSON(dst, true) }

func (e *Event) appendJSON(dst []byte, stored bool) ([]byte, error) {
	if b, ok := appendEventJSON(dst, e, stored); ok {
		return b, nil
	}
	b, err := e.marshalWire(stored)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// AppendStoredAsWire appends to dst the wire encoding of the event whose
// stored form is stored (as MarshalStored writes it), and returns the
// extended slice: stored itself when it holds none of the runtime's marks,
// else the event decoded and encoded again. It fails if stored, holding a
// mark, does not decode.
func AppendStoredAsWire(dst, stored []byte) ([]byte, error) {
	if !bytes.Contains(stored, storedLLMCallKey) && !bytes.Contains(stored, storedStartedKey) && !bytes.Contains(stored, storedMACKey) {
		return append(dst, stored...), nil
	}
	var ev Event
	if err := new(Decoder).Decode(stored, &ev); err != nil {
		return dst, err
	}
	return ev.AppendJSON(dst)
}

// The keys of the runtime's marks as the stored form writes them: bytes
// with neither have nothing to take out for the wire.
var (
	storedLLMCallKey = []byte(`"` + MetadataLLMCall + `":`)
	storedStartedKey = []byte(`"` + MetadataStartedCalls + `":`)
	storedMACKey     = []byte(`"` + MetadataCallMAC + `":`)
)

// encodeBuffers are the scratch buffers of MarshalJSON's fast path.
var encodeBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledBuffer bounds the buffers kept for reuse.
const maxPooledBuffer = 64 << 10

// marshalWire encodes the event with encoding/json, in the stored form if
// stored: the general path, which the fast path's output must always equal.
func (e *Event) marshalWire(stored bool) ([]byte, error) {
	w := wireEvent{
		Response:           e.Response,
		InvocationID:       e.InvocationID,
		Author:             e.Author,
		Actions:            e.Actions.wire(),
		LongRunningToolIDs: e.LongRunningToolIDs,
		Branch:             e.Branch,
		ID:                 e.ID,
		Timestamp:          Seconds(e.Timestamp),
		Output:             e.Output,
		NodeInfo:           e.NodeInfo,
		IsolationScope:     e.IsolationScope,
	}
	w.CustomMetadata = e.metadata(stored)
	b, err := json.Marshal(&w)
	if err != nil {
		return nil, err
	}
	return appendUnknown(b, e.Unknown, eventKeys)
}

// MarshalJSON encodes the actions in ADK's wire format: the four maps are
// always present, other empty fields are omitted.
func (a Actions) MarshalJSON() ([]byte, error) {
	w := a.wire()
	return json.Marshal(&w)
}

func (a *Actions) wire() wireActions {
	w := wireActions{
		SkipSummarization:          a.SkipSummarization,
		StateDelta:                 a.StateDelta,
		ArtifactDelta:              a.ArtifactDelta,
		TransferToAgent:            a.TransferToAgent,
		Escalate:                   a.Escalate,
		RequestedAuthConfigs:       a.RequestedAuthConfigs,
		RequestedToolConfirmations: a.RequestedToolConfirmations,
		EndOfAgent:                 a.EndOfAgent,
		AgentState:                 a.AgentState,
		RewindBeforeInvocationID:   a.RewindBeforeInvocationID,
		Route:                      a.Route,
		RenderUIWidgets:            a.RenderUIWidgets,
		SetModelResponse:           a.SetModelResponse,
		unknown:                    a.Unknown,
	}
	if w.StateDelta == nil {
		w.StateDelta = map[string]any{}
	}
	if w.ArtifactDelta == nil {
		w.ArtifactDelta = map[string]int64{}
	}
	if w.RequestedAuthConfigs == nil {
		w.RequestedAuthConfigs = map[string]any{}
	}
	if w.RequestedToolConfirmations == nil {
		w.RequestedToolConfirmations = map[string]ToolConfirmation{}
	}
	if c := a.Compaction; c != nil {
		w.Compaction = &wireCompaction{StartTimestamp: Seconds(c.Start), EndTimestamp: Seconds(c.End), CompactedContent: c.Content}
	}
	return w
}

func (w *wireActions) actions() Actions {
	a := Actions{
		SkipSummarization:        w.SkipSummarization,
		StateDelta:               nilIfEmpty(w.StateDelta),
		TransferToAgent:          w.TransferToAgent,
		Escalate:                 w.Escalate,
		RequestedAuthConfigs:     nilIfEmpty(w.RequestedAuthConfigs),
		EndOfAgent:               w.EndOfAgent,
		AgentState:               w.AgentState,
		RewindBeforeInvocationID: w.RewindBeforeInvocationID,
		Route:                    w.Route,
		RenderUIWidgets:          w.RenderUIWidgets,
		SetModelResponse:         w.SetModelResponse,
		Unknown:                  w.unknown,
	}
	if len(w.ArtifactDelta) > 0 {
		a.ArtifactDelta = w.ArtifactDelta
	}
	if len(w.RequestedToolConfirmations) > 0 {
		a.RequestedToolConfirmations = w.RequestedToolConfirmations
	}
	if c := w.Compaction; c != nil {
		a.Compaction = &Compaction{Start: time.Time(c.StartTimestamp), End: time.Time(c.EndTimestamp), Content: c.CompactedContent}
	}
	return a
}

func nilIfEmpty(m map[string]any) map[string]any {
	if len(m) == 0 {
		return nil
	}
	return m
}

// UnmarshalJSON decodes an event from ADK's wire format. It accepts camelCase
// and snake_case keys and standard and URL-safe base64 for bytes. A key of
// the event or of its actions that Loom does not model is kept, with its
// JSON, in Event.Unknown or Actions.Unknown and encoded back. Keys inside user data (state deltas, agent state,
// custom metadata, function arguments and responses) are never renamed.
//
// Canonical input, as produced by [Event.MarshalJSON], takes a strict fast
// path; anything else is normalized first.
func (e *Event) UnmarshalJSON(data []byte) error {
	var (
		w       wireEvent
		unknown map[string]json.RawMessage
		actions []byte
	)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		norm, nerr := Normalize(data)
		if nerr != nil {
			return fmt.Errorf("event: decode: %w", nerr)
		}
		w = wireEvent{}
		if err := json.Unmarshal(norm, &w); err != nil {
			return fmt.Errorf("event: decode: %w", err)
		}
		unknown, actions = collectUnknown(data, eventKeys), rawActions(data)
	}
	if actions != nil {
		w.Actions.unknown = collectUnknown(actions, actionKeys)
	}
	*e = Event{
		Response:           w.Response,
		ID:                 w.ID,
		InvocationID:       w.InvocationID,
		Author:             w.Author,
		Branch:             w.Branch,
		Timestamp:          time.Time(w.Timestamp),
		Actions:            w.Actions.actions(),
		LongRunningToolIDs: w.LongRunningToolIDs,
		Output:             w.Output,
		NodeInfo:           w.NodeInfo,
		IsolationScope:     w.IsolationScope,
		Unknown:            unknown,
	}
	e.liftLLMCall()
	return nil
}

// rawActions returns the JSON of the actions of the event data, under
// either spelling of the key, or nil.
func rawActions(data []byte) []byte {
	var top struct {
		Actions json.RawMessage `json:"actions"`
	}
	// encoding/json matches keys case-insensitively, not across the
	// underscore; snake_case input has no other spelling for "actions".
	if json.Unmarshal(data, &top) != nil || len(top.Actions) == 0 || top.Actions[0] != '{' {
		return nil
	}
	return top.Actions
}

// UnmarshalContent decodes a genai content (such as a user message in a run
// request), accepting the same variations as [Event.UnmarshalJSON]:
// camelCase or snake_case keys and either base64 alphabet. Canonical input
// takes a strict fast path: the parser of a Decoder, then encoding/json
// with no unknown field.
func UnmarshalContent(data []byte) (*genai.Content, error) {
	if c, ok := fastContent(data); ok {
		return c, nil
	}
	return unmarshalContent(data)
}

// unmarshalContent is UnmarshalContent without the parser's fast path.
func unmarshalContent(data []byte) (*genai.Content, error) {
	var c genai.Content
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err == nil {
		return &c, nil
	}
	norm, err := normalizeWith(data, genericScope)
	if err != nil {
		return nil, fmt.Errorf("event: decode content: %w", err)
	}
	c = genai.Content{}
	if err := json.Unmarshal(norm, &c); err != nil {
		return nil, fmt.Errorf("event: decode content: %w", err)
	}
	return &c, nil
}

// fastContent decodes data with the parser of a Decoder, and reports
// whether it could.
func fastContent(data []byte) (*genai.Content, bool) {
	var d Decoder
	p := parser{d: &d, data: data}
	p.ws()
	c, ok := p.content()
	if p.ws(); !ok || p.i != len(data) {
		return nil, false
	}
	return c, true
}

// UnmarshalJSON decodes actions, accepting the same variations as
// [Event.UnmarshalJSON].
func (a *Actions) UnmarshalJSON(data []byte) error {
	norm, err := normalizeWith(data, actionsScope)
	if err != nil {
		return fmt.Errorf("event: decode actions: %w", err)
	}
	var w wireActions
	if err := json.Unmarshal(norm, &w); err != nil {
		return fmt.Errorf("event: decode actions: %w", err)
	}
	w.unknown = collectUnknown(data, actionKeys)
	*a = w.actions()
	return nil
}

// Normalize rewrites a JSON event, or any JSON value holding genai contents,
// into canonical form: snake_case keys become camelCase and URL-safe base64
// in byte fields becomes standard base64. Keys inside user data are kept.
func Normalize(data []byte) ([]byte, error) {
	return normalizeWith(data, eventScope)
}

func normalizeWith(data []byte, top scope) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(normalizeValue(v, top))
}

// scope tells how the keys of an object are treated while normalizing.
type scope int

const (
	genericScope  scope = iota // rename keys, recurse generically
	eventScope                 // the top level of an event
	actionsScope               // an actions object
	userDataScope              // user data: keep everything
	idMapScope                 // keys are ids, values are generic
	inlineScope                // a genai Blob: base64 "data"
)

// userDataKeys are the object keys whose values are user data, whatever
// object they appear in.
var userDataKeys = map[string]bool{
	"stateDelta": true, "agentState": true, "customMetadata": true,
	"args": true, "response": true, "partMetadata": true, "payload": true,
	"artifactDelta": true, "requestedAuthConfigs": true, "output": true,
	"setModelResponse": true, "route": true,
}

func normalizeValue(v any, s scope) any {
	switch x := v.(type) {
	case map[string]any:
		if s == userDataScope {
			return x
		}
		out := make(map[string]any, len(x))
		for k, val := range x {
			key := k
			if s != idMapScope {
				key = CamelCase(k)
			}
			out[key] = normalizeValue(val, childScope(s, key))
			if s == inlineScope && key == "data" {
				out[key] = stdBase64(val)
			}
			if key == "thoughtSignature" {
				out[key] = stdBase64(val)
			}
		}
		return out
	case []any:
		if s == userDataScope {
			return x
		}
		for i := range x {
			x[i] = normalizeValue(x[i], s)
		}
		return x
	}
	return v
}

func childScope(parent scope, key string) scope {
	switch {
	case parent == eventScope && key == "actions":
		return actionsScope
	case key == "requestedToolConfirmations":
		return idMapScope
	case userDataKeys[key]:
		return userDataScope
	case key == "inlineData":
		return inlineScope
	}
	return genericScope
}

// CamelCase converts a snake_case key to camelCase, as ADK clients that
// write snake_case JSON need; other keys are returned unchanged.
func CamelCase(k string) string {
	if !strings.Contains(k, "_") || strings.HasPrefix(k, "_") {
		return k
	}
	var b strings.Builder
	b.Grow(len(k))
	up := false
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c == '_' {
			up = true
			continue
		}
		if up && c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		up = false
		b.WriteByte(c)
	}
	return b.String()
}

// stdBase64 turns URL-safe (padded or not) base64 into standard padded base64.
func stdBase64(v any) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	if _, err := base64.StdEncoding.DecodeString(s); err == nil {
		return s
	}
	s = strings.TrimRight(s, "=")
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		raw, err = base64.RawStdEncoding.DecodeString(s)
		if err != nil {
			return v // let the decoder report it
		}
	}
	return base64.StdEncoding.EncodeToString(raw)
}
