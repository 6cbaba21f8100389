package mcptool

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"strings"

	"google.golang.org/genai"
)

// The parameters of an MCP tool are declared as ADK declares them: the
// server's JSON Schema becomes a genai (OpenAPI subset) schema, so a model
// request lists upper-case types (OBJECT, STRING, NUMBER), required names,
// descriptions and defaults, and none of the keywords the Gemini schema
// has no room for ($schema, additionalProperties, const, allOf, not, ...).
// The steps, in ADK's order:
//
//  1. $ref pointers are replaced by the definitions they name (under $defs
//     or definitions, by the last segment of the pointer); a pointer met
//     again inside its own expansion becomes an object described as a
//     circular reference; the definitions are then dropped.
//  2. Keyword names are put in snake case and only those the schema type
//     knows are kept; format survives only as int32/int64 on numbers and
//     date-time/enum on strings; a boolean schema is an object; an empty
//     schema is an object; a list of types keeps its first non-null type
//     (array first if listed) and whether null was in it; a lone null type
//     is a nullable object except directly under anyOf; an array without
//     items gets string items.
//  3. The types are upper-cased, null among them becomes nullable, and an
//     anyOf of exactly one schema and a null one collapses into that schema,
//     made nullable (the default of the enclosing schema carried over).

// geminiSchema converts an MCP tool's input schema; nil stays nil.
func geminiSchema(input any) *genai.Schema {
	m, ok := jsonObject(input)
	if !ok {
		return nil
	}
	m = dereference(m)
	clean, _ := sanitize(m, false).(map[string]any)
	return convert(clean, true)
}

// jsonObject returns v as a generic JSON object (decoding it through JSON
// when it is not one already).
func jsonObject(v any) (map[string]any, bool) {
	if v == nil {
		return nil, false
	}
	if m, ok := v.(map[string]any); ok {
		return m, true
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

// dereference resolves the $ref pointers of a schema against its own
// definitions and drops the definitions.
func dereference(root map[string]any) map[string]any {
	defs := map[string]any{}
	if d, ok := root["definitions"].(map[string]any); ok {
		maps.Copy(defs, d)
	}
	if d, ok := root["$defs"].(map[string]any); ok {
		maps.Copy(defs, d)
	}
	var resolve func(v any, path map[string]bool) any
	resolve = func(v any, path map[string]bool) any {
		switch v := v.(type) {
		case map[string]any:
			ref, isRef := v["$ref"].(string)
			if !isRef {
				out := make(map[string]any, len(v))
				for k, x := range v {
					out[k] = resolve(x, path)
				}
				return out
			}
			key := ref[strings.LastIndex(ref, "/")+1:]
			if path[ref] {
				return map[string]any{"type": "object", "description": "Circular ref to " + key}
			}
			def, found := defs[key].(map[string]any)
			if !found {
				return v
			}
			merged := maps.Clone(def)
			for k, x := range v {
				if k != "$ref" {
					merged[k] = x
				}
			}
			inner := maps.Clone(path)
			if inner == nil {
				inner = map[string]bool{}
			}
			inner[ref] = true
			return resolve(merged, inner)
		case []any:
			out := make([]any, len(v))
			for i, x := range v {
				out[i] = resolve(x, path)
			}
			return out
		default:
			return v
		}
	}
	out := resolve(root, nil).(map[string]any)
	delete(out, "$defs")
	delete(out, "definitions")
	return out
}

// kept lists the snake-case keywords the sanitized schema keeps as they
// are; items, properties, defs, any_of and format are handled apart.
var kept = map[string]bool{
	"type": true, "title": true, "description": true, "default": true,
	"min_items": true, "max_items": true, "enum": true, "required": true,
	"min_properties": true, "max_properties": true, "minimum": true, "maximum": true,
	"min_length": true, "max_length": true, "pattern": true, "unique_items": true,
	"ref": true, "one_of": true, "property_ordering": true,
}

// sanitize keeps the keywords a genai schema can hold, in snake case, and
// normalizes the type (step 2 above).
func sanitize(v any, preserveNull bool) any {
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = sanitize(x, preserveNull)
		}
		return out
	case bool:
		return map[string]any{"type": "object"}
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			name := snakeCase(k)
			switch {
			case name == "items":
				out[name] = sanitize(x, false)
			case name == "any_of":
				if list, ok := x.([]any); ok {
					s := make([]any, len(list))
					for i, y := range list {
						s[i] = sanitize(y, true)
					}
					out[name] = s
				}
			case (name == "properties" || name == "defs") && x != nil:
				if props, ok := x.(map[string]any); ok {
					s := make(map[string]any, len(props))
					for pk, pv := range props {
						s[pk] = sanitize(pv, false)
					}
					out[name] = s
				}
			case name == "format":
				f, _ := x.(string)
				t := v["type"]
				if f != "" && ((t == "integer" || t == "number") && (f == "int32" || f == "int64") ||
					t == "string" && (f == "date-time" || f == "enum")) {
					out[name] = f
				}
			case kept[name] && x != nil:
				out[name] = x
			}
		}
		return sanitizeType(out, preserveNull)
	default:
		return v
	}
}

