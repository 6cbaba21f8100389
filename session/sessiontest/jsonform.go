package sessiontest

import (
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"
)

// profile is a struct a caller might keep in state.
type profile struct {
	Name string            `json:"name"`
	Tags map[string]string `json:"tags,omitempty"`
	Age  int               `json:"age"`
}

// typedValues are state values of Go types that are not JSON's, and the
// JSON each stands for.
func typedValues() (values map[string]any, want map[string]string) {
	values = map[string]any{
		"int":        5,
		"int64":      int64(-6),
		"uint8":      uint8(7),
		"float32":    float32(0.1),
		"number":     json.Number("1e2"),
		"bytes":      []byte("hi"),
		"strings":    []string{"a", "b"},
		"ints":       []int{1, 2},
		"typed-map":  map[string]string{"lang": "en"},
		"int-keys":   map[int]string{2: "b", 1: "a"},
		"struct":     profile{Name: "Ann", Tags: map[string]string{"a": "b"}, Age: 30},
		"pointer":    &profile{Name: "Bo", Tags: map[string]string{"c": "d"}},
		"time":       time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC),
		"raw":        json.RawMessage(`{"z":1,"a":[1,2]}`),
		"nested-int": map[string]any{"n": 3, "l": []any{int64(4), map[string]any{"u": uint(5)}}},
		"list-int":   []any{1, "two", []int{3}},
		"nested-map": map[string]any{"m": map[string]string{"k": "v"}},
	}
	want = map[string]string{
		"int":        `5`,
		"int64":      `-6`,
		"uint8":      `7`,
		"float32":    `0.1`,
		"number":     `100`,
		"bytes":      `"aGk="`,
		"strings":    `["a","b"]`,
		"ints":       `[1,2]`,
		"typed-map":  `{"lang":"en"}`,
		"int-keys":   `{"1":"a","2":"b"}`,
		"struct":     `{"age":30,"name":"Ann","tags":{"a":"b"}}`,
		"pointer":    `{"age":0,"name":"Bo","tags":{"c":"d"}}`,
		"time":       `"2025-01-02T03:04:05.000000006Z"`,
		"raw":        `{"a":[1,2],"z":1}`,
		"nested-int": `{"l":[4,{"u":5}],"n":3}`,
		"list-int":   `[1,"two",[3]]`,
		"nested-map": `{"m":{"k":"v"}}`,
	}
	return values, want
}

// mutate changes, in place, every value of typedValues that holds memory.
func mutate(values map[string]any) {
	values["bytes"].([]byte)[0] = 'X'
	values["strings"].([]string)[0] = "MUTATED"
	values["ints"].([]int)[0] = 99
	values["typed-map"].(map[string]string)["lang"] = "MUTATED"
	values["int-keys"].(map[int]string)[1] = "MUTATED"
	values["struct"].(profile).Tags["a"] = "MUTATED"
	values["pointer"].(*profile).Name = "MUTATED"
	values["pointer"].(*profile).Tags["c"] = "MUTATED"
	values["raw"].(json.RawMessage)[2] = 'y'
	values["nested-int"].(map[string]any)["n"] = 99
	values["list-int"].([]any)[2].([]int)[0] = 99
	values["nested-map"].(map[string]any)["m"].(map[string]string)["k"] = "MUTATED"
}

