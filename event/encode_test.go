package event

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
)

// encodeCorpus are events the fast encoder covers, and some it must leave
// to encoding/json.
func encodeCorpus() []*Event {
	ts := time.Unix(1795424477, 612258000)
	text := NewModelText("inv-1", "agent", "3")
	text.Timestamp = ts
	user := NewUserText("inv-1", "What is <1> & \"2\"?\n\t\b\f\x01 \u2028\u2029 é 日本 \xff")
	user.Timestamp = ts.Add(-time.Microsecond * 120)
	call := New("inv-1", "calc")
	call.Timestamp = ts.Add(time.Second)
	call.Content = &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
		{FunctionCall: &genai.FunctionCall{ID: "adk-1", Name: "add", Args: map[string]any{"a": 1, "b": 2.5, "c": "x", "z": nil,
			"n": map[string]any{"deep": []any{1.0, true, false, "s", nil, map[string]any{}}}, "big": 1e21, "small": 1e-7, "neg": -0.000001,
			"f32": float32(3.14), "i64": int64(-9007199254740993), "u": uint64(18446744073709551615), "i32": int32(7)}}},
		{Text: "thinking", Thought: true},
	}}
	call.LongRunningToolIDs = []string{"adk-1", "x\"y"}
	resp := New("inv-1", "calc")
	resp.Timestamp = ts.Add(2 * time.Second)
	resp.Branch = "root.calc"
	resp.Content = &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
		{FunctionResponse: &genai.FunctionResponse{ID: "adk-1", Name: "add", Response: map[string]any{"result": 3}}},
		{FunctionResponse: &genai.FunctionResponse{Name: "noid"}},
		{FunctionCall: &genai.FunctionCall{}},
		{},
	}}
	resp.Actions = Actions{StateDelta: map[string]any{"k": 1, "app:x": []any{}, "user:y": map[string]any{"a": nil}},
		ArtifactDelta: map[string]int64{"b.txt": 2, "a.txt": 0}, TransferToAgent: "other", Escalate: true,
		SkipSummarization: true, EndOfAgent: true, AgentState: map[string]any{"step": 2}, RewindBeforeInvocationID: "inv-0"}
	flags := New("inv-2", "agent")
	flags.Timestamp = time.Unix(-5, -300000)
	flags.Response.Partial, flags.Response.TurnComplete, flags.Response.Interrupted = true, true, true
	flags.Response.ModelVersion, flags.Response.FinishReason = "m-1", genai.FinishReasonStop
	flags.Response.ErrorCode, flags.Response.ErrorMessage = "E", "bad <thing>"
	flags.Content = &genai.Content{Role: "model"}
	flags.CustomMetadata = map[string]any{"seen": true, "b": []any{1.5, "x"}, "a": map[string]any{"z": nil}}
	zero := &Event{}
	node := NewModelText("inv-3", "wf", "done")
	node.Timestamp = ts
	node.Output = map[string]any{"total": 3, "items": []any{"a"}}
	node.NodeInfo = &NodeInfo{Path: "wf/sum@1", OutputFor: []string{"wf/sum@1", "wf"}, MessageAsOutput: true}
	bare := NewModelText("inv-3", "wf", "")
	bare.Timestamp = ts
	bare.Output = "text output"
	bare.NodeInfo = &NodeInfo{Path: "wf"}
	// Left to encoding/json:
	usage := NewModelText("inv", "a", "x")
	usage.UsageMetadata = &genai.GenerateContentResponseUsageMetadata{TotalTokenCount: 3}
	blob := NewModelText("inv", "a", "x")
	blob.Content.Parts = append(blob.Content.Parts, &genai.Part{InlineData: &genai.Blob{MIMEType: "text/plain", Data: []byte("hi")}})
	number := NewModelText("inv", "a", "x")
	number.Actions.StateDelta = map[string]any{"n": json.Number("12")}
	typed := NewModelText("inv", "a", "x")
	typed.Actions.StateDelta = map[string]any{"s": []string{"a"}, "t": struct{ A int }{1}}
	confirm := NewModelText("inv", "a", "x")
	confirm.Actions.RequestedToolConfirmations = map[string]ToolConfirmation{"c": {Hint: "ok?"}}
	// A model call's mark, alone, beside other metadata, and given twice.
	marked := NewModelText("inv", "a", "x")
	marked.LLMCall = true
	markedMeta := NewModelText("inv", "a", "x")
	markedMeta.LLMCall, markedMeta.CustomMetadata = true, map[string]any{"z": 1, "a": "b"}
	markedTwice := NewModelText("inv", "a", "x")
	markedTwice.LLMCall, markedTwice.CustomMetadata = true, map[string]any{MetadataLLMCall: true}
	started := New("inv", "a")
	started.CustomMetadata = map[string]any{MetadataStartedCalls: []string{"c1"}, MetadataImported: true}
	return []*Event{text, user, call, resp, flags, zero, node, bare, usage, blob, number, typed, confirm, marked, markedMeta, markedTwice, started}
}

