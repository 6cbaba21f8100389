package session

import (
	"encoding"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
)

// Limits on what the service stores. Every value is checked against them
// once, in the service, before anything is written or copied, so that every
// backend stores exactly what it can read back and an invalid value fails
// with ErrInvalid on all of them alike.
const (
	// MaxIDLen is the maximum length in bytes of an app name, a user id,
	// a session id, an event id and a state key.
	MaxIDLen = 256
	// MaxValueDepth is the deepest nesting of maps and slices in a state
	// value (a scalar has depth 1) and, counted from the event itself, in an
	// event's other free-form fields.
	MaxValueDepth = 100
	// MaxSafeInteger is the largest magnitude of an integer a state value
	// may hold: stores read numbers back as float64, which holds every
	// integer up to 2^53 exactly and not all of those above.
	MaxSafeInteger = 1 << 53
)

// The earliest and latest timestamps of events: the instants, to the
// microsecond, that stores can keep as nanoseconds since 1970 in an int64
// (from 1677-09-21 to 2262-04-11).
var (
	minEventTime = time.Unix(0, math.MinInt64-math.MinInt64%1000).UTC()
	maxEventTime = time.Unix(0, math.MaxInt64-math.MaxInt64%1000).UTC()
)

// This file holds the validation rules, once for every backend.

// CheckID reports, with an error wrapping ErrInvalid, why id (named what in
// the message) cannot be an app name, user id or session id: blank, longer
// than MaxIDLen, not valid UTF-8, or holding a control character. The
// service checks every id with it; edges such as the HTTP server use it to
// refuse a bad id early.
func CheckID(what, id string) error {
	switch {
	case strings.TrimSpace(id) == "":
		return fmt.Errorf("%w: %s is required", ErrInvalid, what)
	case len(id) > MaxIDLen:
		return fmt.Errorf("%w: %s is longer than %d bytes", ErrInvalid, what, MaxIDLen)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: %s %q is not valid UTF-8", ErrInvalid, what, id)
	case strings.IndexFunc(id, unicode.IsControl) >= 0:
		return fmt.Errorf("%w: %s %q has a control character", ErrInvalid, what, id)
	}
	return nil
}

// checkKey validates the app and user ids of key, and its session id unless
// it may be empty (a session id to generate).
func checkKey(key Key, sessionOptional bool) error {
	if err := CheckID("app name", key.AppName); err != nil {
		return err
	}
	if err := CheckID("user id", key.UserID); err != nil {
		return err
	}
	if sessionOptional && key.SessionID == "" {
		return nil
	}
	return CheckID("session id", key.SessionID)
}

// checkState validates a state delta or initial state: keys of valid UTF-8
// without NUL, at most MaxIDLen bytes; values as checkValue says. It
// returns the state in its JSON form (see event.JSONForm), as every store keeps
// it and the live session holds it: m itself when all its values are made
// of JSON's own Go values, else a copy of m with the others replaced.
func checkState(m map[string]any) (map[string]any, error) {
	out, copied := m, false
	for k, v := range m {
		if len(k) > MaxIDLen {
			return nil, fmt.Errorf("%w: state key %.40q... is longer than %d bytes", ErrInvalid, k, MaxIDLen)
		}
		if err := checkString(k, false); err != nil {
			return nil, fmt.Errorf("%w: state key %q: %w", ErrInvalid, k, err)
		}
		var foreign bool
		if err := (checker{foreign: &foreign}).value(v, 1); err != nil {
			return nil, fmt.Errorf("%w: state key %q: %w", ErrInvalid, k, err)
		}
		if !foreign {
			continue
		}
		j, err := event.JSONForm(v)
		if err != nil {
			return nil, fmt.Errorf("%w: state key %q: %w", ErrInvalid, k, err)
		}
		if !copied {
			out, copied = maps.Clone(m), true
		}
		out[k] = j
	}
	return out, nil
}

