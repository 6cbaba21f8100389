package event_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"

	"github.com/loomkit/loom/event"
	"github.com/loomkit/loom/model"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var ts0 = time.Unix(1747130000, 123456000)

// goldenEvents are realistic events, one per golden file.
func goldenEvents() map[string]*event.Event {
	at := func(d time.Duration) time.Time { return ts0.Add(d) }
	return map[string]*event.Event{
		"user_text": {
			ID: "4f1c0e7a-5d1b-4b7e-9a51-2d0f7e0b6a10", InvocationID: "e-8b2f1f0c-1111-4aaa-8bbb-000000000001",
			Author: "user", Timestamp: at(0),
			Response: model.Response{Content: genai.NewContentFromText("What is 1 + 2?", genai.RoleUser)},
			Actions:  event.Actions{StateDelta: map[string]any{"user_name": "Ann", "temp:x": 1.5}},
		},
		"model_text_usage": {
			ID: "0b9d8c7e-2a3b-4c5d-8e6f-7a8b9c0d1e2f", InvocationID: "e-8b2f1f0c-1111-4aaa-8bbb-000000000001",
			Author: "root_agent", Branch: "root_agent", Timestamp: at(time.Second),
			Response: model.Response{
				Content:      genai.NewContentFromText("The answer is 3.", genai.RoleModel),
				FinishReason: genai.FinishReasonStop, TurnComplete: true, ModelVersion: "gemini-2.5-flash",
				AvgLogprobs: -0.125,
				UsageMetadata: &genai.GenerateContentResponseUsageMetadata{
					PromptTokenCount: 42, CandidatesTokenCount: 7, TotalTokenCount: 49, ThoughtsTokenCount: 3},
			},
		},
		"function_call": {
			ID: "c3a1e2f4-0000-4000-8000-00000000c001", InvocationID: "e-inv-2", Author: "root_agent", Timestamp: at(2 * time.Second),
			Response: model.Response{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
				{Text: "Let me add those."},
				{FunctionCall: &genai.FunctionCall{ID: "adk-6a7b8c9d-0000-4000-8000-000000000001", Name: "add",
					Args: map[string]any{"a": 1.0, "b": 2.0, "options": map[string]any{"round_to": 2.0, "tags": []any{"x", nil}}}}},
			}}},
		},
		"function_response": {
			ID: "c3a1e2f4-0000-4000-8000-00000000c002", InvocationID: "e-inv-2", Author: "root_agent", Timestamp: at(3 * time.Second),
			Response: model.Response{Content: &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
				{FunctionResponse: &genai.FunctionResponse{ID: "adk-6a7b8c9d-0000-4000-8000-000000000001", Name: "add",
					Response: map[string]any{"result": 3.0, "error_detail": nil}}},
			}}},
			Actions: event.Actions{SkipSummarization: true, StateDelta: map[string]any{"last_sum": 3.0, "user:calls": 1.0},
				ArtifactDelta: map[string]int64{"sum.txt": 0}},
		},
		"inline_data": {
			ID: "d0d0d0d0-0000-4000-8000-00000000d001", InvocationID: "e-inv-3", Author: "user", Timestamp: at(4 * time.Second),
			Response: model.Response{Content: &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
				{Text: "Describe this image."},
				{InlineData: &genai.Blob{MIMEType: "image/png", Data: []byte{0x89, 'P', 'N', 'G', 0xfb, 0xff, 0xfe, 0x3e, 0x3f}}},
			}}},
		},
		"thought": {
			ID: "e1e1e1e1-0000-4000-8000-00000000e001", InvocationID: "e-inv-3", Author: "root_agent", Timestamp: at(5 * time.Second),
			Response: model.Response{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
				{Text: "The user wants a description.", Thought: true, ThoughtSignature: []byte{0xfa, 0xfb, 0xfc, 0x01}},
				{Text: "It is a tiny PNG."},
			}}},
		},
		"compaction": {
			ID: "f2f2f2f2-0000-4000-8000-00000000f001", InvocationID: "e-inv-4", Author: "user", Timestamp: at(6 * time.Second),
			Actions: event.Actions{Compaction: &event.Compaction{Start: at(0), End: at(3 * time.Second),
				Content: genai.NewContentFromText("The user asked for 1 + 2; the agent answered 3.", genai.RoleModel)}},
		},
		"tool_confirmation": {
			ID: "a5a5a5a5-0000-4000-8000-00000000a001", InvocationID: "e-inv-5", Author: "root_agent", Timestamp: at(7 * time.Second),
			LongRunningToolIDs: []string{"adk-conf-1"},
			Response: model.Response{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
				{FunctionCall: &genai.FunctionCall{ID: "adk-conf-1", Name: event.FunctionRequestConfirmation, Args: map[string]any{
					"originalFunctionCall": map[string]any{"id": "call-9", "name": "transfer_money", "args": map[string]any{"amount_usd": 100.0}},
					"toolConfirmation":     map[string]any{"hint": "Send $100?", "confirmed": false},
				}}},
			}}},
			Actions: event.Actions{RequestedToolConfirmations: map[string]event.ToolConfirmation{
				"call-9": {Hint: "Send $100?", Payload: map[string]any{"max_amount": 100.0}}}},
		},
		"long_running": {
			ID: "b6b6b6b6-0000-4000-8000-00000000b001", InvocationID: "e-inv-6", Author: "worker", Branch: "root_agent.worker",
			Timestamp: at(8 * time.Second), LongRunningToolIDs: []string{"job-1", "job-2"},
			Response: model.Response{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
				{FunctionCall: &genai.FunctionCall{ID: "job-1", Name: "start_job", Args: map[string]any{"n": 1.0}}},
				{FunctionCall: &genai.FunctionCall{ID: "job-2", Name: "start_job", Args: map[string]any{"n": 2.0}}},
			}}},
		},
		"error": {
			ID: "9e9e9e9e-0000-4000-8000-000000009001", InvocationID: "e-inv-7", Author: "root_agent", Timestamp: at(9 * time.Second),
			Response: model.Response{ErrorCode: "RESOURCE_EXHAUSTED", ErrorMessage: "quota exceeded",
				FinishReason: genai.FinishReasonOther, CustomMetadata: map[string]any{"retry_after_s": 30.0, "nested": map[string]any{"a_b": true}}},
		},
		"control_actions": {
			ID: "7c7c7c7c-0000-4000-8000-000000007001", InvocationID: "e-inv-8", Author: "loop", Timestamp: at(10 * time.Second),
			Actions: event.Actions{TransferToAgent: "helper", Escalate: true, EndOfAgent: true,
				AgentState:               map[string]any{"current_sub_agent": "b", "times_looped": 2.0},
				RewindBeforeInvocationID: "e-inv-2",
				RequestedAuthConfigs:     map[string]any{"call-7": map[string]any{"auth_scheme": map[string]any{"type": "oauth2"}}},
				StateDelta:               map[string]any{"app:gone": nil}},
		},
	}
}

