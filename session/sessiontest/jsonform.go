package sessiontest

import (
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
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

// testEventJSONForm: the free-form values of an event (function call
// arguments and responses, part and custom metadata, an agent's state,
// auth configs, confirmation payloads, a node's output) are committed in
// their JSON form, as state values are: the committed event, the live
// session's and a fresh read's all hold JSON's own Go values, whatever Go
// types the author used, and share no memory with them. The author's own
// content, function calls and maps are left as they were.
func testEventJSONForm(t *testing.T, h *harness) {
	values, want := typedValues()
	s := h.create(t, "u1", "s1", nil)
	args := map[string]any{}
	for k, v := range values {
		args[k] = v
	}
	call := &genai.FunctionCall{ID: "c1", Name: "f", Args: args}
	resp := &genai.FunctionResponse{ID: "c0", Name: "g", Response: map[string]any{"result": profile{Name: "Res", Age: 3}}}
	content := &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
		{Text: "x", PartMetadata: map[string]any{"p": profile{Name: "Meta"}}},
		{FunctionCall: call},
		{FunctionResponse: resp},
	}}
	ev := &event.Event{ID: "ev-1", InvocationID: "e-inv", Author: "agent"}
	ev.Content = content
	ev.CustomMetadata = map[string]any{"struct": profile{Name: "Custom"}}
	ev.Actions.AgentState = map[string]any{"n": 7}
	ev.Actions.RequestedAuthConfigs = map[string]any{"c1": &profile{Name: "Auth"}}
	ev.Actions.RequestedToolConfirmations = map[string]event.ToolConfirmation{"c1": {Hint: "ok?", Payload: profile{Name: "Pay"}}}
	ev.Output = profile{Name: "Out", Age: 1}
	h.appendEv(t, s, ev)

	check := func(what string, ev *event.Event) {
		t.Helper()
		parts := ev.Content.Parts
		if len(parts) != 3 || parts[1].FunctionCall == nil || parts[2].FunctionResponse == nil {
			t.Fatalf("%s: content %s", what, canon(ev.Content))
		}
		wantJSONForm(t, what+": call args", parts[1].FunctionCall.Args, want, "")
		for name, v := range map[string]struct {
			got  any
			want string
		}{
			"function response": {parts[2].FunctionResponse.Response, `{"result":{"age":3,"name":"Res"}}`},
			"part metadata":     {parts[0].PartMetadata, `{"p":{"age":0,"name":"Meta"}}`},
			"custom metadata":   {ev.CustomMetadata, `{"struct":{"age":0,"name":"Custom"}}`},
			"agent state":       {ev.Actions.AgentState, `{"n":7}`},
			"auth configs":      {ev.Actions.RequestedAuthConfigs, `{"c1":{"age":0,"name":"Auth"}}`},
			"payload":           {ev.Actions.RequestedToolConfirmations["c1"].Payload, `{"age":0,"name":"Pay"}`},
			"output":            {ev.Output, `{"age":1,"name":"Out"}`},
		} {
			if s := jsonShape(v.got); s != "" {
				t.Errorf("%s: %s holds %s, not a JSON value", what, name, s)
			}
			if got := canon(v.got); got != v.want {
				t.Errorf("%s: %s = %s, want %s", what, name, got, v.want)
			}
		}
	}
	check("committed event", ev)
	// The author's values are its own, untouched by the commit.
	if _, ok := call.Args["struct"].(profile); !ok || content.Parts[1].FunctionCall != call {
		t.Errorf("the author's call args were changed: %T", call.Args["struct"])
	}
	if _, ok := resp.Response["result"].(profile); !ok {
		t.Errorf("the author's function response was changed: %T", resp.Response["result"])
	}
	mutate(values)
	call.Args["struct"] = "MUTATED"
	check("live session", s.Events()[0])
	check("fresh read", h.get(t, s.Key()).Events()[0])
}