func sanitizeType(s map[string]any, preserveNull bool) map[string]any {
	if len(s) == 0 {
		s["type"] = "object"
	}
	switch t := s["type"].(type) {
	case []any:
		var nonNull []any
		for _, x := range t {
			if x != "null" {
				nonNull = append(nonNull, x)
			}
		}
		var pick any = "object"
		if len(nonNull) > 0 {
			pick = nonNull[0]
		}
		for _, x := range nonNull {
			if x == "array" {
				pick = "array"
			}
		}
		if len(nonNull) != len(t) {
			s["type"] = []any{pick, "null"}
		} else {
			s["type"] = pick
		}
	case string:
		if t == "null" && !preserveNull {
			s["type"] = []any{"object", "null"}
		}
	}
	isArray := s["type"] == "array"
	if l, ok := s["type"].([]any); ok && len(l) > 0 && l[0] == "array" {
		isArray = true
	}
	if _, has := s["items"]; isArray && !has {
		s["items"] = map[string]any{"type": "string"}
	}
	return s
}

var (
	nonAlnum   = regexp.MustCompile(`[^a-zA-Z0-9]+`)
	lowerUpper = regexp.MustCompile(`([a-z0-9])([A-Z])`)
	acronym    = regexp.MustCompile(`([A-Z]+)([A-Z][a-z])`)
	underscore = regexp.MustCompile(`_+`)
)

// snakeCase turns a keyword (camelCase, $-prefixed) into snake case:
// minLength is min_length, $ref is ref.
func snakeCase(s string) string {
	s = nonAlnum.ReplaceAllString(s, "_")
	s = lowerUpper.ReplaceAllString(s, "${1}_${2}")
	s = acronym.ReplaceAllString(s, "${1}_${2}")
	s = strings.ToLower(s)
	s = underscore.ReplaceAllString(s, "_")
	return strings.Trim(s, "_")
}

// convert builds the genai schema of a sanitized one (step 3 above). root
// is true for the outermost schema, the only one whose property_ordering
// ADK's conversion accepts.
func convert(s map[string]any, root bool) *genai.Schema {
	out := &genai.Schema{}
	for k, v := range s {
		if v == nil {
			continue
		}
		switch k {
		case "type":
			types, nullable := typeList(v)
			if nullable {
				out.Nullable = genai.Ptr(true)
			}
			if len(types) > 0 {
				out.Type = genai.Type(strings.ToUpper(types[0]))
			}
		case "items":
			if m, ok := v.(map[string]any); ok && len(m) > 0 {
				out.Items = convert(m, false)
			}
		case "any_of":
			list, _ := v.([]any)
			for _, x := range list {
				m, _ := x.(map[string]any)
				out.AnyOf = append(out.AnyOf, convert(m, false))
			}
		case "properties":
			props, _ := v.(map[string]any)
			out.Properties = make(map[string]*genai.Schema, len(props))
			for name, x := range props {
				m, _ := x.(map[string]any)
				out.Properties[name] = convert(m, false)
			}
		case "title":
			out.Title, _ = v.(string)
		case "description":
			out.Description, _ = v.(string)
		case "format":
			out.Format, _ = v.(string)
		case "pattern":
			out.Pattern, _ = v.(string)
		case "default":
			out.Default = v
		case "enum":
			list, _ := v.([]any)
			for _, x := range list {
				out.Enum = append(out.Enum, enumString(x))
			}
		case "required":
			out.Required = names(v)
		case "property_ordering":
			if root {
				out.PropertyOrdering = names(v)
			}
		case "minimum":
			out.Minimum = number(v)
		case "maximum":
			out.Maximum = number(v)
		case "min_items":
			out.MinItems = integer(v)
		case "max_items":
			out.MaxItems = integer(v)
		case "min_length":
			out.MinLength = integer(v)
		case "max_length":
			out.MaxLength = integer(v)
		case "min_properties":
			out.MinProperties = integer(v)
		case "max_properties":
			out.MaxProperties = integer(v)
		}
	}
	if anyOf, ok := s["any_of"].([]any); ok && len(anyOf) == 0 && out.Type == "" {
		out.Type = genai.TypeObject
	}
	return collapseNullable(out)
}

// names returns the strings of a JSON list, skipping anything else.
func names(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		if name, ok := x.(string); ok {
			out = append(out, name)
		}
	}
	return out
}

// collapseNullable returns, for a schema that is any of one typed schema
// and null, the typed schema made nullable, with the outer default if it
// has one; any other schema is returned as it is.
func collapseNullable(out *genai.Schema) *genai.Schema {
	if len(out.AnyOf) != 2 {
		return out
	}
	var typed *genai.Schema
	nulls := 0
	for _, part := range out.AnyOf {
		if isNullSchema(part) {
			nulls++
		} else {
			typed = part
		}
	}
	if nulls != 1 || typed == nil {
		return out
	}
	def := out.Default
	out = typed
	out.Nullable = genai.Ptr(true)
	if def != nil {
		out.Default = def
	}
	return out
}

// isNullSchema reports whether a converted schema stands for null alone:
// nullable and nothing else.
func isNullSchema(s *genai.Schema) bool {
	if s.Nullable == nil || !*s.Nullable {
		return false
	}
	c := *s
	c.Nullable = nil
	b, err := json.Marshal(&c)
	return err == nil && string(b) == "{}"
}

// typeList splits a sanitized type (a name or a list of names) into its
// non-null names and whether null was among them.
func typeList(v any) ([]string, bool) {
	var names []any
	switch v := v.(type) {
	case string:
		names = []any{v}
	case []any:
		names = v
	}
	var out []string
	nullable := false
	for _, x := range names {
		name, _ := x.(string)
		switch {
		case name == "null":
			nullable = true
		case name != "":
			out = append(out, name)
		}
	}
	return out, nullable
}

func number(v any) *float64 {
	if f, ok := v.(float64); ok {
		return &f
	}
	return nil
}

func integer(v any) *int64 {
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return nil
	}
	i := int64(f)
	return &i
}

// enumString is an enum value as the string a genai schema lists.
func enumString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