func goldenPath(name string) string { return filepath.Join("testdata", name+".json") }

func indent(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "  "); err != nil {
		t.Fatalf("indent %s: %v", b, err)
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

// TestE4Golden: encoding matches the golden files, and decoding a golden
// file and encoding it again gives the same bytes (E4).
func TestE4Golden(t *testing.T) {
	for name, e := range goldenEvents() {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			got := indent(t, b)
			if *update {
				if err := os.WriteFile(goldenPath(name), got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(goldenPath(name))
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("encoding differs from %s:\n got %s\nwant %s", goldenPath(name), got, want)
			}

			var dec event.Event
			if err := json.Unmarshal(want, &dec); err != nil {
				t.Fatalf("decode golden: %v", err)
			}
			again, err := json.Marshal(&dec)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(indent(t, again), want) {
				t.Errorf("decode → encode is not stable:\n got %s\nwant %s", indent(t, again), want)
			}
			if !dec.Timestamp.Equal(e.Timestamp) || dec.ID != e.ID {
				t.Errorf("decoded id/timestamp %q %v, want %q %v", dec.ID, dec.Timestamp, e.ID, e.Timestamp)
			}
		})
	}
}

// decodeEncode decodes in and returns its canonical encoding.
func decodeEncode(t *testing.T, in string) string {
	t.Helper()
	var e event.Event
	if err := json.Unmarshal([]byte(in), &e); err != nil {
		t.Fatalf("decode %s: %v", in, err)
	}
	b, err := json.Marshal(&e)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestE4SnakeCase: snake_case input decodes like camelCase, and keys inside
// user data are kept as they are (E4).
func TestE4SnakeCase(t *testing.T) {
	snake := `{
		"id": "ev-1", "invocation_id": "e-1", "author": "root_agent", "timestamp": 1747130000.5,
		"long_running_tool_ids": ["c1"], "turn_complete": true, "error_code": "E", "error_message": "m",
		"custom_metadata": {"trace_id": "t", "deep_map": {"inner_key": 1}},
		"usage_metadata": {"prompt_token_count": 3, "total_token_count": 5},
		"content": {"role": "model", "parts": [
			{"function_call": {"id": "c1", "name": "get_weather", "args": {"city_name": "Paris", "opts": {"unit_type": "C"}}}},
			{"function_response": {"id": "c0", "name": "prev", "response": {"result_value": {"nested_key": 1}}}},
			{"inline_data": {"mime_type": "text/plain", "data": "aGk_Pz4-"}},
			{"text": "t", "thought": true, "thought_signature": "-_8"}
		]},
		"actions": {
			"state_delta": {"user_name": "Ann", "app:max_items": 3, "obj": {"snake_key": true}},
			"artifact_delta": {"my_file.txt": 1},
			"skip_summarization": true, "transfer_to_agent": "other_agent", "end_of_agent": true,
			"agent_state": {"step_no": 1},
			"requested_tool_confirmations": {"call_id_1": {"hint": "ok?", "confirmed": false, "payload": {"some_key": 1}}},
			"requested_auth_configs": {"call_id_2": {"auth_scheme": "x"}},
			"rewind_before_invocation_id": "e-0",
			"compaction": {"start_timestamp": 1747130000, "end_timestamp": 1747130001.25,
				"compacted_content": {"role": "model", "parts": [{"text": "sum"}]}}
		}
	}`
	got := decodeEncode(t, snake)
	for _, want := range []string{
		`"invocationId":"e-1"`, `"longRunningToolIds":["c1"]`, `"turnComplete":true`, `"errorCode":"E"`,
		`"errorMessage":"m"`, `"customMetadata":{"deep_map":{"inner_key":1},"trace_id":"t"}`,
		`"promptTokenCount":3`, `"totalTokenCount":5`,
		`"functionCall":{"id":"c1","args":{"city_name":"Paris","opts":{"unit_type":"C"}},"name":"get_weather"}`,
		`"functionResponse":{"id":"c0","name":"prev","response":{"result_value":{"nested_key":1}}}`,
		`"inlineData":{"data":"aGk/Pz4+","mimeType":"text/plain"}`,
		`"thoughtSignature":"+/8="`,
		`"stateDelta":{"app:max_items":3,"obj":{"snake_key":true},"user_name":"Ann"}`,
		`"artifactDelta":{"my_file.txt":1}`, `"skipSummarization":true`, `"transferToAgent":"other_agent"`,
		`"endOfAgent":true`, `"agentState":{"step_no":1}`,
		`"requestedToolConfirmations":{"call_id_1":{"hint":"ok?","confirmed":false,"payload":{"some_key":1}}}`,
		`"requestedAuthConfigs":{"call_id_2":{"auth_scheme":"x"}}`, `"rewindBeforeInvocationId":"e-0"`,
		`"compaction":{"startTimestamp":1747130000,"endTimestamp":1747130001.25,"compactedContent":{"parts":[{"text":"sum"}],"role":"model"}}`,
		`"timestamp":1747130000.5`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %s\nin %s", want, got)
		}
	}
	if strings.Contains(got, "_count") || strings.Contains(got, "invocation_id") || strings.Contains(got, "mime_type") {
		t.Errorf("snake_case structural key survived: %s", got)
	}

	// The same event in camelCase decodes to the same thing.
	camel := decodeEncode(t, got)
	if camel != got {
		t.Errorf("re-decoding the canonical form changed it:\n got %s\nwant %s", camel, got)
	}
}

