package event_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/loomkit/loom/event"
)

// TestA7PythonRepr pins how another agent's arguments and results are
// written for a model: as Python's repr writes the dict ADK holds
// (CONFORMANCE A7).
func TestA7PythonRepr(t *testing.T) {
	for _, c := range []struct {
		in   any
		want string
	}{
		{nil, "None"},
		{map[string]any{}, "{}"},
		{map[string]any{"result": nil}, "{'result': None}"},
		{map[string]any{"agent_name": "math_tutor"}, "{'agent_name': 'math_tutor'}"},
		{map[string]any{"b": true, "a": false}, "{'a': False, 'b': True}"},
		{map[string]any{"n": 6707.0, "f": 0.1, "big": 1e16, "tiny": 1e-5, "neg": -2.5}, "{'big': 10000000000000000, 'f': 0.1, 'n': 6707, 'neg': -2.5, 'tiny': 1e-05}"},
		{[]any{1, "x", []any{}}, "[1, 'x', []]"},
		{"it's", `"it's"`},
		{`say "hi" it's`, `'say "hi" it\'s'`},
		{"a\\b\n\t\x01é€", `'a\\b\n\t\x01é€'`},
		{"\u00a0\u200b", `'\xa0\u200b'`},
		{json.Number("12"), "12"},
		{math.Inf(1), "inf"},
		{1.5e300, "1.5e+300"},
		{struct {
			A int `json:"a"`
		}{3}, "{'a': 3}"},
	} {
		if got := event.PythonRepr(c.in); got != c.want {
			t.Errorf("PythonRepr(%#v) = %s, want %s", c.in, got, c.want)
		}
	}
}