// jsonShape returns "" if v is made of JSON's own Go values only (nil,
// bool, float64, string, map[string]any, []any), else where it is not.
func jsonShape(v any) string {
	switch x := v.(type) {
	case nil, bool, float64, string:
		return ""
	case map[string]any:
		if x == nil {
			return "a nil map[string]any"
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if s := jsonShape(x[k]); s != "" {
				return fmt.Sprintf("[%q]: %s", k, s)
			}
		}
		return ""
	case []any:
		if x == nil {
			return "a nil []any"
		}
		for i, e := range x {
			if s := jsonShape(e); s != "" {
				return fmt.Sprintf("[%d]: %s", i, s)
			}
		}
		return ""
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

// wantJSONForm fails unless, for each key of want, m's value of that key
// with prefix is the JSON want gives, made of JSON's own Go values.
func wantJSONForm(t *testing.T, what string, m map[string]any, want map[string]string, prefix string) {
	t.Helper()
	for k, w := range want {
		v, ok := m[prefix+k]
		if !ok {
			t.Errorf("%s: key %q missing", what, prefix+k)
			continue
		}
		if s := jsonShape(v); s != "" {
			t.Errorf("%s: key %q holds %s, not a JSON value", what, prefix+k, s)
		}
		if got := canon(v); got != w {
			t.Errorf("%s: key %q = %s, want %s", what, prefix+k, got, w)
		}
	}
}

// testStateJSONForm: state values are held in their JSON form. Whatever Go
// types they are given as, the session Create returns, the session appended
// through, the committed and the stored event's delta and every later read
// hold the same JSON values (numbers as float64; typed maps, slices and
// structs as map[string]any and []any) on every backend, and none of them
// shares memory with the values given. A value whose JSON is null deletes
// its key, as nil does.
func testStateJSONForm(t *testing.T, h *harness) {
	values, want := typedValues()
	initial := map[string]any{}
	for k, v := range values {
		initial[k] = v
		initial["user:"+k] = v
		initial["app:"+k] = v
	}
	s := h.create(t, "u1", "s1", initial)
	for _, prefix := range []string{"", "user:", "app:"} {
		wantJSONForm(t, "created", s.State(), want, prefix)
	}

	delta := map[string]any{}
	for k, v := range values {
		delta["d-"+k] = v
		delta["user:d-"+k] = v
		delta["temp:d-"+k] = v
	}
	ev := textEvent("ev-1", "x", delta)
	h.appendEv(t, s, ev)
	for _, prefix := range []string{"d-", "user:d-"} {
		wantJSONForm(t, "committed event's delta", ev.Actions.StateDelta, want, prefix)
	}

	// The caller's values are its own: changing them changes nothing.
	mutate(values)
	for _, prefix := range []string{"", "user:", "app:", "d-", "user:d-", "temp:d-"} {
		wantJSONForm(t, "live session", s.State(), want, prefix)
	}
	fresh := h.get(t, s.Key())
	for _, prefix := range []string{"", "user:", "app:", "d-", "user:d-"} {
		wantJSONForm(t, "fresh read", fresh.State(), want, prefix)
	}
	if evs := fresh.Events(); len(evs) != 1 {
		t.Errorf("fresh read has %d events, want 1", len(evs))
	} else {
		for _, prefix := range []string{"d-", "user:d-"} {
			wantJSONForm(t, "stored event's delta", evs[0].Actions.StateDelta, want, prefix)
		}
	}
	res, err := h.svc.List(t.Context(), h.app, "u1", nil)
	if err != nil || len(res.Sessions) != 1 {
		t.Fatalf("List: %v, %v", res, err)
	}
	for _, prefix := range []string{"", "user:", "app:", "d-", "user:d-"} {
		wantJSONForm(t, "listed", res.Sessions[0].State(), want, prefix)
	}

	// A value whose JSON is null deletes its key, as nil does.
	h.appendEv(t, s, textEvent("ev-2", "x", map[string]any{
		"d-int": map[string]string(nil), "user:d-int": []int(nil), "d-bytes": (*profile)(nil), "d-ints": map[string]any(nil),
	}))
	for what, st := range map[string]map[string]any{"live": s.State(), "fresh": h.get(t, s.Key()).State()} {
		for _, k := range []string{"d-int", "user:d-int", "d-bytes", "d-ints"} {
			if v, ok := st[k]; ok {
				t.Errorf("%s: key %q = %s (%T) after a delta setting it to null, want it deleted", what, k, canon(v), v)
			}
		}
	}
}
