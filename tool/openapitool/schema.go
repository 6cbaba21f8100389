package openapitool

import (
	"maps"
	"slices"

	"github.com/getkin/kin-openapi/openapi3"
)

// maxSchemaDepth bounds the nesting of a converted schema, and
// maxSchemaNodes the number of schemas one tool's declaration writes (all
// its arguments together), so that a deep, recursive or widely shared
// document cannot make a huge declaration (a schema reached along several
// paths is written once per path).
const (
	maxSchemaDepth = 12
	maxSchemaNodes = 2000
)

// schemaOf returns the schema a reference resolves to, or nil.
func schemaOf(ref *openapi3.SchemaRef) *openapi3.Schema {
	if ref == nil {
		return nil
	}
	return ref.Value
}

// jsonSchema converts an OpenAPI schema (its references resolved by the
// loader) to the JSON schema of a function declaration. description, when
// not empty, is used in place of the schema's own. In a request (request
// true) read-only properties are left out. nodes counts the schemas written
// for the declaration so far, across calls. A schema that refers back to
// itself is written without its contents (only its type) at the point of
// recursion, as is any schema past the bounds of depth and size.
func jsonSchema(ref *openapi3.SchemaRef, description string, request bool, nodes *int) map[string]any {
	c := converter{request: request, onPath: map[*openapi3.Schema]bool{}, nodes: nodes}
	out := c.convert(schemaOf(ref), 0)
	if description != "" {
		out["description"] = description
	}
	return out
}

type converter struct {
	request bool
	onPath  map[*openapi3.Schema]bool // schemas being converted, to stop recursion
	nodes   *int                      // schemas written so far for the declaration
}

func (c *converter) convert(s *openapi3.Schema, depth int) map[string]any {
	out := map[string]any{}
	if s == nil {
		return out
	}
	*c.nodes++
	if c.onPath[s] || depth > maxSchemaDepth || *c.nodes > maxSchemaNodes {
		out["type"] = "object"
		if s.Type.IsSingle() {
			out["type"] = s.Type.Slice()[0]
		}
		if s.Description != "" {
			out["description"] = s.Description
		}
		return out
	}
	c.onPath[s] = true
	defer delete(c.onPath, s)

	if types := s.Type.Slice(); len(types) == 1 && !s.Nullable {
		out["type"] = types[0]
	} else if len(types) > 0 {
		t := slices.Clone(types)
		if s.Nullable && !slices.Contains(t, openapi3.TypeNull) {
			t = append(t, openapi3.TypeNull)
		}
		out["type"] = t
	}
	set := func(key string, v any, ok bool) {
		if ok {
			out[key] = v
		}
	}
	set("title", s.Title, s.Title != "")
	set("description", s.Description, s.Description != "")
	set("format", s.Format, s.Format != "")
	set("enum", s.Enum, len(s.Enum) > 0)
	set("const", s.Const, s.Const != nil)
	set("default", s.Default, s.Default != nil)
	set("pattern", s.Pattern, s.Pattern != "")
	set("minLength", s.MinLength, s.MinLength > 0)
	if s.MaxLength != nil {
		out["maxLength"] = *s.MaxLength
	}
	if s.Min != nil {
		out["minimum"] = *s.Min
	}
	if s.Max != nil {
		out["maximum"] = *s.Max
	}
	if s.MultipleOf != nil {
		out["multipleOf"] = *s.MultipleOf
	}
	set("minItems", s.MinItems, s.MinItems > 0)
	if s.MaxItems != nil {
		out["maxItems"] = *s.MaxItems
	}
	set("uniqueItems", true, s.UniqueItems)
	if s.Items != nil {
		out["items"] = c.convert(s.Items.Value, depth+1)
	}
	if len(s.Properties) > 0 {
		props := map[string]any{}
		for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
			p := schemaOf(s.Properties[name])
			if c.request && p != nil && p.ReadOnly {
				continue
			}
			props[name] = c.convert(p, depth+1)
		}
		out["properties"] = props
		var required []string
		for _, r := range s.Required {
			if _, ok := props[r]; ok {
				required = append(required, r)
			}
		}
		set("required", required, len(required) > 0)
	}
	if ap := s.AdditionalProperties; ap.Schema != nil {
		out["additionalProperties"] = c.convert(ap.Schema.Value, depth+1)
	} else if ap.Has != nil {
		out["additionalProperties"] = *ap.Has
	}
	for key, list := range map[string]openapi3.SchemaRefs{"oneOf": s.OneOf, "anyOf": s.AnyOf, "allOf": s.AllOf} {
		if len(list) == 0 {
			continue
		}
		var alts []any
		for _, r := range list {
			alts = append(alts, c.convert(schemaOf(r), depth+1))
		}
		out[key] = alts
	}
	if s.Not != nil {
		out["not"] = c.convert(s.Not.Value, depth+1)
	}
	return out
}
