package event

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/model"
)

// decodeInputs are encoded events for the Decoder tests: the golden files
// (indented and compact) and events of every shape the fast path handles,
// in canonical form.
func decodeInputs(t testing.TB) map[string][]byte {
	t.Helper()
	in := map[string][]byte{}
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("golden files: %v (%d found)", err, len(files))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		in[name] = b
		var buf bytes.Buffer
		if err := json.Compact(&buf, b); err != nil {
			t.Fatal(err)
		}
		in[name+"/compact"] = buf.Bytes()
	}
	yes := true
	ts := time.Unix(1747130000, 123456000)
	events := map[string]*Event{
		"text_state": {
			ID: "id-1", InvocationID: "inv", Author: "agent", Timestamp: ts,
			Response: model.Response{Content: genai.NewContentFromText("event text", genai.RoleModel)},
			Actions:  Actions{StateDelta: map[string]any{"counter": 12.0}},
		},
		"escapes_unicode": {
			ID: "id-2", Author: "agent\n\"x\"", Branch: "root.child", Timestamp: ts,
			Response: model.Response{Content: &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
				{Text: "héllo <b> & \u2028 tab\t \\ \"q\" 日本"},
				{Text: "thinking", Thought: true, ThoughtSignature: []byte{0, 1, 2, 250, 251}},
			}}},
			Actions: Actions{StateDelta: map[string]any{"ключ": "значение", "k q": []any{}, "nested": map[string]any{"a": []any{1.5, -2e-7, true, false, nil, "s"}}}},
		},
		"control": {
			ID: "id-3", InvocationID: "inv-2", Author: "loop", Timestamp: ts,
			Actions: Actions{SkipSummarization: true, Escalate: true, EndOfAgent: true, TransferToAgent: "helper",
				RewindBeforeInvocationID: "inv-1", ArtifactDelta: map[string]int64{"a.txt": 3, "b": 0},
				RequestedAuthConfigs: map[string]any{"call": map[string]any{"x": 1.0}},
				AgentState:           map[string]any{"step": 2.0}},
			LongRunningToolIDs: []string{"call-1", "call-2"},
		},
		"model_response": {
			ID: "id-4", InvocationID: "inv", Author: "agent", Timestamp: ts,
			Response: model.Response{
				Content:      &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: &genai.FunctionCall{ID: "c1", Name: "f", Args: map[string]any{"x": "y"}}}}},
				ModelVersion: "m-1", FinishReason: genai.FinishReasonStop, ErrorCode: "E", ErrorMessage: "bad",
				AvgLogprobs: -0.5, TurnComplete: true, Interrupted: true,
				CustomMetadata: map[string]any{"k": map[string]any{}},
				UsageMetadata: &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 10, CandidatesTokenCount: 3,
					TotalTokenCount: 13, TrafficType: "ON_DEMAND",
					PromptTokensDetails: []*genai.ModalityTokenCount{{Modality: "TEXT", TokenCount: 10}}},
			},
		},
		"function_response": {
			ID: "id-5", Author: "agent", Timestamp: ts,
			Response: model.Response{Content: &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
				{FunctionResponse: &genai.FunctionResponse{ID: "c1", Name: "f", Response: map[string]any{"result": nil}}},
				{FunctionResponse: &genai.FunctionResponse{ID: "c2", Name: "g", Response: map[string]any{"output": 1.0}, WillContinue: &yes}},
			}}},
		},
		"empty": {},
		"llm_call": {
			ID: "id-6", InvocationID: "inv", Author: "agent", Timestamp: ts, LLMCall: true,
			Response: model.Response{Content: genai.NewContentFromText("answer", genai.RoleModel)},
		},
		"llm_call_metadata": {
			ID: "id-7", InvocationID: "inv", Author: "agent", Timestamp: ts, LLMCall: true,
			Response: model.Response{Content: genai.NewContentFromText("answer", genai.RoleModel), CustomMetadata: map[string]any{"a": 1.0, "z": "y"}},
		},
	}
	for name, ev := range events {
		b, err := ev.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		in["event/"+name] = b
	}
	// Inputs the fast path leaves to UnmarshalJSON.
	in["snake_case"] = []byte(`{"invocation_id":"i","author":"a","actions":{"state_delta":{"k_k":1}},"timestamp":1}`)
	in["duplicate_key"] = []byte(`{"content":{"parts":[{"text":"a"}]},"content":{"role":"user"},"timestamp":1}`)
	in["null_content"] = []byte(`{"content":null,"author":"a"}`)
	in["string_timestamp"] = []byte(`{"timestamp":"2025-05-13T10:00:00Z"}`)
	in["trailing"] = []byte(`{"author":"a"} x`)
	in["bad_utf8"] = []byte("{\"author\":\"a\xff\",\"content\":{\"parts\":[{\"text\":\"b\xfe\"}]}}")
	in["bad_base64"] = []byte(`{"content":{"parts":[{"thoughtSignature":"***"}]}}`)
	in["float_artifact"] = []byte(`{"actions":{"artifactDelta":{"a":1.5}}}`)
	in["big_int32"] = []byte(`{"usageMetadata":{"totalTokenCount":3000000000}}`)
	in["truncated"] = []byte(`{"author":"a","content":{"parts":[{"text":"x"`)
	in["not_json"] = []byte(`nope`)
	in["llm_call_spaced"] = []byte(`{"customMetadata":{ "llmCall" : true },"author":"a"}`)
	in["llm_call_twice"] = []byte(`{"customMetadata":{"llmCall":true,"llmCall":true},"author":"a"}`)
	in["llm_call_false"] = []byte(`{"customMetadata":{"llmCall":false},"author":"a"}`)
	in["llm_call_trailing"] = []byte(`{"customMetadata":{"llmCall":true}}}`)
	return in
}

