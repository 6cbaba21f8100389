package mcptool

import (
	"encoding/json"
	"testing"
)

// TestGeminiSchema checks the conversion of MCP input schemas to genai
// schemas, keyword by keyword, against the declarations ADK makes of the
// same schemas.
func TestGeminiSchema(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{
			// The everything server's add tool, as ADK's recording declares it.
			name: "add",
			in: `{"type":"object","properties":{"a":{"type":"number","description":"First number"},"b":{"type":"number","description":"Second number"}},
				"required":["a","b"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`,
			want: `{"properties":{"a":{"description":"First number","type":"NUMBER"},"b":{"description":"Second number","type":"NUMBER"}},"required":["a","b"],"type":"OBJECT"}`,
		},
		{
			name: "defaults",
			in: `{"type":"object","properties":{"duration":{"type":"number","default":10,"description":"Duration"},
				"steps":{"type":"integer","default":5}},"additionalProperties":false}`,
			want: `{"properties":{"duration":{"default":10,"description":"Duration","type":"NUMBER"},"steps":{"default":5,"type":"INTEGER"}},"type":"OBJECT"}`,
		},
		{
			name: "nullable type list",
			in:   `{"type":"object","properties":{"n":{"type":["string","null"]},"m":{"type":["null","integer","array"]}}}`,
			want: `{"properties":{"m":{"items":{"type":"STRING"},"nullable":true,"type":"ARRAY"},"n":{"nullable":true,"type":"STRING"}},"type":"OBJECT"}`,
		},
		{
			name: "anyOf with null collapses",
			in:   `{"type":"object","properties":{"x":{"anyOf":[{"type":"string","description":"inner"},{"type":"null"}],"default":"d","title":"X"}}}`,
			want: `{"properties":{"x":{"default":"d","description":"inner","nullable":true,"type":"STRING"}},"type":"OBJECT"}`,
		},
		{
			name: "anyOf of two types stays",
			in:   `{"anyOf":[{"type":"string"},{"type":"integer","minimum":1}]}`,
			want: `{"anyOf":[{"type":"STRING"},{"minimum":1,"type":"INTEGER"}]}`,
		},
		{
			name: "lone null is a nullable object",
			in:   `{"type":"object","properties":{"z":{"type":"null"}}}`,
			want: `{"properties":{"z":{"nullable":true,"type":"OBJECT"}},"type":"OBJECT"}`,
		},
		{
			name: "refs resolved, siblings override",
			in: `{"type":"object","properties":{"p":{"$ref":"#/$defs/Point","description":"where"},"q":{"$ref":"#/definitions/Q"}},
				"$defs":{"Point":{"type":"object","description":"a point","properties":{"x":{"type":"number"}}}},
				"definitions":{"Q":{"type":"string","enum":["a","b"]}}}`,
			want: `{"properties":{"p":{"description":"where","properties":{"x":{"type":"NUMBER"}},"type":"OBJECT"},"q":{"enum":["a","b"],"type":"STRING"}},"type":"OBJECT"}`,
		},
		{
			name: "circular ref",
			in:   `{"type":"object","properties":{"n":{"$ref":"#/$defs/Node"}},"$defs":{"Node":{"type":"object","properties":{"next":{"$ref":"#/$defs/Node"}}}}}`,
			want: `{"properties":{"n":{"properties":{"next":{"description":"Circular ref to Node","type":"OBJECT"}},"type":"OBJECT"}},"type":"OBJECT"}`,
		},
		{
			name: "formats",
			in: `{"type":"object","properties":{"i":{"type":"integer","format":"int64"},"u":{"type":"string","format":"uri"},
				"d":{"type":"string","format":"date-time"},"f":{"type":"number","format":"double"}}}`,
			want: `{"properties":{"d":{"format":"date-time","type":"STRING"},"f":{"type":"NUMBER"},"i":{"format":"int64","type":"INTEGER"},"u":{"type":"STRING"}},"type":"OBJECT"}`,
		},
		{
			name: "bounds and dropped keywords",
			in: `{"type":"object","minProperties":1,"properties":{"s":{"type":"string","minLength":2,"maxLength":9,"pattern":"^a","const":"a","examples":["a"]},
				"l":{"type":"array","minItems":1,"maxItems":3,"uniqueItems":true,"items":{"type":"boolean"}},"o":{"oneOf":[{"type":"string"}],"allOf":[{"type":"string"}],"not":{}}}}`,
			want: `{"minProperties":1,"properties":{"l":{"items":{"type":"BOOLEAN"},"maxItems":3,"minItems":1,"type":"ARRAY"},"o":{},"s":{"maxLength":9,"minLength":2,"pattern":"^a","type":"STRING"}},"type":"OBJECT"}`,
		},
		{
			name: "boolean and empty schemas are objects",
			in:   `{"type":"object","properties":{"t":true,"e":{},"only":{"additionalProperties":false}}}`,
			want: `{"properties":{"e":{"type":"OBJECT"},"only":{"type":"OBJECT"},"t":{"type":"OBJECT"}},"type":"OBJECT"}`,
		},
		{
			name: "array without items",
			in:   `{"type":"array"}`,
			want: `{"items":{"type":"STRING"},"type":"ARRAY"}`,
		},
		{
			name: "enum of numbers as strings, ordering at the root",
			in:   `{"type":"object","propertyOrdering":["b","a"],"properties":{"a":{"type":"integer","enum":[1,2]},"b":{"type":"string"}}}`,
			want: `{"properties":{"a":{"enum":["1","2"],"type":"INTEGER"},"b":{"type":"STRING"}},"propertyOrdering":["b","a"],"type":"OBJECT"}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var in map[string]any
			if err := json.Unmarshal([]byte(c.in), &in); err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(geminiSchema(in))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != c.want {
				t.Errorf("geminiSchema(%s)\n got %s\nwant %s", c.in, b, c.want)
			}
		})
	}
	if s := geminiSchema(nil); s != nil {
		t.Errorf("geminiSchema(nil) = %+v, want nil", s)
	}
}

// TestSnakeCase checks the keyword names the conversion recognizes.
func TestSnakeCase(t *testing.T) {
	for in, want := range map[string]string{
		"minLength": "min_length", "$ref": "ref", "$defs": "defs", "anyOf": "any_of",
		"additionalProperties": "additional_properties", "type": "type", "propertyOrdering": "property_ordering",
		"HTTPServer": "http_server", "$schema": "schema",
	} {
		if got := snakeCase(in); got != want {
			t.Errorf("snakeCase(%q) = %q, want %q", in, got, want)
		}
	}
}