// CheckValue reports whether v is a value state can hold, with an error
// wrapping ErrInvalid if not. A state value is JSON: nil, a bool, a string of
// valid UTF-8 without NUL, a finite number (integers within
// ±MaxSafeInteger), or a map with string keys or a slice of such values,
// nested at most MaxValueDepth deep; other Go values are accepted when they
// encode to such JSON (structs, typed maps and slices, json.Marshaler).
// Channels, functions, complex numbers, NaN and infinities are not.
//
// The service stores every state value in its JSON form, the value
// encoding/json decodes its encoding into, and the live session holds the
// same: an int or json.Number becomes a float64, a struct or typed map a
// map[string]any, a typed slice a []any, and a value encoding to null (a
// nil pointer, map or slice) is nil, which deletes its key.
func CheckValue(v any) error {
	if err := (checker{}).value(v, 1); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// checkEvent validates what of an event is stored besides its state delta
// (which checkState checks): ids and strings, its timestamp, free-form maps
// and metadata, so that the event encodes and decodes back to itself. It
// reports whether a free-form value of the event (one typed any, or held in
// a map[string]any) is not made of JSON's own Go values: eventJSONForm then
// puts the event in its JSON form.
func checkEvent(ev *event.Event) (foreign bool, err error) {
	if ev.ID != "" {
		if err := CheckID("event id", ev.ID); err != nil {
			return false, err
		}
	}
	if err := checkEventTime(ev.Timestamp); err != nil {
		return false, fmt.Errorf("%w: event %s: %w", ErrInvalid, ev.ID, err)
	}
	for _, f := range [...]struct{ name, s string }{{"author", ev.Author}, {"invocation id", ev.InvocationID}, {"branch", ev.Branch}} {
		if err := checkString(f.s, false); err != nil {
			return false, fmt.Errorf("%w: event %s: %w", ErrInvalid, f.name, err)
		}
	}
	if err := checkUnknown("event", ev.Unknown); err != nil {
		return false, fmt.Errorf("%w: event %s: %w", ErrInvalid, ev.ID, err)
	}
	if err := checkUnknown("actions", ev.Actions.Unknown); err != nil {
		return false, fmt.Errorf("%w: event %s: %w", ErrInvalid, ev.ID, err)
	}
	if fastEvent(ev, &foreign) {
		return foreign, nil
	}
	foreign = false
	c := checker{nul: true, typed: true, skipStateDelta: true, foreign: &foreign}
	if err := c.reflect(reflect.ValueOf(ev).Elem(), 1); err != nil {
		return false, fmt.Errorf("%w: event %s: %w", ErrInvalid, ev.ID, err)
	}
	return foreign, nil
}

// eventJSONForm puts the free-form values of ev, a valid event, in their
// JSON form (see event.JSONForm), as state values are: the arguments and
// responses of its function calls, part and custom metadata, its agent
// state, auth configs and confirmation payloads, and its output. Every
// wire and store then carries the same values, whatever Go types the
// author used (a struct becomes a map[string]any, an int a float64), and
// the committed event shares none of those. What it changes it replaces
// in ev by a copy (the content, a part, a function call, a map), never
// writing to memory ev shares with its author.
func eventJSONForm(ev *event.Event) error {
	var err error
	if ev.Content, err = contentJSONForm(ev.Content); err != nil {
		return err
	}
	if ev.CustomMetadata, _, err = mapJSONForm(ev.CustomMetadata, "custom metadata", ""); err != nil {
		return err
	}
	a := &ev.Actions
	if a.AgentState, _, err = mapJSONForm(a.AgentState, "agent state", ""); err != nil {
		return err
	}
	if a.RequestedAuthConfigs, _, err = mapJSONForm(a.RequestedAuthConfigs, "requested auth configs", ""); err != nil {
		return err
	}
	copied := false
	for id, tc := range a.RequestedToolConfirmations {
		if isJSON(tc.Payload) {
			continue
		}
		if tc.Payload, err = event.JSONForm(tc.Payload); err != nil {
			return fmt.Errorf("confirmation payload of call %s: %w", id, err)
		}
		if !copied {
			a.RequestedToolConfirmations, copied = maps.Clone(a.RequestedToolConfirmations), true
		}
		a.RequestedToolConfirmations[id] = tc
	}
	if cp := a.Compaction; cp != nil {
		c, err := contentJSONForm(cp.Content)
		if err != nil {
			return fmt.Errorf("compaction: %w", err)
		}
		if c != cp.Content {
			cc := *cp
			cc.Content = c
			a.Compaction = &cc
		}
	}
	if !isJSON(ev.Output) {
		if ev.Output, err = event.JSONForm(ev.Output); err != nil {
			return fmt.Errorf("output: %w", err)
		}
	}
	if !isJSON(a.Route) {
		if a.Route, err = event.JSONForm(a.Route); err != nil {
			return fmt.Errorf("route: %w", err)
		}
	}
	if !isJSON(a.SetModelResponse) {
		if a.SetModelResponse, err = event.JSONForm(a.SetModelResponse); err != nil {
			return fmt.Errorf("model response: %w", err)
		}
	}
	if a.RenderUIWidgets != nil && !isJSON(a.RenderUIWidgets) {
		w, err := event.JSONForm(a.RenderUIWidgets)
		if err != nil {
			return fmt.Errorf("UI widgets: %w", err)
		}
		a.RenderUIWidgets, _ = w.([]any)
	}
	return nil
}

// checkUnknown checks the fields of an event Loom does not model: each is
// one JSON value under a UTF-8 key.
func checkUnknown(what string, m map[string]json.RawMessage) error {
	for k, v := range m {
		if !utf8.ValidString(k) || !json.Valid(v) {
			return fmt.Errorf("%s field %q: not a JSON value", what, k)
		}
	}
	return nil
}

// contentJSONForm returns c with the free-form maps of its parts in their
// JSON form: c itself when they already are, else a copy of c sharing the
// parts that do not change.
func contentJSONForm(c *genai.Content) (*genai.Content, error) {
	if c == nil {
		return nil, nil
	}
	var out *genai.Content
	for i, p := range c.Parts {
		if p == nil {
			continue
		}
		np, err := partJSONForm(p)
		if err != nil {
			return nil, err
		}
		if np == p {
			continue
		}
		if out == nil {
			out = &genai.Content{Role: c.Role, Parts: slices.Clone(c.Parts)}
		}
		out.Parts[i] = np
	}
	if out == nil {
		return c, nil
	}
	return out, nil
}

// partJSONForm is contentJSONForm for one part: p itself, or a copy.
func partJSONForm(p *genai.Part) (*genai.Part, error) {
	meta, metaChanged, err := mapJSONForm(p.PartMetadata, "part metadata", "")
	if err != nil {
		return nil, err
	}
	var fc *genai.FunctionCall
	if p.FunctionCall != nil {
		args, changed, err := mapJSONForm(p.FunctionCall.Args, "arguments of call", p.FunctionCall.Name)
		if err != nil {
			return nil, err
		}
		if changed {
			c := *p.FunctionCall
			c.Args = args
			fc = &c
		}
	}
	var fr *genai.FunctionResponse
	if p.FunctionResponse != nil {
		resp, changed, err := mapJSONForm(p.FunctionResponse.Response, "response of call", p.FunctionResponse.Name)
		if err != nil {
			return nil, err
		}
		if changed {
			c := *p.FunctionResponse
			c.Response = resp
			fr = &c
		}
	}
	if !metaChanged && fc == nil && fr == nil {
		return p, nil
	}
	np := *p
	if metaChanged {
		np.PartMetadata = meta
	}
	if fc != nil {
		np.FunctionCall = fc
	}
	if fr != nil {
		np.FunctionResponse = fr
	}
	return &np, nil
}

// mapJSONForm returns m with its values in their JSON form: m itself when
// they already are, else a copy of m with the others replaced (changed is
// then true). what, followed by call when it is not empty, names m in an
// error (joined only then: m is converted for every stored event).
func mapJSONForm(m map[string]any, what, call string) (out map[string]any, changed bool, err error) {
	out = m
	for k, v := range m {
		if isJSON(v) {
			continue
		}
		j, err := event.JSONForm(v)
		if err != nil {
			if call != "" {
				what += " " + call
			}
			return nil, false, fmt.Errorf("%s, key %q: %w", what, k, err)
		}
		if !changed {
			out, changed = maps.Clone(m), true
		}
		out[k] = j
	}
	return out, changed, nil
}

// isJSON reports whether v is made of JSON's own Go values only: nil,
// bool, float64, string, and non-nil map[string]any and []any of them. v
// is a valid value (no deeper than MaxValueDepth, so without cycles).
func isJSON(v any) bool {
	switch x := v.(type) {
	case nil, bool, float64, string:
		return true
	case map[string]any:
		if x == nil {
			return false
		}
		for _, e := range x {
			if !isJSON(e) {
				return false
			}
		}
		return true
	case []any:
		if x == nil {
			return false
		}
		for _, e := range x {
			if !isJSON(e) {
				return false
			}
		}
		return true
	}
	return false
}

// checkEventTime rejects a timestamp that, kept to the microsecond as the
// service keeps it, is outside [minEventTime, maxEventTime]. The zero time
// (a timestamp to fill in) is fine.
func checkEventTime(ts time.Time) error {
	if ts.IsZero() {
		return nil
	}
	if us := ts.Truncate(time.Microsecond); us.Before(minEventTime) || us.After(maxEventTime) {
		return fmt.Errorf("timestamp %s is outside the range stores keep, %s to %s",
			ts.Format(time.RFC3339Nano), minEventTime.Format(time.RFC3339Nano), maxEventTime.Format(time.RFC3339Nano))
	}
	return nil
}

// fastEvent reports whether ev is valid by the rules of checkEvent's walk,
// checked without reflection for the fields the events of a run use most:
// text, function calls and responses, metadata, actions without requests.
// It reports false for an event with any other field set, or with a value
// the walk would refuse; the walk then decides, and words the error.
// Depths are those the walk reaches: the event is at 1, its fields (and
// those of its embedded response) at 2.
func fastEvent(ev *event.Event, foreign *bool) bool {
	typed := checker{nul: true, typed: true, foreign: foreign}
	r := &ev.Response
	a := &ev.Actions
	if r.GroundingMetadata != nil || r.CitationMetadata != nil || r.UsageMetadata != nil || r.LogprobsResult != nil ||
		r.InputTranscription != nil || r.OutputTranscription != nil || checkFloat(r.AvgLogprobs) != nil ||
		len(a.RequestedAuthConfigs) > 0 || len(a.RequestedToolConfirmations) > 0 || a.Compaction != nil ||
		a.Route != nil || a.SetModelResponse != nil || a.RenderUIWidgets != nil || ev.Unknown != nil || a.Unknown != nil {
		return false
	}
	for _, s := range [...]string{ev.ID, ev.InvocationID, ev.Author, ev.Branch, ev.IsolationScope, r.ModelVersion, string(r.FinishReason),
		r.ErrorCode, r.ErrorMessage, a.TransferToAgent, a.RewindBeforeInvocationID} {
		if !utf8.ValidString(s) {
			return false
		}
	}
	if r.Content != nil && !fastContent(r.Content, foreign) {
		return false
	}
	if typed.anyMap(r.CustomMetadata, 2) != nil || typed.anyMap(a.AgentState, 3) != nil {
		return false
	}
	for k := range a.ArtifactDelta {
		if !utf8.ValidString(k) {
			return false
		}
	}
	for _, id := range ev.LongRunningToolIDs {
		if !utf8.ValidString(id) {
			return false
		}
	}
	if ev.Output != nil && (checker{nul: true, foreign: foreign}).value(ev.Output, 2) != nil {
		return false
	}
	if ni := ev.NodeInfo; ni != nil {
		if !utf8.ValidString(ni.Path) {
			return false
		}
		for _, s := range ni.OutputFor {
			if !utf8.ValidString(s) {
				return false
			}
		}
	}
	return true
}

// fastContent is fastEvent for an event's content, at depth 2: its parts
// are at 4, their fields at 5.
func fastContent(c *genai.Content, foreign *bool) bool {
	typed := checker{nul: true, typed: true, foreign: foreign}
	if !utf8.ValidString(c.Role) {
		return false
	}
	for _, p := range c.Parts {
		if p == nil {
			continue
		}
		if p.MediaResolution != nil || p.CodeExecutionResult != nil || p.ExecutableCode != nil || p.FileData != nil ||
			p.InlineData != nil || p.VideoMetadata != nil || p.ToolCall != nil || p.ToolResponse != nil ||
			p.AudioTranscription != nil || p.SpeechMetadata != nil ||
			!utf8.ValidString(p.Text) || !utf8.ValidString(string(p.MediaProcessing)) || typed.anyMap(p.PartMetadata, 5) != nil {
			return false
		}
		if fc := p.FunctionCall; fc != nil {
			if len(fc.PartialArgs) > 0 || !utf8.ValidString(fc.ID) || !utf8.ValidString(fc.Name) || typed.anyMap(fc.Args, 6) != nil {
				return false
			}
		}
		if fr := p.FunctionResponse; fr != nil {
			if len(fr.Parts) > 0 || !utf8.ValidString(fr.ID) || !utf8.ValidString(fr.Name) ||
				!utf8.ValidString(string(fr.Scheduling)) || typed.anyMap(fr.Response, 6) != nil {
				return false
			}
		}
	}
	return true
}

// field is a struct field that encoding/json encodes.
type field struct {
	index      int
	anonymous  bool
	stateDelta bool // event.Actions.StateDelta
}

// fieldCache caches fieldsOf by type.
var fieldCache sync.Map // reflect.Type -> []field

// fieldsOf returns the fields of struct type t that encode: exported and
// not tagged "-".
func fieldsOf(t reflect.Type) []field {
	if fs, ok := fieldCache.Load(t); ok {
		return fs.([]field)
	}
	var fs []field
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Tag.Get("json") == "-" {
			continue
		}
		fs = append(fs, field{index: i, anonymous: f.Anonymous, stateDelta: t == actionsType && f.Name == "StateDelta"})
	}
	fieldCache.Store(t, fs)
	return fs
}

