package functiontool

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// flatSchema is the shape most argument schemas have: an object whose
// properties each have one scalar type, some of them required, and no other
// keyword that constrains values. For such a schema it can tell, without the
// allocations of the general validator, that arguments are valid; it never
// says that they are invalid (the general validator decides, and explains).
type flatSchema struct {
	types    map[string]string // property name -> "integer", "number", "string" or "boolean"
	names    []string          // the property names, sorted
	required []string
}

// newFlatSchema returns the flat form of s, or nil if s has another shape
// or any other keyword than the ones flatSchema checks (or that only
// annotate).
func newFlatSchema(s *jsonschema.Schema) *flatSchema {
	if s == nil {
		return nil
	}
	// The keywords are read from the schema's JSON form, so that any keyword
	// this check does not know (including ones added to the schema type
	// later) rules the fast path out.
	b, err := json.Marshal(s)
	if err != nil {
		return nil
	}
	var root map[string]json.RawMessage
	if json.Unmarshal(b, &root) != nil {
		return nil
	}
	for k, v := range root {
		switch k {
		case "type":
			if string(v) != `"object"` {
				return nil
			}
		case "additionalProperties":
			if string(v) != "false" {
				return nil
			}
		case "properties", "required", "title", "description":
		default:
			return nil
		}
	}
	f := &flatSchema{types: make(map[string]string, len(s.Properties)), required: s.Required}
	for name, p := range s.Properties {
		if p == nil {
			return nil
		}
		pb, err := json.Marshal(p)
		if err != nil {
			return nil
		}
		var prop map[string]json.RawMessage
		if json.Unmarshal(pb, &prop) != nil {
			return nil
		}
		for k := range prop {
			if k != "type" && k != "title" && k != "description" {
				return nil
			}
		}
		switch p.Type {
		case "integer", "number", "string", "boolean":
			if p.Types != nil {
				return nil
			}
			f.types[name] = p.Type
		default:
			return nil
		}
	}
	f.names = sortedKeys(f.types)
	return f
}

// valid reports whether args certainly satisfy the schema: every argument
// is a declared property holding a value of its type, and every required
// property is present. False means "not known": args may still be valid.
func (f *flatSchema) valid(args map[string]any) bool {
	if f == nil {
		return false
	}
	for name, v := range args {
		typ, ok := f.types[name]
		if !ok || !hasType(v, typ) {
			return false
		}
	}
	for _, name := range f.required {
		if _, ok := args[name]; !ok {
			return false
		}
	}
	return true
}

// hasType reports whether v is a JSON value of the schema type typ, with
// the validator's rules: a number with no fractional part is an integer,
// and an integer is a number.
func hasType(v any, typ string) bool {
	switch x := v.(type) {
	case float64:
		switch typ {
		case "number":
			return !math.IsNaN(x) && !math.IsInf(x, 0)
		case "integer":
			_, frac := math.Modf(x)
			return frac == 0
		}
	case int, int64:
		return typ == "integer" || typ == "number"
	case string:
		return typ == "string"
	case bool:
		return typ == "boolean"
	}
	return false
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// jsonBuffers holds the buffers appendJSON writes into.
var jsonBuffers = sync.Pool{New: func() any { return new([]byte) }}

// putJSONBuffer returns a buffer to jsonBuffers unless it grew large.
func putJSONBuffer(b *[]byte) {
	if cap(*b) <= 64<<10 {
		jsonBuffers.Put(b)
	}
}

// argDecoder decodes the JSON of arguments. Unlike json.Unmarshal, which
// makes its scratch state anew for every call, a json.Decoder keeps it;
// argDecoders hold the decoders that ended without error.
type argDecoder struct {
	r   bytes.Reader
	dec *json.Decoder
}

var argDecoders = sync.Pool{New: func() any {
	d := &argDecoder{}
	d.dec = json.NewDecoder(&d.r)
	return d
}}

// unmarshalArgs decodes data, one JSON value, into v as json.Unmarshal
// does.
func unmarshalArgs(data []byte, v any) error {
	d := argDecoders.Get().(*argDecoder)
	d.r.Reset(data)
	start := d.dec.InputOffset()
	if err := d.dec.Decode(v); err == nil && d.dec.InputOffset()-start == int64(len(data)) {
		if len(data) <= 64<<10 {
			argDecoders.Put(d)
		}
		return nil
	}
	// An error, or bytes after the value: json.Unmarshal has the last word,
	// and the decoder, left inside the stream, is dropped.
	return json.Unmarshal(data, v)
}

// appendJSON appends to b the bytes json.Marshal makes of args, which valid
// accepted (object keys sorted, numbers and strings written as
// encoding/json writes them). It reports false, and the caller marshals
// args itself, for a string that would need escaping.
func (f *flatSchema) appendJSON(b []byte, args map[string]any) ([]byte, bool) {
	b = append(b, '{')
	first := true
	for _, name := range f.names {
		v, ok := args[name]
		if !ok {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		if b, ok = appendPlainString(b, name); !ok {
			return b, false
		}
		b = append(b, ':')
		switch x := v.(type) {
		case float64:
			b = appendFloat(b, x)
		case int:
			b = strconv.AppendInt(b, int64(x), 10)
		case int64:
			b = strconv.AppendInt(b, x, 10)
		case bool:
			b = strconv.AppendBool(b, x)
		case string:
			if b, ok = appendPlainString(b, x); !ok {
				return b, false
			}
		default:
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendPlainString appends s quoted if no byte of it needs escaping in
// JSON as encoding/json writes it (controls, quote, backslash, HTML
// characters, non-ASCII), and reports whether it did.
func appendPlainString(b []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return b, false
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), true
}

// appendFloat appends a finite f as encoding/json writes a float64: the
// shortest representation, in exponent form below 1e-6 and from 1e21 on,
// with a one-digit negative exponent not padded.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
