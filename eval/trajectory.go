package eval

import (
	"context"
	"reflect"

	"google.golang.org/genai"
)

// Trajectory scores tool use: per invocation 1 if the actual tool calls
// match the expected ones under the match type, else 0; overall, the mean.
// Calls match when their names and arguments are equal.
type Trajectory struct {
	Match MatchType
}

// Score implements Scorer.
func (t Trajectory) Score(_ context.Context, in *ScoreInput) (*Score, error) {
	if in.Expected == nil {
		return &Score{}, nil
	}
	var out Score
	for i := 0; i < len(in.Actual) && i < len(in.Expected); i++ {
		ok := matchTools(t.Match, in.Actual[i].IntermediateData.ToolCalls(), in.Expected[i].IntermediateData.ToolCalls())
		s := 0.0
		if ok {
			s = 1
		}
		out.PerInvocation = append(out.PerInvocation, InvocationScore{Score: ptr(s)})
	}
	out.Overall = mean(out.PerInvocation)
	return &out, nil
}

// matchTools reports whether actual tool calls match expected ones under
// a match type.
func matchTools(m MatchType, actual, expected []*genai.FunctionCall) bool {
	switch m {
	case InOrder:
		next := 0
		for _, a := range actual {
			if next < len(expected) && sameCall(a, expected[next]) {
				next++
			}
		}
		return next == len(expected)
	case AnyOrder:
		used := make([]bool, len(actual))
	outer:
		for _, e := range expected {
			for i, a := range actual {
				if !used[i] && sameCall(a, e) {
					used[i] = true
					continue outer
				}
			}
			return false
		}
		return true
	default:
		if len(actual) != len(expected) {
			return false
		}
		for i := range actual {
			if !sameCall(actual[i], expected[i]) {
				return false
			}
		}
		return true
	}
}

func sameCall(a, b *genai.FunctionCall) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Name == b.Name && sameArgs(a.Args, b.Args)
}

// sameArgs compares arguments as JSON values: numbers by value, however
// they were decoded, and an absent map equal to an empty one.
func sameArgs(a, b map[string]any) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(normalizeJSON(a), normalizeJSON(b))
}

func normalizeJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[k] = normalizeJSON(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = normalizeJSON(val)
		}
		return out
	case int:
		return float64(x)
	case int32:
		return float64(x)
	case int64:
		return float64(x)
	case float32:
		return float64(x)
	case interface{ Float64() (float64, error) }:
		f, _ := x.Float64()
		return f
	}
	return v
}
