package agentconfig

import (
	"fmt"
	"iter"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// Error is a problem in a config file, located at a field.
type Error struct {
	// File is the path of the config file.
	File string
	// Line and Column locate the field's value (1-based; 0 when unknown).
	Line, Column int
	// Field is the path of the field within the file, such as
	// "tools[1].args.stdio_server_params.command"; empty for the whole
	// document.
	Field string
	// Msg says what is wrong.
	Msg string
}

// Error implements error as "file:line:column: field: message".
func (e *Error) Error() string {
	field := e.Field
	if field == "" {
		field = "document"
	}
	return fmt.Sprintf("%s:%d:%d: %s: %s", e.File, e.Line, e.Column, field, e.Msg)
}

// node is a YAML node with where it comes from.
type node struct {
	file string
	path string // field path within the file
	n    *yaml.Node
}

func (n node) errorf(format string, args ...any) *Error {
	return &Error{File: n.file, Line: n.n.Line, Column: n.n.Column, Field: n.path, Msg: fmt.Sprintf(format, args...)}
}

func (n node) child(key string, v *yaml.Node) node {
	p := key
	if n.path != "" {
		p = n.path + "." + key
	}
	return node{file: n.file, path: p, n: v}
}

func (n node) index(i int, v *yaml.Node) node {
	return node{file: n.file, path: n.path + "[" + strconv.Itoa(i) + "]", n: v}
}

// pairs yields the keys and values of a mapping node; each key node's
// path is that of its value.
func (n node) pairs() iter.Seq2[node, node] {
	return func(yield func(node, node) bool) {
		if n.n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.n.Content); i += 2 {
			k, v := n.n.Content[i], n.n.Content[i+1]
			if !yield(n.child(k.Value, k), n.child(k.Value, deref(v))) {
				return
			}
		}
	}
}

// get returns the value of key in a mapping node.
func (n node) get(key string) (node, bool) {
	for k, v := range n.pairs() {
		if k.n.Value == key {
			return v, true
		}
	}
	return node{}, false
}

// str returns the string value of key, or "".
func (n node) str(key string) string {
	if v, ok := n.get(key); ok && v.n.Kind == yaml.ScalarNode {
		return v.n.Value
	}
	return ""
}

// decode decodes the value of n into v, which is a pointer.
func (n node) decode(v any) error {
	if err := n.n.Decode(v); err != nil {
		return n.errorf("%v", err)
	}
	return nil
}

// value returns n as a JSON-like Go value: map[string]any, []any, string,
// int, float64, bool or nil.
func (n node) value() (any, error) {
	switch x := deref(n.n); x.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		for k, v := range n.pairs() {
			if k.n.Kind != yaml.ScalarNode {
				return nil, k.errorf("a key must be a string")
			}
			val, err := v.value()
			if err != nil {
				return nil, err
			}
			m[k.n.Value] = val
		}
		return m, nil
	case yaml.SequenceNode:
		s := make([]any, len(x.Content))
		for i, c := range x.Content {
			val, err := n.index(i, deref(c)).value()
			if err != nil {
				return nil, err
			}
			s[i] = val
		}
		return s, nil
	case yaml.ScalarNode:
		var v any
		if err := x.Decode(&v); err != nil {
			return nil, n.errorf("%v", err)
		}
		if i, ok := v.(int64); ok {
			v = int(i)
		}
		return v, nil
	}
	return nil, nil
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}
