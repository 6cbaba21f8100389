package event

import (
	"encoding/json"
	"fmt"
)

// JSONForm returns v in its JSON form: the value encoding/json decodes v's
// encoding into, made of nil, bool, float64, string, map[string]any and
// []any only, and sharing no memory with v. It is the form the session log
// gives back: an int is a float64, a struct or typed map a map[string]any,
// a typed slice a []any, a []byte its base64 string, and a value whose
// encoding is null (a nil pointer, map or slice) nil.
func JSONForm(v any) (any, error) {
	// Integers are float64s without an encoding.
	switch x := v.(type) {
	case int:
		return float64(x), nil
	case int8:
		return float64(x), nil
	case int16:
		return float64(x), nil
	case int32:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case uint:
		return float64(x), nil
	case uint8:
		return float64(x), nil
	case uint16:
		return float64(x), nil
	case uint32:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("a value of type %T: %w", v, err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("a value of type %T: %w", v, err)
	}
	return out, nil
}