// checkString rejects invalid UTF-8, and NUL unless nul.
func checkString(s string, nul bool) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%q is not valid UTF-8", s)
	}
	if !nul && strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("%q holds a NUL character", s)
	}
	return nil
}

// checker walks a value. JSON-like values take a fast path; others are
// walked by reflection.
type checker struct {
	// nul allows NUL in strings (event content, stored as JSON text, may
	// hold it; state, stored as JSONB on PostgreSQL, may not).
	nul bool
	// typed is set while the walk is in typed Go fields, which decode back
	// into their own types; an integer reached through an interface reads
	// back as a float64, so it must be a safe integer.
	typed bool
	// skipStateDelta skips an event's state delta, which checkState checks
	// with the stricter rules of state.
	skipStateDelta bool
	// foreign, if not nil, is set when the walk meets a value that is not
	// one of JSON's own Go values (nil, bool, float64, string, and non-nil
	// map[string]any and []any of them): one whose JSON form differs.
	foreign *bool
}

// mark records that the walk met a value that is not JSON's own.
func (c checker) mark() {
	if c.foreign != nil {
		*c.foreign = true
	}
}

func (c checker) value(v any, depth int) error {
	if depth > MaxValueDepth {
		return fmt.Errorf("nested deeper than %d levels", MaxValueDepth)
	}
	switch x := v.(type) {
	case nil, bool:
		return nil
	case string:
		return checkString(x, c.nul)
	case float64:
		return checkFloat(x)
	case map[string]any:
		if x == nil {
			c.mark()
		}
		return c.anyMap(x, depth)
	case []any:
		if x == nil {
			c.mark()
		}
		for _, e := range x {
			if err := c.value(e, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	c.mark()
	switch x := v.(type) {
	case int8, int16, int32, uint8, uint16, uint32:
		return nil
	case float32:
		return checkFloat(float64(x))
	case int:
		return checkInt(int64(x))
	case int64:
		return checkInt(x)
	case uint:
		return checkUint(uint64(x))
	case uint64:
		return checkUint(x)
	case json.Number:
		return checkNumber(x)
	case []string:
		if depth+1 > MaxValueDepth {
			return fmt.Errorf("nested deeper than %d levels", MaxValueDepth)
		}
		for _, s := range x {
			if err := checkString(s, c.nul); err != nil {
				return err
			}
		}
		return nil
	case []byte:
		return nil
	}
	c.typed = false
	return c.reflect(reflect.ValueOf(v), depth)
}

func checkFloat(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("number %v is not finite", f)
	}
	return nil
}

func checkInt(i int64) error {
	if i > MaxSafeInteger || i < -MaxSafeInteger {
		return fmt.Errorf("integer %d is beyond ±2^53", i)
	}
	return nil
}

func checkUint(u uint64) error {
	if u > MaxSafeInteger {
		return fmt.Errorf("integer %d is beyond 2^53", u)
	}
	return nil
}

// checkNumber accepts a json.Number that is a finite float64 and, if an
// integer literal, a safe integer.
func checkNumber(n json.Number) error {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || checkFloat(f) != nil {
		return fmt.Errorf("number %q is not a finite float64", string(n))
	}
	if !strings.ContainsAny(string(n), ".eE") && math.Abs(f) > MaxSafeInteger {
		return fmt.Errorf("integer %s is beyond ±2^53", string(n))
	}
	return nil
}

var (
	jsonMarshaler    = reflect.TypeFor[json.Marshaler]()
	textMarshaler    = reflect.TypeFor[encoding.TextMarshaler]()
	timeType         = reflect.TypeFor[time.Time]()
	mapStringAnyType = reflect.TypeFor[map[string]any]()
	actionsType      = reflect.TypeFor[event.Actions]()
	// ownFields are the types whose encoders write their fields as they
	// are: the walk checks the fields rather than the encoding.
	ownFields = map[reflect.Type]bool{reflect.TypeFor[event.Event](): true, reflect.TypeFor[event.Actions](): true}
)

// How a type encodes itself, if it does.
const (
	noMarshaler = iota + 1
	byValue     // its value implements json.Marshaler or encoding.TextMarshaler
	byPointer   // only a pointer to it does
)

// marshalers caches marshals by type.
var marshalers sync.Map // reflect.Type -> int

// marshals reports whether values of t encode themselves (not counting the
// types of ownFields).
func marshals(t reflect.Type) int {
	if m, ok := marshalers.Load(t); ok {
		return m.(int)
	}
	m := noMarshaler
	switch {
	case ownFields[t] || t.Kind() == reflect.Interface:
	case t.Implements(jsonMarshaler) || t.Implements(textMarshaler):
		m = byValue
	case t.Kind() != reflect.Pointer && (reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler)):
		m = byPointer
	}
	marshalers.Store(t, m)
	return m
}

// reflect walks a value of any type as encoding/json would encode it.
func (c checker) reflect(v reflect.Value, depth int) error {
	if depth > MaxValueDepth+16 || (!c.typed && depth > MaxValueDepth) {
		return fmt.Errorf("nested deeper than %d levels", MaxValueDepth)
	}
	if !v.IsValid() {
		return nil
	}
	t := v.Type()
	if t == timeType {
		return nil // encodes as an RFC 3339 string, or as seconds in an event
	}
	// Only named types have methods: the common unnamed ones go without a
	// lookup.
	if k := t.Kind(); k != reflect.Pointer && k != reflect.Interface && t.PkgPath() != "" {
		if m := marshals(t); m == byValue || (m == byPointer && v.CanAddr()) {
			return c.encoded(v, depth)
		}
	}
	switch t.Kind() {
	case reflect.Bool:
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if c.typed {
			return nil
		}
		return checkInt(v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if c.typed {
			return nil
		}
		return checkUint(v.Uint())
	case reflect.Float32, reflect.Float64:
		return checkFloat(v.Float())
	case reflect.String:
		return checkString(v.String(), c.nul)
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		if t.Elem().PkgPath() != "" && marshals(t.Elem()) != noMarshaler {
			return c.encoded(v, depth)
		}
		return c.reflect(v.Elem(), depth)
	case reflect.Interface:
		if v.IsNil() {
			return nil
		}
		u := c
		u.typed = false
		return u.value(v.Interface(), depth)
	case reflect.Struct:
		return c.reflectStruct(v, depth)
	case reflect.Map:
		if v.IsNil() {
			return nil
		}
		return c.reflectMap(v, depth)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			return nil // base64
		}
		for i := range v.Len() {
			if err := c.reflect(v.Index(i), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("a value of type %s does not encode to JSON", t)
}

// reflectStruct walks the fields of a struct as encoding/json would encode
// them: an embedded struct's at the struct's own depth.
func (c checker) reflectStruct(v reflect.Value, depth int) error {
	for _, f := range fieldsOf(v.Type()) {
		if f.stateDelta && c.skipStateDelta {
			continue
		}
		fv := v.Field(f.index)
		if fv.IsZero() {
			continue // nil, false, 0, "": nothing to check
		}
		d := depth + 1
		if f.anonymous {
			d = depth
		}
		if err := c.reflect(fv, d); err != nil {
			return err
		}
	}
	return nil
}

// reflectMap walks a map that is not nil, whose keys must encode as JSON
// object keys.
func (c checker) reflectMap(v reflect.Value, depth int) error {
	t := v.Type()
	switch t.Key().Kind() {
	case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
	default:
		if !t.Key().Implements(textMarshaler) {
			return fmt.Errorf("map key type %s does not encode to JSON", t.Key())
		}
	}
	if t == mapStringAnyType && v.CanInterface() {
		return c.anyMap(v.Interface().(map[string]any), depth)
	}
	it := v.MapRange()
	for it.Next() {
		if k := it.Key(); k.Kind() == reflect.String {
			if err := checkString(k.String(), c.nul); err != nil {
				return fmt.Errorf("key %w", err)
			}
		}
		if err := c.reflect(it.Value(), depth+1); err != nil {
			return err
		}
	}
	return nil
}

// anyMap checks a map[string]any at depth, its values as interfaces
// (mapValue), as reflect walks any map but without reflection's copy of
// each key and value: the usual map of state values and of typed fields
// (function call arguments and responses, metadata).
func (c checker) anyMap(m map[string]any, depth int) error {
	for k, e := range m {
		if err := checkString(k, c.nul); err != nil {
			return fmt.Errorf("key %w", err)
		}
		if err := c.mapValue(e, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// mapValue checks the value e of a map[string]any entry at depth as
// reflect does a map value: it is an interface.
func (c checker) mapValue(e any, depth int) error {
	if depth > MaxValueDepth+16 || (!c.typed && depth > MaxValueDepth) {
		return fmt.Errorf("nested deeper than %d levels", MaxValueDepth)
	}
	if e == nil {
		return nil
	}
	c.typed = false
	return c.value(e, depth)
}

// encoded checks a value that encodes itself: its encoding must succeed and
// decode to a valid value.
func (c checker) encoded(v reflect.Value, depth int) error {
	b, err := json.Marshal(v.Interface())
	if err != nil {
		return fmt.Errorf("a value of type %s: %w", v.Type(), err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		return fmt.Errorf("a value of type %s: %w", v.Type(), err)
	}
	c.typed = false
	return c.value(x, depth)
}