// TestDecoderMatchesUnmarshalJSON checks that Decoder.Decode and
// Event.UnmarshalJSON agree on every input (E1: the wire codec reads back
// what it wrote), and that the fast path handles canonical events.
func TestDecoderMatchesUnmarshalJSON(t *testing.T) {
	var d Decoder
	for name, data := range decodeInputs(t) {
		t.Run(name, func(t *testing.T) {
			checkDecoderAgrees(t, &d, data)
		})
	}
	fastOnly := []string{"event/text_state", "event/escapes_unicode", "event/control", "event/model_response", "event/empty",
		"user_text", "model_text_usage/compact", "function_call", "function_response", "error", "control_actions"}
	in := decodeInputs(t)
	for _, name := range fastOnly {
		var e Event
		if !d.fast(in[name], &e) {
			t.Errorf("%s: the fast path did not decode it", name)
		}
	}
	for _, name := range []string{"snake_case", "duplicate_key", "null_content", "trailing", "bad_base64", "float_artifact", "big_int32", "truncated"} {
		var e Event
		if d.fast(in[name], &e) {
			t.Errorf("%s: the fast path decoded it, want the general path", name)
		}
	}
}

func checkDecoderAgrees(t *testing.T, d *Decoder, data []byte) {
	t.Helper()
	var want, got Event
	werr := want.UnmarshalJSON(data)
	gerr := d.Decode(data, &got)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("Decode error %v, UnmarshalJSON error %v", gerr, werr)
	}
	if werr != nil {
		return
	}
	if !reflect.DeepEqual(&got, &want) {
		gb, _ := json.Marshal(&got)
		wb, _ := json.Marshal(&want)
		t.Fatalf("Decode and UnmarshalJSON differ:\n got %s\nwant %s", gb, wb)
	}
}

