package agentconfig

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"
)

//go:embed schema.json
var schemaJSON []byte

// Schema returns the JSON schema of the config format (draft 2020-12): its
// $defs name the keys of each built-in agent class (BaseAgentConfig for
// SequentialAgent and ParallelAgent, LlmAgentConfig, LoopAgentConfig) and of
// the tool kinds' args. Editors can use it to check files as they are
// written.
func Schema() []byte { return slices.Clone(schemaJSON) }

// defs are the $defs of schema.json, parsed once.
var defs = sync.OnceValue(func() map[string]*jsonschema.Schema {
	var s jsonschema.Schema
	if err := json.Unmarshal(schemaJSON, &s); err != nil {
		panic("agentconfig: schema.json: " + err.Error())
	}
	return s.Defs
})

// Def returns a schema checking a value against the definition name of
// the format's schema ("LlmAgentConfig", "McpToolsetArgs", ...), for an
// AgentClass or ToolKind that reuses one. It panics on an unknown name.
func Def(name string) *jsonschema.Schema {
	if defs()[name] == nil {
		panic("agentconfig: no schema definition " + name)
	}
	return &jsonschema.Schema{Ref: "#/$defs/" + name, Defs: defs()}
}

// resolved caches resolved schemas by identity, up to maxResolved of them
// (the built-in classes' and kinds' schemas, and those registered with
// them); a schema past the bound is resolved at each use.
var (
	resolvedMu sync.Mutex
	resolved   = map[*jsonschema.Schema]*jsonschema.Resolved{}
)

const maxResolved = 256

func resolve(s *jsonschema.Schema) (*jsonschema.Resolved, error) {
	resolvedMu.Lock()
	r, ok := resolved[s]
	resolvedMu.Unlock()
	if ok {
		return r, nil
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, err
	}
	resolvedMu.Lock()
	if len(resolved) < maxResolved {
		resolved[s] = r
	}
	resolvedMu.Unlock()
	return r, nil
}

// validate checks the value of n against s. The error names the file, line
// and field of the first problem found: the walk below finds unknown keys,
// missing keys, wrong types and values outside an enum where they are
// written; the JSON schema validator has the last word on anything else.
func validate(n node, s *jsonschema.Schema) error {
	root := s
	if err := walk(n, s, root); err != nil {
		return err
	}
	r, err := resolve(s)
	if err != nil {
		return fmt.Errorf("agentconfig: schema: %w", err)
	}
	v, err := n.value()
	if err != nil {
		return err
	}
	if err := r.Validate(v); err != nil {
		return n.errorf("%s", lastLine(err.Error()))
	}
	return nil
}

// lastLine keeps the innermost message of a validator error, which wraps
// every schema it passed through.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndex(s, ": "); i >= 0 && strings.HasPrefix(s, "validating") {
		return s[i+2:]
	}
	return s
}

// walk checks n against s structurally. root holds the $defs that $refs
// point into.
func walk(n node, s, root *jsonschema.Schema) error {
	for s != nil && s.Ref != "" {
		name, ok := strings.CutPrefix(s.Ref, "#/$defs/")
		if !ok || root.Defs[name] == nil {
			return nil
		}
		s = root.Defs[name]
	}
	if s == nil {
		return nil
	}
	if len(s.AnyOf) > 0 {
		// The first branch the value passes structurally; if none, the
		// error of the first branch whose type fits.
		var first, fitting error
		for _, b := range s.AnyOf {
			err := walk(n, b, root)
			if err == nil {
				return nil
			}
			if first == nil {
				first = err
			}
			if fitting == nil && typeFits(n, b, root) {
				fitting = err
			}
		}
		if fitting != nil {
			return fitting
		}
		return first
	}
	if want := types(s); len(want) > 0 && !slices.Contains(want, kindOf(n.n)) &&
		(kindOf(n.n) != "integer" || !slices.Contains(want, "number")) {
		return n.errorf("is %s, want %s", article(kindOf(n.n)), strings.Join(want, " or "))
	}
	if len(s.Enum) > 0 {
		v, err := n.value()
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(s.Enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
			return n.errorf("is %v, want one of %v", v, s.Enum)
		}
	}
	if s.Minimum != nil && (kindOf(n.n) == "integer" || kindOf(n.n) == "number") {
		var f float64
		if err := n.n.Decode(&f); err == nil && f < *s.Minimum {
			return n.errorf("is %v, below the minimum %v", f, *s.Minimum)
		}
	}
	switch n.n.Kind {
	case yaml.MappingNode:
		seen := map[string]bool{}
		for k, v := range n.pairs() {
			if seen[k.n.Value] {
				return k.errorf("is repeated")
			}
			seen[k.n.Value] = true
			if ps := s.Properties[k.n.Value]; ps != nil {
				if err := walk(v, ps, root); err != nil {
					return err
				}
				continue
			}
			if s.AdditionalProperties != nil {
				if isFalse(s.AdditionalProperties) {
					if why, ok := unsupported[k.n.Value]; ok {
						return k.errorf("is not supported: %s", why)
					}
					return k.errorf("is not a known key (known: %s)", strings.Join(keys(s), ", "))
				}
				if err := walk(v, s.AdditionalProperties, root); err != nil {
					return err
				}
			}
		}
		for _, r := range s.Required {
			if !seen[r] {
				return n.errorf("is missing the required key %s", r)
			}
		}
	case yaml.SequenceNode:
		if s.Items != nil {
			for i, item := range n.n.Content {
				if err := walk(n.index(i, item), s.Items, root); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// unsupported are keys of ADK's format that Loom does not implement, with
// the reason given when a file uses one.
var unsupported = map[string]string{
	"model_code":            "models are chosen by name (model) or by the program running the app",
	"static_instruction":    "use instruction",
	"input_schema":          "agents used as tools take a request string",
	"accumulate_output_key": "output_key stores the final response",
	"sse_connection_params": "MCP servers are reached over stdio or streamable HTTP",
	"auth_scheme":           "MCP servers over HTTP take headers",
	"auth_credential":       "MCP servers over HTTP take headers",
	"max_concurrency":       "a graph workflow starts every node whose input is ready",
}

func typeFits(n node, s, root *jsonschema.Schema) bool {
	for s != nil && s.Ref != "" {
		s = root.Defs[strings.TrimPrefix(s.Ref, "#/$defs/")]
	}
	if s == nil {
		return false
	}
	want := types(s)
	return len(want) == 0 || slices.Contains(want, kindOf(n.n))
}

func types(s *jsonschema.Schema) []string {
	if s.Type != "" {
		return []string{s.Type}
	}
	return s.Types
}

func isFalse(s *jsonschema.Schema) bool {
	return s.Not != nil && s.Not.Type == "" && len(s.Not.Properties) == 0 && s.Not.Ref == "" && len(s.Not.Types) == 0
}

func keys(s *jsonschema.Schema) []string {
	ks := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// kindOf names the JSON type of a YAML node.
func kindOf(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "object"
	case yaml.SequenceNode:
		return "array"
	case yaml.AliasNode:
		return kindOf(n.Alias)
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int":
			return "integer"
		case "!!float":
			return "number"
		case "!!bool":
			return "boolean"
		case "!!null":
			return "null"
		}
		return "string"
	}
	return "null"
}

func article(kind string) string {
	switch kind {
	case "object", "array", "integer":
		return "an " + kind
	case "null":
		return "empty"
	}
	return "a " + kind
}
