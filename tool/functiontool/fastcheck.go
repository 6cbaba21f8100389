package functiontool

import (
	"encoding/json"
	"math"

	"github.com/google/jsonschema-go/jsonschema"
)

// flatSchema is the shape most argument schemas have: an object whose
// properties each have one scalar type, some of them required, and no other
// keyword that constrains values. For such a schema it can tell, without the
// allocations of the general validator, that arguments are valid; it never
// says that they are invalid (the general validator decides, and explains).
type flatSchema struct {
	types    map[string]string // property name -> "integer", "number", "string" or "boolean"
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
