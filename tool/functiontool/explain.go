package functiontool

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/loomkit/loom/event"
)

// explain finds the first problem of value v against schema s in terms a
// model can act on: the path of the field and what is wrong with it. The
// validator decides whether the arguments are valid; explain only words the
// failure, and covers the common keywords (type, enum, required, properties,
// additionalProperties, items). ok is false if it finds nothing to say.
func explain(s *jsonschema.Schema, v any, path string) (field, reason string, ok bool) {
	if s == nil {
		return "", "", false
	}
	if want := schemaTypes(s); len(want) > 0 {
		got := jsonType(v)
		if !typeAllowed(want, got) {
			return path, fmt.Sprintf("must be of type %s, got %s", strings.Join(want, " or "), describe(v, got)), true
		}
	}
	if len(s.Enum) > 0 && !inEnum(s.Enum, v) {
		return path, fmt.Sprintf("must be one of %s, got %s", event.CompactJSON(s.Enum), event.CompactJSON(v)), true
	}
	if r := bounds(s, v); r != "" {
		return path, r, true
	}
	switch x := v.(type) {
	case map[string]any:
		for _, name := range s.Required {
			if _, present := x[name]; !present {
				return join(path, name), "is required but missing", true
			}
		}
		for _, name := range propertyNames(s) {
			if val, present := x[name]; present {
				if f, r, ok := explain(s.Properties[name], val, join(path, name)); ok {
					return f, r, true
				}
			}
		}
		extra := make([]string, 0)
		for name := range x {
			if _, known := s.Properties[name]; !known {
				extra = append(extra, name)
			}
		}
		slices.Sort(extra)
		if ap := s.AdditionalProperties; ap != nil && len(extra) > 0 {
			if isFalse(ap) {
				known := propertyNames(s)
				return join(path, extra[0]), fmt.Sprintf("is not a known argument (known: %s)", strings.Join(known, ", ")), true
			}
			for _, name := range extra {
				if f, r, ok := explain(ap, x[name], join(path, name)); ok {
					return f, r, true
				}
			}
		}
	case []any:
		if s.Items != nil {
			for i, e := range x {
				if f, r, ok := explain(s.Items, e, fmt.Sprintf("%s[%d]", path, i)); ok {
					return f, r, true
				}
			}
		}
	}
	return "", "", false
}

// bounds words a violated numeric bound or length limit, or returns "".
func bounds(s *jsonschema.Schema, v any) string {
	num := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	switch x := v.(type) {
	case float64:
		switch {
		case s.Minimum != nil && x < *s.Minimum:
			return fmt.Sprintf("must be at least %s, got %s", num(*s.Minimum), num(x))
		case s.Maximum != nil && x > *s.Maximum:
			return fmt.Sprintf("must be at most %s, got %s", num(*s.Maximum), num(x))
		case s.ExclusiveMinimum != nil && x <= *s.ExclusiveMinimum:
			return fmt.Sprintf("must be greater than %s, got %s", num(*s.ExclusiveMinimum), num(x))
		case s.ExclusiveMaximum != nil && x >= *s.ExclusiveMaximum:
			return fmt.Sprintf("must be less than %s, got %s", num(*s.ExclusiveMaximum), num(x))
		}
	case string:
		n := utf8.RuneCountInString(x)
		switch {
		case s.MinLength != nil && n < *s.MinLength:
			return fmt.Sprintf("must be at least %d characters long, got %d", *s.MinLength, n)
		case s.MaxLength != nil && n > *s.MaxLength:
			return fmt.Sprintf("must be at most %d characters long, got %d", *s.MaxLength, n)
		}
	case []any:
		switch {
		case s.MinItems != nil && len(x) < *s.MinItems:
			return fmt.Sprintf("must have at least %d items, got %d", *s.MinItems, len(x))
		case s.MaxItems != nil && len(x) > *s.MaxItems:
			return fmt.Sprintf("must have at most %d items, got %d", *s.MaxItems, len(x))
		}
	}
	return ""
}

func schemaTypes(s *jsonschema.Schema) []string {
	if s.Type != "" {
		return []string{s.Type}
	}
	return s.Types
}

func typeAllowed(want []string, got string) bool {
	return slices.Contains(want, got) || got == "integer" && slices.Contains(want, "number")
}

// jsonType names the JSON type of a decoded JSON value (or of the Go values
// a caller may pass in its place); integral numbers are "integer".
func jsonType(v any) string {
	if v == nil {
		return "null"
	}
	rv := reflect.ValueOf(v)
	switch {
	case rv.CanInt(), rv.CanUint():
		return "integer"
	case rv.CanFloat():
		if _, frac := math.Modf(rv.Float()); frac == 0 {
			return "integer"
		}
		return "number"
	}
	switch rv.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.String:
		return "string"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	}
	return rv.Kind().String()
}

// describe shows a short value with its type, a long one by type only.
func describe(v any, typ string) string {
	switch typ {
	case "object", "array", "null":
		return typ
	}
	s := event.CompactJSON(v)
	if len(s) > 40 {
		return typ
	}
	return typ + " " + s
}

func inEnum(enum []any, v any) bool {
	js := event.CompactJSON(v)
	for _, e := range enum {
		if event.CompactJSON(e) == js {
			return true
		}
	}
	return false
}

// propertyNames lists a schema's properties in declaration order when known,
// else sorted.
func propertyNames(s *jsonschema.Schema) []string {
	if len(s.PropertyOrder) == len(s.Properties) {
		return s.PropertyOrder
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// isFalse reports whether s is the schema that matches nothing ({"not": {}},
// which is how "false" decodes).
func isFalse(s *jsonschema.Schema) bool {
	return s.Not != nil && reflect.ValueOf(*s.Not).IsZero()
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
