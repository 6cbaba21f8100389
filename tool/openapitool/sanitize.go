package openapitool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/oasdiff/yaml"
)

// validTypes are the schema types of JSON Schema (and of OpenAPI 3.1).
var validTypes = map[string]bool{
	"array": true, "boolean": true, "integer": true, "null": true,
	"number": true, "object": true, "string": true,
}

// maxWarnings bounds the warnings kept for one document; the rest are
// counted in a last one.
const maxWarnings = 100

// Placeholders of a missing info.title and info.version.
const (
	untitled       = "untitled"
	unknownVersion = "0"
)

// sanitize makes the repairs ADK's parser makes to a document before
// reading it (see "Lenient documents" in the package documentation) and
// returns the repaired document, as JSON, with a warning for each repair.
// A document without repairs, or one it cannot decode (the loader will
// report why), is returned as given.
func sanitize(data []byte) ([]byte, []string) {
	var doc any
	if err := decodeJSON(data, &doc); err != nil {
		js, err := yaml.YAMLToJSON(data)
		if err != nil || decodeJSON(js, &doc) != nil {
			return data, nil
		}
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return data, nil
	}
	version, _ := root["openapi"].(string)
	s := &sanitizer{typeLists: !strings.HasPrefix(version, "3.0")}
	info, ok := root["info"].(map[string]any)
	if _, present := root["info"]; !present {
		info, ok = map[string]any{}, true
		root["info"] = info
	}
	if ok {
		if t, _ := info["title"].(string); t == "" {
			info["title"] = untitled
			s.warn(fmt.Sprintf("info.title is missing: the document is titled %q", untitled))
		}
		if _, present := info["version"]; !present {
			info["version"] = unknownVersion
			s.warn(fmt.Sprintf("info.version is missing: the document's version is %q", unknownVersion))
		}
	}
	if _, present := root["paths"]; !present {
		root["paths"] = map[string]any{}
		s.warn("paths is missing: the document has no operations")
	}
	s.walk(root, "#", false)
	if len(s.warnings) == 0 {
		return data, nil
	}
	out, err := json.Marshal(root)
	if err != nil {
		return data, nil
	}
	if s.dropped > 0 {
		s.warnings = append(s.warnings, fmt.Sprintf("%d more repairs not listed", s.dropped))
	}
	return out, s.warnings
}

func decodeJSON(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return d.Decode(v)
}

type sanitizer struct {
	typeLists bool // the document's version allows lists of types (3.1 on)
	warnings  []string
	dropped   int
}

func (s *sanitizer) warn(w string) {
	if len(s.warnings) < maxWarnings {
		s.warnings = append(s.warnings, w)
	} else {
		s.dropped++
	}
}

// pointerEscaper escapes a key for a JSON pointer.
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// dataKeys hold values, not schemas: their contents are left alone.
var dataKeys = map[string]bool{"example": true, "examples": true, "default": true, "enum": true, "const": true}

// walk repairs the type of every schema below v, at location at: any map
// under a "schema" or "schemas" key, as ADK reads them.
func (s *sanitizer) walk(v any, at string, inSchema bool) {
	switch v := v.(type) {
	case map[string]any:
		if inSchema {
			s.fixType(v, at)
		}
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if inSchema && dataKeys[k] {
				continue
			}
			s.walk(v[k], at+"/"+pointerEscaper.Replace(k), inSchema || k == "schema" || k == "schemas")
		}
	case []any:
		for i, item := range v {
			s.walk(item, fmt.Sprintf("%s/%d", at, i), inSchema)
		}
	}
}

// fixType repairs the "type" of the schema m.
func (s *sanitizer) fixType(m map[string]any, at string) {
	switch t := m["type"].(type) {
	case string:
		lower := strings.ToLower(t)
		switch {
		case lower == t && validTypes[t]:
		case validTypes[lower]:
			m["type"] = lower
			s.warn(fmt.Sprintf("%s: schema type %q read as %q", at, t, lower))
		default:
			delete(m, "type")
			s.warn(fmt.Sprintf("%s: schema type %q is not a JSON Schema type: the schema is left untyped", at, t))
		}
	case []any:
		var kept []any
		var bad []string
		for _, e := range t {
			str, _ := e.(string)
			lower := strings.ToLower(str)
			if !validTypes[lower] {
				bad = append(bad, fmt.Sprint(e))
				continue
			}
			if !slices.Contains(kept, any(lower)) {
				kept = append(kept, lower)
			}
		}
		clean := len(bad) == 0 && slices.EqualFunc(kept, t, func(a, b any) bool { return a == b })
		switch {
		case len(kept) == 0:
			delete(m, "type")
			s.warn(fmt.Sprintf("%s: schema types %q hold no JSON Schema type: the schema is left untyped", at, bad))
		case s.typeLists && clean:
		case s.typeLists:
			m["type"] = kept
			s.warn(fmt.Sprintf("%s: schema types %v read as %v", at, t, kept))
		default:
			s.warn(fmt.Sprintf("%s: schema types %v read as %s (OpenAPI 3.0 has no lists of types)", at, t, singleTypes(m, kept)))
		}
	}
}

// singleTypes writes the types kept of a list in OpenAPI 3.0's terms,
// where a type is one string: "null" becomes nullable, one other type is
// the type, several are the alternatives of an anyOf (when the schema has
// none already; otherwise it is left untyped). It describes the result.
func singleTypes(m map[string]any, kept []any) string {
	delete(m, "type")
	var types []any
	for _, t := range kept {
		if t == "null" {
			m["nullable"] = true
		} else {
			types = append(types, t)
		}
	}
	switch _, hasAnyOf := m["anyOf"]; {
	case len(types) == 1:
		m["type"] = types[0]
		return fmt.Sprintf("type %q", types[0])
	case len(types) > 1 && !hasAnyOf:
		var alts []any
		for _, t := range types {
			alts = append(alts, map[string]any{"type": t})
		}
		m["anyOf"] = alts
		return fmt.Sprintf("anyOf types %v", types)
	}
	return "an untyped schema"
}
