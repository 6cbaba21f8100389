package session

import (
	"math"
	"reflect"
	"testing"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
)

// BenchmarkCheckEvent measures the validation of a model event with text
// and a one-key state delta, which every append pays.
func BenchmarkCheckEvent(b *testing.B) {
	e := event.NewModelText("e-bench", "agent", "event text")
	e.Actions.StateDelta = map[string]any{"k": 1}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := checkState(e.Actions.StateDelta); err != nil {
			b.Fatal(err)
		}
		if _, err := checkEvent(e); err != nil {
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
	if _, err := checkEvent(call); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = checkEvent(call) }); n != 0 && !raceEnabled {
		t.Errorf("validating a function call event allocates %v times", n)
	}
	call.Content.Parts[0].FunctionCall.Args["c"] = math.NaN()
	if _, err := checkEvent(call); err == nil {
		t.Error("a function call with a NaN argument is valid")
	}
}

// TestFastEventAgreesWithWalk: the check without reflection accepts an
// event exactly when the reflection walk does, for every field it covers,
// with values valid, invalid, and nested to the depth limit and one past
// it; it accepts the common events.
func TestFastEventAgreesWithWalk(t *testing.T) {
	walk := func(ev *event.Event, foreign *bool) error {
		return checker{nul: true, typed: true, skipStateDelta: true, foreign: foreign}.reflect(reflect.ValueOf(ev).Elem(), 1)
	}
	nest := func(n int) any {
		var v any = "leaf"
		for range n {
			v = []any{v}
		}
		return v
	}
	var values []any
	for n := MaxValueDepth - 9; n <= MaxValueDepth; n++ {
		values = append(values, nest(n))
	}
	values = append(values, "ok", "\xff", "a\x00b", math.NaN(), int64(1)<<54, map[string]any{"\xff": 1}, make(chan int),
		struct{ A int }{1}, []string{"a"}, 3)
	part := func(p *genai.Part) *event.Event {
		ev := event.New("e-1", "a")
		ev.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{nil, p}}
		return ev
	}
	var events []*event.Event
	for _, v := range values {
		m := map[string]any{"k": v}
		var s string
		if str, ok := v.(string); ok {
			s = str
		}
		for _, set := range []func(*event.Event){
			func(ev *event.Event) { ev.CustomMetadata = m },
			func(ev *event.Event) { ev.Actions.AgentState = m },
			func(ev *event.Event) { ev.Output = v },
			func(ev *event.Event) { ev.Branch, ev.ModelVersion, ev.ErrorMessage = s, s, s },
			func(ev *event.Event) { ev.FinishReason, ev.Actions.TransferToAgent = genai.FinishReason(s), s },
			func(ev *event.Event) { ev.Actions.ArtifactDelta = map[string]int64{s: 1} },
			func(ev *event.Event) { ev.LongRunningToolIDs = []string{"x", s} },
			func(ev *event.Event) { ev.NodeInfo = &event.NodeInfo{Path: "p", OutputFor: []string{s}} },
		} {
			ev := event.New("e-1", "a")
			set(ev)
			events = append(events, ev)
		}
		events = append(events,
			part(&genai.Part{Text: s}),
			part(&genai.Part{PartMetadata: m}),
			part(&genai.Part{MediaProcessing: genai.MediaProcessing(s)}),
			part(&genai.Part{FunctionCall: &genai.FunctionCall{ID: s, Name: "f", Args: m}}),
			part(&genai.Part{FunctionResponse: &genai.FunctionResponse{ID: "c", Name: s, Response: m, Scheduling: genai.FunctionResponseScheduling(s)}}),
		)
	}
	const perValue = 13 // events built for each value
	accepted := make([]int, len(values))
	for i, ev := range events {
		var fastForeign, walkForeign bool
		fast, err := fastEvent(ev, &fastForeign), walk(ev, &walkForeign)
		if fast != (err == nil) {
			t.Errorf("event %d: fast check %v, walk %v", i, fast, err)
		}
		if fast && fastForeign != walkForeign {
			t.Errorf("event %d: the fast check finds a value not JSON's own: %v, the walk: %v", i, fastForeign, walkForeign)
		}
		if fast {
			accepted[i/perValue]++
		}
	}
	// The shallowest nesting passes everywhere; the deepest passes nowhere
	// (7 events leave it out); invalid UTF-8 passes nowhere.
	if accepted[0] != perValue || accepted[9] != 7 || accepted[11] != 0 {
		t.Errorf("accepted %v events per value", accepted)
	}
	// Fields it does not cover go to the walk, whatever their value.
	avg := event.New("e-1", "a")
	avg.AvgLogprobs = math.Inf(1)
	for _, ev := range []*event.Event{avg, part(&genai.Part{InlineData: &genai.Blob{Data: []byte("x")}})} {
		if fastEvent(ev, new(bool)) {
			t.Errorf("the fast check accepted %+v", ev)
		}
	}
}

// TestFastEventKnowsEveryField fails when a field is added to a type the
// check without reflection covers: fastEvent must learn it (or leave
// events that set it to the walk) before the field can be stored.
func TestFastEventKnowsEveryField(t *testing.T) {
	for typ, want := range map[reflect.Type]int{
		reflect.TypeFor[event.Event]():            13,
		reflect.TypeFor[model.Response]():         16,
		reflect.TypeFor[event.Actions]():          15,
		reflect.TypeFor[event.NodeInfo]():         3,
		reflect.TypeFor[genai.Content]():          2,
		reflect.TypeFor[genai.Part]():             17,
		reflect.TypeFor[genai.FunctionCall]():     5,
		reflect.TypeFor[genai.FunctionResponse](): 6,
	} {
		if got := typ.NumField(); got != want {
			t.Errorf("%v has %d fields, fastEvent (validate.go) knows %d", typ, got, want)
		}
	}
}