// TestE4Base64Variants: inline data accepts standard and URL-safe base64,
// padded or not (E4).
func TestE4Base64Variants(t *testing.T) {
	data := []byte{0xfb, 0xff, 0xfe, 0x3e, 0x3f} // uses + and / in standard base64
	for _, enc := range []string{"+//+Pj8=", "+//+Pj8", "-__-Pj8=", "-__-Pj8"} {
		for _, key := range []string{"inlineData", "inline_data"} {
			in := `{"content":{"parts":[{"` + key + `":{"mimeType":"application/octet-stream","data":"` + enc + `"}}]}}`
			var e event.Event
			if err := json.Unmarshal([]byte(in), &e); err != nil {
				t.Errorf("%s %q: %v", key, enc, err)
				continue
			}
			if got := e.Content.Parts[0].InlineData.Data; !bytes.Equal(got, data) {
				t.Errorf("%s %q decoded to %x, want %x", key, enc, got, data)
			}
		}
	}
	// Something that is base64 in no variant is an error, not garbage.
	var e event.Event
	if err := json.Unmarshal([]byte(`{"content":{"parts":[{"inlineData":{"data":"!!!"}}]}}`), &e); err == nil {
		t.Error("invalid base64 decoded without error")
	}
}

// TestE4UnknownKeys: unknown keys of an event and of its actions are kept
// and written back; null ones are dropped (E4).
func TestE4UnknownKeys(t *testing.T) {
	in := `{"id":"ev-1","author":"a","timestamp":1747130000,"futureField":{"x":1},"another_new_one":[1,2],
		"content":null,"actions":{"stateDelta":null,"artifactDelta":{},"newActionField":true},"branch":null}`
	got := decodeEncode(t, in)
	// Unknown keys are kept, as written, after the known ones; null ones
	// say nothing and are left out.
	const want = `{"author":"a","actions":{"stateDelta":{},"artifactDelta":{},"requestedAuthConfigs":{},"requestedToolConfirmations":{},"newActionField":true},"id":"ev-1","timestamp":1747130000,"another_new_one":[1,2],"futureField":{"x":1}}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// An RFC 3339 timestamp is accepted too.
	var e event.Event
	if err := json.Unmarshal([]byte(`{"timestamp":"2025-05-13T10:00:00.25Z"}`), &e); err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2025, 5, 13, 10, 0, 0, 250e6, time.UTC); !e.Timestamp.Equal(want) {
		t.Errorf("RFC 3339 timestamp = %v, want %v", e.Timestamp, want)
	}
	for _, bad := range []string{`[]`, `"x"`, `{"timestamp":"yesterday"}`, `{"content":{"parts":"no"}}`, `{`} {
		if err := json.Unmarshal([]byte(bad), &e); err == nil {
			t.Errorf("decoding %s succeeded, want an error", bad)
		}
	}
}

// TestE4ActionsUnmarshal: Actions decodes on its own with the same leniency.
func TestE4ActionsUnmarshal(t *testing.T) {
	var a event.Actions
	if err := json.Unmarshal([]byte(`{"state_delta":{"user_name":1},"transfer_to_agent":"x","unknown":1}`), &a); err != nil {
		t.Fatal(err)
	}
	if a.TransferToAgent != "x" || len(a.StateDelta) != 1 || a.StateDelta["user_name"] != 1.0 {
		t.Errorf("decoded actions = %+v", a)
	}
}

// FuzzDecode checks that decoding never panics and that whatever decodes
// re-encodes to a stable form (E4).
func FuzzDecode(f *testing.F) {
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range goldenEvents() {
			if !yield(n) {
				return
			}
		}
	})
	for _, n := range names {
		if b, err := os.ReadFile(goldenPath(n)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"invocation_id":"e","content":{"parts":[{"inline_data":{"data":"-_8"}}]},"actions":{"state_delta":{"a_b":null}}}`))
	f.Add([]byte(`{"timestamp":"2025-01-01T00:00:00Z","unknown":[1,{"x":null}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var e event.Event
		if err := json.Unmarshal(data, &e); err != nil {
			return
		}
		b1, err := json.Marshal(&e)
		if err != nil {
			// Some decodable values (such as huge timestamps) cannot be
			// encoded; that must be an error, never a panic.
			return
		}
		var e2 event.Event
		if err := json.Unmarshal(b1, &e2); err != nil {
			t.Fatalf("re-decoding %s: %v", b1, err)
		}
		b2, err := json.Marshal(&e2)
		if err != nil {
			t.Fatalf("re-encoding: %v", err)
		}
		if !bytes.Equal(b1, b2) {
			t.Fatalf("encoding not stable:\n%s\n%s", b1, b2)
		}
	})
}

// TestE4UnmarshalContent checks the content decoder used for run requests:
// canonical input, snake_case keys with URL-safe base64, and user data kept.
func TestE4UnmarshalContent(t *testing.T) {
	for _, in := range []string{
		`{"role":"user","parts":[{"text":"hi"},{"inlineData":{"mimeType":"image/png","data":"+/8="}},{"functionResponse":{"id":"c1","name":"f","response":{"snake_key":1}}}]}`,
		`{"role":"user","parts":[{"text":"hi"},{"inline_data":{"mime_type":"image/png","data":"-_8"}},{"function_response":{"id":"c1","name":"f","response":{"snake_key":1}}}]}`,
	} {
		c, err := event.UnmarshalContent([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if c.Parts[0].Text != "hi" || string(c.Parts[1].InlineData.Data) != "\xfb\xff" || c.Parts[1].InlineData.MIMEType != "image/png" ||
			c.Parts[2].FunctionResponse.Response["snake_key"] != 1.0 {
			t.Fatalf("%s decoded as %+v", in, c)
		}
	}
	if _, err := event.UnmarshalContent([]byte(`"not an object"`)); err == nil {
		t.Fatal("a string decoded as content")
	}
}

// TestE4MillisecondTimestamps decodes an event as ADK for JavaScript writes
// it, with its timestamp in epoch milliseconds (E4): a number that is
// beyond the year 5138 as seconds can only be milliseconds. Both decoders
// read it, and the event encodes back in float seconds.
func TestE4MillisecondTimestamps(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "interop", "adkjs_event.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := time.UnixMilli(1763856000123)
	var std event.Event
	if err := json.Unmarshal(b, &std); err != nil {
		t.Fatalf("json.Unmarshal: %v", err)
	}
	var fast event.Event
	if err := new(event.Decoder).Decode(b, &fast); err != nil {
		t.Fatalf("Decoder: %v", err)
	}
	for name, ev := range map[string]*event.Event{"json.Unmarshal": &std, "Decoder": &fast} {
		if !ev.Timestamp.Equal(want) {
			t.Errorf("%s: timestamp %v, want %v", name, ev.Timestamp.UTC(), want.UTC())
		}
		if ev.Author != "weather_agent" || ev.Text() != "It is sunny in Lisbon." || ev.Actions.StateDelta["last_city"] != "Lisbon" {
			t.Errorf("%s: decoded %+v", name, ev)
		}
		out, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), `"timestamp":1763856000.123`) {
			t.Errorf("%s: encoded %s, want float seconds 1763856000.123", name, out)
		}
	}
	for in, want := range map[string]time.Time{
		"1763856000123":     time.UnixMilli(1763856000123),
		"1763856000123.5":   time.UnixMicro(1763856000123500),
		"1.763856000123e12": time.UnixMilli(1763856000123),
		"100000000000":      time.UnixMilli(100000000000), // 1e11: milliseconds (1973)
		"99999999999":       time.Unix(99999999999, 0),    // below: still seconds (year 5138)
		"1763856000.123":    time.UnixMilli(1763856000123),
	} {
		var s event.Seconds
		if err := s.UnmarshalJSON([]byte(in)); err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if !time.Time(s).Equal(want) {
			t.Errorf("%s: %v, want %v", in, time.Time(s).UTC(), want.UTC())
		}
	}
	var s event.Seconds
	if err := s.UnmarshalJSON([]byte("253402300800000")); err == nil {
		t.Errorf("milliseconds beyond the year 9999 accepted: %v", time.Time(s))
	}
}
