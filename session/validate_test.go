package session

import (
	"math"
	"reflect"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
)

// BenchmarkCheckEvent measures the validation of a model event with text
// and a one-key state delta, which every append pays.
func BenchmarkCheckEvent(b *testing.B) {
	e := event.NewModelText("e-bench", "agent", "event text")
	e.Actions.StateDelta = map[string]any{"k": 1}
	b.ReportAllocs()
	for b.Loop() {
		if err := checkState(e.Actions.StateDelta); err != nil {
			b.Fatal(err)
		}
		if err := checkEvent(e); err != nil {
			b.Fatal(err)
		}
	}
}

// genericMap is a map[string]any that the checker walks by reflection (it is
// a named type), as it walked every map before the map[string]any path.
type genericMap map[string]any

// TestCheckerMapPathAsStrictAsReflection: a map[string]any in a typed field
// (function call arguments, responses) is accepted and rejected, with the
// same error, at every depth, exactly as the reflection walk of maps does.
func TestCheckerMapPathAsStrictAsReflection(t *testing.T) {
	nest := func(n int) any {
		var v any = 1.0
		for range n {
			v = map[string]any{"k": v}
		}
		return v
	}
	maps := []map[string]any{
		{}, {"a": 1.0, "b": "x"}, {"n": nil}, {"nan": math.NaN()}, {"inf": math.Inf(-1)},
		{"\xff": 1.0}, {"s": "\xff"}, {"nul": "a\x00b"}, {"big": int64(1) << 54}, {"big": uint64(1) << 54},
		{"list": []any{1.0, "\xff"}}, {"deep": nest(3)}, {"deep": nest(MaxValueDepth - 10)}, {"deep": nest(MaxValueDepth + 10)},
		{"ch": make(chan int)}, {"f": func() {}},
	}
	for _, m := range maps {
		for _, depth := range []int{1, 5, MaxValueDepth - 1, MaxValueDepth, MaxValueDepth + 1, MaxValueDepth + 16, MaxValueDepth + 17} {
			for _, c := range []checker{{nul: true, typed: true}, {nul: false, typed: true}, {nul: true}, {}} {
				got := c.reflect(reflect.ValueOf(m), depth)
				want := c.reflect(reflect.ValueOf(genericMap(m)), depth)
				if (got == nil) != (want == nil) || got != nil && got.Error() != want.Error() {
					t.Errorf("map %v at depth %d, %+v: error %v, by reflection %v", m, depth, c, got, want)
				}
			}
		}
	}
	call := &event.Event{ID: "e1", Author: "a", InvocationID: "e-1"}
	call.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{genai.NewPartFromFunctionCall("add", map[string]any{"a": 1.0, "b": 2.0})}}
	if err := checkEvent(call); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = checkEvent(call) }); n != 0 && !raceEnabled {
		t.Errorf("validating a function call event allocates %v times", n)
	}
	call.Content.Parts[0].FunctionCall.Args["c"] = math.NaN()
	if err := checkEvent(call); err == nil {
		t.Error("a function call with a NaN argument is valid")
	}
}