// TestDecoderPartsDoNotAlias checks that events decoded from shared blocks
// stay independent: appending a part to one event leaves the next intact.
func TestDecoderPartsDoNotAlias(t *testing.T) {
	var d Decoder
	var a, b Event
	if err := d.Decode([]byte(`{"content":{"parts":[{"text":"a"}],"role":"user"}}`), &a); err != nil {
		t.Fatal(err)
	}
	if err := d.Decode([]byte(`{"content":{"parts":[{"text":"b"}],"role":"user"}}`), &b); err != nil {
		t.Fatal(err)
	}
	a.Content.Parts = append(a.Content.Parts, &genai.Part{Text: "extra"})
	a.Content.Parts[0].Text = "changed"
	if got := b.Content.Parts[0].Text; got != "b" || len(b.Content.Parts) != 1 {
		t.Fatalf("second event's parts = %d, first text %q; want 1, %q", len(b.Content.Parts), got, "b")
	}
}

// FuzzDecoder checks that Decoder.Decode agrees with Event.UnmarshalJSON on
// any input.
func FuzzDecoder(f *testing.F) {
	for _, data := range decodeInputs(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d Decoder
		checkDecoderAgrees(t, &d, data)
	})
}

func BenchmarkDecoder(b *testing.B) {
	ev := NewModelText("inv", "agent", "event text")
	ev.Actions.StateDelta = map[string]any{"counter": 1234}
	data, err := ev.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("Decoder", func(b *testing.B) {
		var d Decoder
		b.ReportAllocs()
		for b.Loop() {
			var e Event
			if err := d.Decode(data, &e); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("UnmarshalJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var e Event
			if err := e.UnmarshalJSON(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// ExampleDecoder decodes a run of stored events, as a store reading back a
// session does.
func ExampleDecoder() {
	stored := [][]byte{
		[]byte(`{"content":{"parts":[{"text":"Hi"}],"role":"user"},"author":"user","actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}},"id":"e1","timestamp":1747130000.5}`),
		[]byte(`{"content":{"parts":[{"text":"Hello!"}],"role":"model"},"author":"root","actions":{"stateDelta":{"greeted":true},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{}},"id":"e2","timestamp":1747130001}`),
	}
	var dec Decoder
	events := make([]Event, len(stored))
	for i, data := range stored {
		if err := dec.Decode(data, &events[i]); err != nil {
			fmt.Println(err)
			return
		}
	}
	for _, ev := range events {
		fmt.Println(ev.ID, ev.Author, ev.Text(), ev.Actions.StateDelta)
	}
	// Output:
	// e1 user Hi map[]
	// e2 root Hello! map[greeted:true]
}

// FuzzUnmarshalContent checks that the parser's fast path of
// UnmarshalContent decodes exactly what encoding/json does, whenever it
// takes the input.
func FuzzUnmarshalContent(f *testing.F) {
	for _, s := range []string{
		`{"role":"user","parts":[{"text":"What is 1+2?"}]}`,
		` {"parts":[{"text":"a\u00e9\n"},{"thought":true,"text":"t"}] , "role":"model"} `,
		`{"parts":[{"functionCall":{"id":"c1","name":"add","args":{"a":1,"b":[2,"x",null]}}}]}`,
		`{"parts":[{"functionResponse":{"name":"add","response":{"result":3}}}],"role":"user"}`,
		`{"parts":[{"thoughtSignature":"c2ln","text":"x"}]}`,
		`{"role":"user","role":"model"}`, `{"Role":"user"}`, `{"parts":null}`, `{}`, `{"parts":[{}]}`,
		"{\"parts\":[{\"text\":\"\xff\"}]}", `{"parts":[{"text":"a"}]} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := fastContent(data)
		if !ok {
			return
		}
		want, err := unmarshalContent(data)
		if err != nil {
			t.Fatalf("fast path decoded %q, encoding/json refuses it: %v", data, err)
		}
		if !reflect.DeepEqual(got, want) {
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(want)
			t.Fatalf("%q:\nfast %s\njson %s", data, gj, wj)
		}
	})
}