// TestEncodeFastMatches checks that the fast path of MarshalJSON and
// MarshalStored writes exactly the bytes of encoding/json for every event
// it covers, in both forms, and that it covers the common ones.
func TestEncodeFastMatches(t *testing.T) {
	for _, stored := range []bool{false, true} {
		covered := 0
		for i, ev := range encodeCorpus() {
			want, err := ev.marshalWire(stored)
			if err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
			got, ok := appendEventJSON(nil, ev, stored)
			if !ok {
				continue
			}
			covered++
			if !bytes.Equal(got, want) {
				t.Errorf("event %d, stored %v:\nfast %s\nwire %s", i, stored, got, want)
			}
			viaMethod, err := ev.MarshalJSON()
			if stored {
				viaMethod, err = ev.MarshalStored()
			}
			if err != nil || !bytes.Equal(viaMethod, want) {
				t.Errorf("event %d, stored %v: method = %s, %v", i, stored, viaMethod, err)
			}
		}
		// The started calls' list of ids, a []string, is not the fast path's
		// in the stored form, and the wire form leaves it out.
		want := map[bool]int{false: 12, true: 11}[stored]
		if covered != want {
			t.Errorf("stored %v: fast path covered %d events of the corpus, want %d", stored, covered, want)
		}
	}
}

// TestEncodeFastKnowsEveryField fails when a field is added to a type the
// fast path writes: appendEventJSON must learn it (or fall back on it)
// before the field can be stored.
func TestEncodeFastKnowsEveryField(t *testing.T) {
	for typ, want := range map[reflect.Type]int{
		reflect.TypeFor[wireEvent]():              11,
		reflect.TypeFor[Event]():                  13,
		reflect.TypeFor[model.Response]():         16,
		reflect.TypeFor[wireActions]():            15,
		reflect.TypeFor[Actions]():                15,
		reflect.TypeFor[NodeInfo]():               3,
		reflect.TypeFor[genai.Content]():          2,
		reflect.TypeFor[genai.Part]():             17,
		reflect.TypeFor[genai.FunctionCall]():     5,
		reflect.TypeFor[genai.FunctionResponse](): 6,
	} {
		if got := typ.NumField(); got != want {
			t.Errorf("%v has %d fields, the fast encoder (encode.go) knows %d", typ, got, want)
		}
	}
}

// TestEncodeFastFloats checks number formatting against encoding/json
// across magnitudes and the exponent cut-offs.
func TestEncodeFastFloats(t *testing.T) {
	values := []any{0.0, math.Copysign(0, -1), 1.0, -1.5, 1e-6, 9.99e-7, 1e20, 1e21, 123456789.125, 5e-324, math.MaxFloat64,
		float32(1e-6), float32(9.99e-7), float32(1e20), float32(1e21), float32(0.1), int(-3), int64(math.MinInt64)}
	for _, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		enc := encoder{ok: true}
		enc.value(v)
		if !enc.ok || string(enc.buf) != string(want) {
			t.Errorf("%T %v: fast %s (ok %v), want %s", v, v, enc.buf, enc.ok, want)
		}
	}
	for _, v := range []any{math.NaN(), math.Inf(1)} {
		enc := encoder{ok: true}
		if enc.value(v); enc.ok {
			t.Errorf("%v: fast path encoded a value encoding/json refuses", v)
		}
	}
}

// TestEncodeFastDeep leaves values nested beyond the fast path's depth to
// encoding/json.
func TestEncodeFastDeep(t *testing.T) {
	var v any = "leaf"
	for range maxFastDepth + 5 {
		v = []any{v}
	}
	ev := NewModelText("inv", "a", "x")
	ev.Actions.StateDelta = map[string]any{"deep": v}
	if _, ok := appendEventJSON(nil, ev, false); ok {
		t.Fatal("fast path encoded a value nested beyond maxFastDepth")
	}
	got, err := ev.MarshalJSON()
	want, _ := ev.marshalWire(false)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("MarshalJSON = %s, %v; want %s", got, err, want)
	}
}

// FuzzEncodeFast compares the fast path with encoding/json on arbitrary
// text, state values and timestamps.
func FuzzEncodeFast(f *testing.F) {
	f.Add("hello", "key", 1.5, int64(1795424477612258))
	f.Add("<a href=\"x\">&\u2028\xff\x00", "\x7f", -1e-7, int64(-1))
	f.Add("", "", 0.0, int64(0))
	f.Fuzz(func(t *testing.T, text, key string, num float64, us int64) {
		ev := NewModelText("inv", "agent", text)
		ev.Timestamp = time.UnixMicro(us % (maxSeconds * 1e6))
		ev.Actions.StateDelta = map[string]any{key: num, key + "s": text, "list": []any{num, text}}
		// Custom metadata, with or without a model call's mark.
		ev.LLMCall = us%3 == 0
		if us%2 == 0 {
			ev.CustomMetadata = map[string]any{key: text}
		}
		for _, stored := range []bool{false, true} {
			want, werr := ev.marshalWire(stored)
			got, ok := appendEventJSON(nil, ev, stored)
			if werr != nil {
				if ok {
					t.Fatalf("fast path encoded an event encoding/json refuses (%v): %s", werr, got)
				}
				return
			}
			if ok && !bytes.Equal(got, want) {
				t.Fatalf("stored %v:\nfast %s\nwire %s", stored, got, want)
			}
		}
	})
}
