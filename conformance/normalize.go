package conformance

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// verbatim are the keys whose values hold data (names chosen by users,
// models or tools), whose keys Normalize keeps as written.
var verbatim = map[string]bool{
	"args": true, "response": true, "state": true, "state_delta": true,
	"artifact_delta": true, "custom_metadata": true, "headers": true,
	"default": true, "example": true, "labels": true,
	"parameters_json_schema": true, "response_json_schema": true,
	"requested_auth_configs": true, "requested_tool_confirmations": true,
}

// base64Keys hold bytes, written in standard or URL-safe base64, padded or
// not, by different writers.
var base64Keys = map[string]bool{"thought_signature": true, "data": true}

// Normalize returns a JSON-like tree (from encoding/json or a YAML file) in
// the one form the comparisons use: keys in snake_case, except inside data
// (function arguments and responses, state, schema property names); bytes
// in padded standard base64; numbers as float64; null values and empty
// maps and lists left out; a system instruction that is a content of one
// text part written as that text, as ADK writes it.
func Normalize(v any) any {
	return normalize(v, false)
}

func normalize(v any, keep bool) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			key := k
			if !keep {
				key = snake(k)
			}
			var n any
			switch {
			case keep:
				n = normalizeData(e)
			case verbatim[key]:
				n = normalizeData(e)
			case key == "properties":
				n = normalizeProperties(e)
			case base64Keys[key]:
				n = canonicalBase64(e)
			default:
				n = normalize(e, false)
			}
			if key == "system_instruction" {
				n = instructionText(n)
			}
			if empty(n) {
				continue
			}
			out[key] = n
		}
		return out
	case []any:
		out := make([]any, 0, len(x))
		for _, e := range x {
			out = append(out, normalize(e, keep))
		}
		return out
	}
	return scalar(v)
}

// normalizeData keeps data as written, nulls included; only its numbers
// are made comparable.
func normalizeData(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalizeData(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizeData(e)
		}
		return out
	}
	return scalar(v)
}

func normalizeProperties(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return normalize(v, false)
	}
	out := make(map[string]any, len(m))
	for k, e := range m {
		out[k] = normalize(e, false)
	}
	return out
}

// scalar makes numbers float64, so that 800 and 800.0 are equal.
func scalar(v any) any {
	switch x := v.(type) {
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f
		}
		return x.String()
	case int:
		return float64(x)
	case int64:
		return float64(x)
	case uint64:
		return float64(x)
	case float32:
		return float64(x)
	}
	return v
}

func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

func canonicalBase64(v any) any {
	s, ok := v.(string)
	if !ok {
		return scalar(v)
	}
	t := strings.TrimRight(s, "=")
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(t); err == nil {
			return base64.StdEncoding.EncodeToString(b)
		}
	}
	return s
}

// instructionText writes a system instruction of one text part as text.
func instructionText(v any) any {
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	parts, _ := m["parts"].([]any)
	if len(parts) != 1 {
		return v
	}
	p, _ := parts[0].(map[string]any)
	if t, ok := p["text"].(string); ok && len(p) == 1 {
		return t
	}
	return v
}

// snake converts a camelCase key to snake_case; snake_case keys stay.
func snake(s string) string {
	if !strings.ContainsFunc(s, unicode.IsUpper) {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Difference is one field that differs between a recorded tree and a
// live one.
type Difference struct {
	// Path locates the field: "events[3].content.parts[0].text".
	Path string
	// Want is the recorded value, Got the live one; nil when absent.
	Want, Got any
}

// String formats the difference on one line.
func (d Difference) String() string {
	if w, ok := d.Want.(string); ok {
		if g, ok := d.Got.(string); ok && len(w)+len(g) > 160 {
			i := 0
			for i < len(w) && i < len(g) && w[i] == g[i] {
				i++
			}
			return fmt.Sprintf("%s: strings differ at byte %d: want %s, got %s", d.Path, i, show(excerpt(w, i)), show(excerpt(g, i)))
		}
	}
	return fmt.Sprintf("%s: want %s, got %s", d.Path, show(d.Want), show(d.Got))
}

// excerpt is s around byte i, marked as cut where it is.
func excerpt(s string, i int) string {
	from, to := max(0, i-40), min(len(s), i+80)
	out := s[from:to]
	if from > 0 {
		out = "…" + out
	}
	if to < len(s) {
		out += "…"
	}
	return out
}

func show(v any) string {
	if v == nil {
		return "(absent)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	const max = 300
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// Diff lists the fields where got differs from want, two normalized trees,
// in path order.
func Diff(path string, want, got any) []Difference {
	var out []Difference
	diff(path, want, got, &out)
	return out
}

func diff(path string, want, got any, out *[]Difference) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(w)+len(g))
		for k := range w {
			keys = append(keys, k)
		}
		for k := range g {
			if _, dup := w[k]; !dup {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			diff(join(path, k), w[k], g[k], out)
		}
		return
	case []any:
		g, ok := got.([]any)
		if !ok {
			break
		}
		for i := range max(len(w), len(g)) {
			var wi, gi any
			if i < len(w) {
				wi = w[i]
			}
			if i < len(g) {
				gi = g[i]
			}
			diff(path+"["+strconv.Itoa(i)+"]", wi, gi, out)
		}
		return
	case float64:
		if g, ok := got.(float64); ok && (w == g || math.Abs(w-g) <= 1e-6*math.Max(math.Abs(w), math.Abs(g))) {
			return
		}
	default:
		if reflect.DeepEqual(want, got) {
			return
		}
	}
	*out = append(*out, Difference{Path: path, Want: want, Got: got})
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
